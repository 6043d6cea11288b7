"""``farlink trace``: link traces in other tools' formats (docs/schedules.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from farlink import units
from farlink.cli.options import CliError, DurationOpt, ForceFlag, JsonFlag, SetOpt, emit, read

trace_app = typer.Typer(
    no_args_is_help=True, help="Link traces in other tools' formats (mahimahi's)."
)


@trace_app.command("export-mahimahi")
def export_mahimahi(
    scenario: Annotated[str, typer.Argument(help="A scenario TOML file or a preset name.")],
    link: Annotated[str, typer.Option(help="The link: its name or its index in links.")],
    out: Annotated[Path, typer.Option(help="The mahimahi trace file to write.")],
    direction: Annotated[str, typer.Option(help="fwd (a -> b) or rev.")] = "fwd",
    duration: Annotated[
        str | None,
        typer.Option(
            help="The span the trace covers (mahimahi repeats it). Default: a mahimahi trace "
            f"as read, else the scenario's duration. {DurationOpt}"
        ),
    ] = None,
    seed: Annotated[int | None, typer.Option(help="Master seed (a bundle's call drops).")] = None,
    set_: SetOpt = None,
    force: ForceFlag = False,
    as_json: JsonFlag = False,
) -> None:
    """Write a mahimahi trace (one line per 1504-byte delivery opportunity, its millisecond)
    of what a link direction carries: its own mahimahi trace, a fixed rate, a schedule's rate
    while up, or a bundle's capacity with its call drops and redials, as the simulator runs
    them. mm-link replays it: mm-link FILE FILE."""
    from farlink.outputs import OutputError, OutputFolder
    from farlink.scenario import ScenarioError, apply_overrides, describe_error, load_scenario
    from farlink.schedules import export_opportunities

    duration_s = None if duration is None else read("--duration", units.parse_duration_s, duration)
    sets = list(set_ or ())
    try:
        doc = apply_overrides(load_scenario(scenario), seed=seed, sets=sets)
        ms = export_opportunities(doc, link, direction, duration_s)
    except ScenarioError as err:
        raise CliError(describe_error(scenario, err, sets=sets)) from None
    if out.is_dir():
        raise OutputError(f"--out: {out} is a folder; name the trace file to write")
    text = "".join(f"{m}\n" for m in ms)
    path = OutputFolder(out.parent, force=force).write_text(out.name, text)
    emit(
        as_json,
        "mahimahi trace",
        {
            "file": str(path),
            "opportunities": len(ms),
            "period_ms": ms[-1],
            "mean_rate_bps": len(ms) * 1504 * 8 * 1000 / ms[-1],
        },
    )
