"""``farlink fit-drops``: the per-member call-drop rate of a modem bundle from its log."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from farlink.cli.options import CliError, JsonFlag, emit, evaluate


def fit_drops(
    log: Annotated[
        Path,
        typer.Argument(
            help="Call-drop log: CSV (modem,time), KUMICS XML, or the link manager's SQLite "
            "event log (recognised by its header)."
        ),
    ],
    confidence: Annotated[float, typer.Option(help="Confidence level of the interval.")] = 0.95,
    bins: Annotated[int, typer.Option(help="Chi-square bins (seed 000 uses 15).")] = 15,
    alpha: Annotated[float, typer.Option(help="Significance level of the test.")] = 0.05,
    as_json: JsonFlag = False,
) -> None:
    """Fit the per-member call-drop rate beta and test the exponential (seed 000 section 5.3)."""
    from farlink.calldrops.fit import fit_drop_log
    from farlink.calldrops.log import DropLogError, read_drop_log
    from farlink.linkmgr.eventlog import EventLogError, is_sqlite_file
    from farlink.linkmgr.uptime import drop_log_from_event_log

    try:
        if is_sqlite_file(log):
            drops = drop_log_from_event_log(log)
            if drops.drops == 0:
                raise CliError(
                    f"{log}: too short for a fit: {drops.exposure_s:.0f} s of member "
                    "up-time and no call drop; a rate needs at least one drop"
                )
        else:
            drops = read_drop_log(log)
    except (DropLogError, EventLogError) as err:
        raise CliError(str(err)) from None
    fit = evaluate(
        "fit-drops",
        lambda: fit_drop_log(drops, confidence=confidence, bins=bins, alpha=alpha),
    )
    payload = {"log": str(log), "modems": list(drops.modems), **fit.to_dict()}
    if fit.beta_per_s > 0:
        payload["beta_one_per_min"] = 1 / (fit.beta_per_s * 60)
    emit(as_json, f"fit-drops {log}", payload)
