"""``farlink fit-drops``: the per-member call-drop rate of a modem bundle from its log."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from farlink.cli.options import CliError, JsonFlag, emit, evaluate


def fit_drops(
    log: Annotated[Path, typer.Argument(help="Call-drop log: CSV (modem,time) or KUMICS XML.")],
    confidence: Annotated[float, typer.Option(help="Confidence level of the interval.")] = 0.95,
    bins: Annotated[int, typer.Option(help="Chi-square bins (seed 000 uses 15).")] = 15,
    alpha: Annotated[float, typer.Option(help="Significance level of the test.")] = 0.05,
    as_json: JsonFlag = False,
) -> None:
    """Fit the per-member call-drop rate beta and test the exponential (seed 000 section 5.3)."""
    from farlink.calldrops.fit import fit_drop_log
    from farlink.calldrops.log import DropLogError, read_drop_log

    try:
        drops = read_drop_log(log)
    except DropLogError as err:
        raise CliError(f"LOG: {err}") from None
    fit = evaluate(
        "fit-drops",
        lambda: fit_drop_log(drops, confidence=confidence, bins=bins, alpha=alpha),
    )
    payload = {"log": str(log), "modems": list(drops.modems), **fit.to_dict()}
    if fit.beta_per_s > 0:
        payload["beta_one_per_min"] = 1 / (fit.beta_per_s * 60)
    emit(as_json, f"fit-drops {log}", payload)
