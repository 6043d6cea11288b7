"""``farlink compare``: one scenario through model, sim and emulate, side by side."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from farlink.cli.options import LossOpt, ProfileOpt, ScenarioNameArg, SetOpt

EXIT_FAILED = 1


def compare_command(
    scenario: ScenarioNameArg,
    tcp: Annotated[
        str | None,
        typer.Option(
            help="Congestion controller of every flow in sim and emulate (one the kernel has, "
            "e.g. reno, cubic, bbr); default: the scenario's.",
        ),
    ] = None,
    loss: LossOpt = None,
    profile: ProfileOpt = None,
    duration: Annotated[
        str | None,
        typer.Option(help="Simulated time, and the longest wall-clock time of the emulation."),
    ] = None,
    size: Annotated[
        str | None, typer.Option(help="Make every flow a bulk transfer of this size (e.g. 1MB).")
    ] = None,
    seed: Annotated[int | None, typer.Option(help="Master seed of the runs.")] = None,
    set_: SetOpt = None,
    out: Annotated[
        Path | None,
        typer.Option(help="Folder for the figure (compare.png) and each engine's summary.json."),
    ] = None,
    as_json: Annotated[
        bool,
        typer.Option("--json", help="Print one JSON object: a result document per engine."),
    ] = False,
) -> None:
    """Run a scenario on the model, the simulator and the emulator and print them side by side:
    goodput, normalized goodput, transfer time, retransmissions, timeouts and drops.

    The model is PFTK for a loss-based controller, seed 000 eq. 36 for a bulk transfer over a
    bundle with call drops, none for BBR, Vegas or ST-PD; it is said which and why. Without
    CAP_NET_ADMIN the emulate column is left out with a warning."""
    from farlink import _core
    from farlink.cli.options import DEFAULT_OUT, CliError, run_quantities, warn
    from farlink.compare import compare, figure, table_rows
    from farlink.reports.terminal import print_json, print_rows
    from farlink.results.schema import write_document
    from farlink.scenario import ScenarioError, describe_error, load_scenario

    try:
        doc = load_scenario(scenario)
        result = compare(
            doc,
            tcp=tcp,
            **run_quantities(loss, duration, size),
            seed=seed,
            sets=set_ or (),
            profile=profile,
        )
    except (ScenarioError, _core.ScenarioError) as err:
        raise CliError(describe_error(scenario, err, sets=set_ or ())) from None
    except ValueError as err:
        raise CliError(f"{scenario}: {err}") from None
    except _core.EmulatorError as err:
        if err.kind == "usage":
            raise CliError(str(err)) from None
        typer.echo(f"farlink: error: emulate: {err}", err=True)
        raise typer.Exit(EXIT_FAILED) from None
    if result.skipped is not None:
        warn(f"emulate left out: {result.skipped}")
    name = result.scenario
    folder = out if out is not None else DEFAULT_OUT / "compare" / name
    written = [figure(result, folder / "compare.png")]
    for engine, document in result.documents.items():
        if document is not None:
            written.append(write_document(document, folder / engine))
    if as_json:
        print_json({**result.documents, "skipped": result.skipped})
        return
    model = result.model
    typer.echo(f"compare {name} (seed {result.sim.summary['seed']})")
    typer.echo(f"model: {model['model'] or 'none'}: {model['why']}")
    print_rows(["", "model", "sim", "emulate"], table_rows(result))
    for path in written:
        typer.echo(f"wrote {path}")
