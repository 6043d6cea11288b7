"""``farlink compare-bonding``: a bundle's members bonded by MLPPP and by Multipath TCP."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from farlink.cli.options import JsonFlag, ScenarioNameArg, SetOpt, SizeOpt

EXIT_FAILED = 1


def compare_bonding_command(
    scenario: ScenarioNameArg,
    size: Annotated[
        str | None, typer.Option(help=f"Make every flow a bulk transfer of this size. {SizeOpt}")
    ] = None,
    seeds: Annotated[
        int, typer.Option(help="Runs per bonding: the scenario's seed and the ones after it.")
    ] = 3,
    set_: SetOpt = None,
    out: Annotated[
        Path | None,
        typer.Option(
            help="Folder for the figure (bonding.png: bytes delivered over time, first seed, "
            "call drops marked) and the JSON document (bonding.json)."
        ),
    ] = None,
    emulate: Annotated[
        bool,
        typer.Option(
            "--emulate",
            help="Run both bondings on the emulator too, in real time (root, namespaces, the "
            "kernel's Multipath TCP): about the transfer time per seed and bonding.",
        ),
    ] = False,
    tcp: Annotated[
        str | None,
        typer.Option(
            help="The emulated runs' controller (every flow's); default the scenario's. "
            "Multipath TCP runs on the kernel's, which must have it (e.g. cubic).",
        ),
    ] = None,
    speedup: Annotated[
        float,
        typer.Option(
            help="Run the bundle this many times faster: members' rates multiplied, their "
            "delay and the bundle's timers divided, call drops as many times as frequent "
            "(docs/multipath.md); for emulations in a fraction of the real time.",
        ),
    ] = 1.0,
    as_json: JsonFlag = False,
) -> None:
    """Bond a bundle scenario's members two ways on the simulator and print them side by side:
    multilink PPP (the bundle, one TCP connection) and Multipath TCP (one subflow per member,
    docs/multipath.md): transfer time, goodput, call drops during the transfer and the longest
    time the application got nothing after each, averaged over the seeds, and which bonding
    is faster by how much. --emulate runs both on the emulator too (kernel TCP through the
    emulated bundle, the kernel's Multipath TCP over the members' links); without it the output
    says that side is not run (JSON: `mlppp` and `mptcp`, each with `sim` and `emulate`).
    Writes into --out, by default farlink-out/compare-bonding/NAME."""
    from farlink import _core
    from farlink.bonding import compare_bonding, figure, speed_up
    from farlink.cli.options import DEFAULT_OUT, CliError, checked
    from farlink.outputs import safe_name
    from farlink.reports.terminal import print_json, print_rows
    from farlink.scenario import ScenarioError, describe_error, load_scenario
    from farlink.units import parse_size_bytes

    if size is not None:
        checked("--size", parse_size_bytes, size)
    try:
        doc = load_scenario(scenario)
        if speedup != 1.0:
            doc = speed_up(doc, speedup)
        first_runs: dict[str, Any] = {}
        result = compare_bonding(
            doc,
            size=size,
            seeds=seeds,
            sets=list(set_ or ()),
            first_runs=first_runs,
            emulate=emulate,
            tcp=tcp,
        )
    except (ScenarioError, _core.ScenarioError) as err:
        raise CliError(describe_error(scenario, err, sets=set_ or ())) from None
    except ValueError as err:
        raise CliError(str(err)) from None
    except _core.EmulatorError as err:
        if err.kind in ("usage", "unsupported"):
            raise CliError(str(err)) from None
        typer.echo(f"farlink: error: compare-bonding --emulate: {err}", err=True)
        raise typer.Exit(EXIT_FAILED) from None
    name = result["scenario"] or Path(scenario).stem
    folder = out if out is not None else DEFAULT_OUT / "compare-bonding" / safe_name(name)
    title = f"{name}: MLPPP and Multipath TCP, seed {result['seeds'][0]}"
    written = [figure(first_runs, folder / "bonding.png", title)]
    document = folder / "bonding.json"
    document.write_text(json.dumps(result, indent=2, allow_nan=False) + "\n", encoding="utf-8")
    written.append(document)
    if as_json:
        print_json(result)
        return
    typer.echo(
        f"compare-bonding {result['scenario'] or scenario} "
        f"(seeds {', '.join(map(str, result['seeds']))}; "
        f"{'simulator and emulator' if emulate else 'simulator'})"
    )
    columns = ["", "mlppp sim", "mptcp sim"]
    if emulate:
        columns += ["mlppp emulate", "mptcp emulate"]
    print_rows(columns, _rows(result))
    for label, key in (("faster", "faster"), ("faster on the emulator", "faster_emulate")):
        if key == "faster_emulate" and not emulate:
            continue
        faster = result[key]
        if faster is None:
            typer.echo(f"{label}: not every run finished; see the runs (--json)")
        else:
            typer.echo(
                f"{label}: {faster['bonding']}, by {faster['by_s']:.1f} s "
                f"({100 * faster['by_fraction']:.1f} % of the slower's transfer time)"
            )
    typer.echo(f"emulate: {result['emulate']}")
    for path in written:
        typer.echo(f"wrote {path}")


def _rows(result: dict[str, Any]) -> list[tuple]:
    means = [result[b]["sim"]["mean"] for b in ("mlppp", "mptcp")]
    means += [result[b]["emulate"]["mean"] for b in ("mlppp", "mptcp") if result[b]["emulate"]]
    keys = [
        ("transfer time (s, mean)", "transfer_time_s"),
        ("goodput (bit/s, mean)", "goodput_bps"),
        ("normalized goodput", "normalized_goodput"),
        ("call drops per run", "call_drops"),
        ("stall after a drop (s, mean)", "stall_after_drop_s"),
        ("runs finished", "finished"),
    ]
    return [(label, *(m[key] for m in means)) for label, key in keys]
