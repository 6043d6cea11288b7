"""``farlink simulate``: a scenario on the packet-level engine, its figures and files."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from farlink import units
from farlink.cli.budget import (
    BudgetDiskOpt,
    BudgetEventsOpt,
    BudgetMemoryOpt,
    budget_options,
    stopped_early,
)
from farlink.cli.options import (
    DEFAULT_OUT,
    CliError,
    DurationOpt,
    ForceFlag,
    JsonFlag,
    LossOpt,
    ProfileOpt,
    ScenarioNameArg,
    SetOpt,
    SizeOpt,
    checked,
    emit,
    read,
    run_quantities,
)
from farlink.reports.terminal import print_json, print_quantities


def simulate_command(
    scenario: ScenarioNameArg,
    tcp: Annotated[
        str | None,
        typer.Option(
            help="Loss recovery (tahoe, reno, newreno, sack, rack) or a controller "
            "(vegas, hybla, westwood, cubic, cubic-linux, bic, bbr, stpd: these run over SACK "
            "recovery).",
        ),
    ] = None,
    loss: LossOpt = None,
    profile: ProfileOpt = None,
    duration: Annotated[str | None, typer.Option(help=f"Simulated time {DurationOpt}")] = None,
    size: Annotated[
        str | None, typer.Option(help=f"Make every flow a bulk transfer of this size. {SizeOpt}")
    ] = None,
    seed: Annotated[int | None, typer.Option(help="Master seed of the run.")] = None,
    transport: Annotated[
        str | None,
        typer.Option(
            help="Every flow's transport: tcp (one connection; a bundle stays multilink PPP) "
            "or mptcp (Multipath TCP: one subflow per member of the bundle on the route, each "
            "over that member alone; [flows.mptcp] scheduler and coupling, docs/multipath.md).",
        ),
    ] = None,
    set_: SetOpt = None,
    out: Annotated[
        Path | None, typer.Option(help="Folder for summary, traces and captures.")
    ] = None,
    pcap: Annotated[
        bool,
        typer.Option("--pcap", help="Write captures of the links the scenario taps (all if none)."),
    ] = False,
    budget_events: BudgetEventsOpt = None,
    budget_memory: BudgetMemoryOpt = None,
    budget_disk: BudgetDiskOpt = None,
    estimate_only: Annotated[
        bool,
        typer.Option("--estimate", help="Print what the run would cost and the budget; no run."),
    ] = False,
    interval: Annotated[
        str | None,
        typer.Option(
            help="Also print, per flow, the goodput and the congestion window of every interval "
            f"of this length (switches the goodput and cwnd traces on). {DurationOpt}"
        ),
    ] = None,
    force: ForceFlag = False,
    as_json: JsonFlag = False,
) -> None:
    """Simulate a scenario on the packet-level engine (Rust core).

    Writes into --out, by default farlink-out/sim/NAME (NAME: the scenario's name made safe for
    a file system). Prints the aggregate figures, then one line per flow: goodput,
    retransmissions, timeouts and what limited its sender most of the time (application,
    receive window, send buffer, congestion window or link) with its share of the time.

    The run is held to a budget (docs/scenarios.md, "Run budget"): one estimated over it is
    refused, one that outgrows it stops with what it has. Traces stream into the folder as the
    run records them, so memory stays bounded and the budget counts them as disk. On a terminal
    a progress line shows on stderr; Ctrl-C stops the run and keeps its partial result.
    """
    from farlink import _core
    from farlink.cli.budget import estimate_payload, refusal_options
    from farlink.outputs import OutputFolder, safe_name
    from farlink.results.traces import switched_on
    from farlink.scenario import (
        ScenarioError,
        apply_overrides,
        describe_error,
        load_scenario,
        resolve,
    )
    from farlink.sim import ProgressLine, estimate, interval_rows, simulate, write_run

    sets = list(set_ or ())
    if interval is not None:
        checked("--interval", units.parse_duration_s, interval)
        sets += [
            "trace.goodput=true",
            "trace.cwnd=true",
            f'trace.goodput_interval="{interval}"',
        ]

    line = ProgressLine(sys.stderr) if sys.stderr.isatty() else None
    try:
        doc = load_scenario(scenario)
        if pcap and not doc.get("pcap"):
            doc["pcap"] = [link["name"] for link in resolve(doc)["links"]]
        overrides = {
            "tcp": tcp,
            **run_quantities(loss, duration, size),
            "seed": seed,
            "sets": sets,
            "profile": profile,
            "transport": transport,
        }
        budget = budget_options(budget_events, budget_memory)
        budget["budget_disk_bytes"] = (
            None
            if budget_disk is None
            else int(read("--budget-disk", units.parse_size_bytes, budget_disk))
        )
        if estimate_only:
            cost = estimate(doc, **overrides, streamed=True, stream_pcap=pcap)
            emit(as_json, "simulate --estimate", estimate_payload(cost, *budget.values()))
            return
        doc = apply_overrides(doc, **overrides)
        name = str(doc.get("name") or Path(scenario).stem)
        target = out if out is not None else DEFAULT_OUT / "sim" / safe_name(name)
        in_memory = as_json and out is None
        if in_memory:
            # --json prints the document: without --out no trace is recorded or written, but
            # for those --interval reads, which stay in memory.
            doc["trace"] = (
                {}
                if interval is None
                else {"goodput": True, "cwnd": True, "goodput_interval": interval}
            )
        streamed = _trace_folder(target, force, [f"{t}.parquet" for t in switched_on(doc)])
        if target.exists():
            streamed()  # a file farlink may not replace is refused before the run
        result = simulate(
            doc,
            **budget,
            progress=line,
            trace_dir=None if in_memory and not pcap else streamed,
            stream_pcap=pcap,
        )
    except ScenarioError as err:
        raise CliError(describe_error(scenario, err, sets=sets)) from None
    except _core.BudgetError as err:
        raise CliError(f"{scenario}: {err} ({refusal_options(err)})") from None
    except _core.ConservationError as err:
        raise CliError(f"conservation check failed (please report this scenario): {err}") from None
    finally:
        if line is not None:
            line.close()
    folder = OutputFolder(target, force=force)
    written = write_run(result, folder, pcap=pcap, traces=not in_memory)
    partial = result.summary.get("partial")
    intervals = interval_rows(result) if interval is not None else None
    if as_json:
        # The result document itself: the same object summary.json holds (docs/results.md).
        extra = {} if intervals is None else {"intervals": intervals}
        print_json({**result.summary, **extra})
    else:
        _print_simulation(name, result, folder.path, partial, intervals, written)
    if partial is not None:
        stopped_early(partial)


def _trace_folder(target: Path, force: bool, names: list[str]) -> Callable[..., Path]:
    """The folder ``simulate`` streams its traces (and captures) into, made on the first call
    only (a run refused before it starts creates nothing), with the files the run writes there
    claimed: ``names``, the traces, and the names each call gives (captures), recorded in its
    manifest as they are about to be written, and ``summary.json``, written once it is over."""
    from farlink.outputs import OutputFolder

    made: list[OutputFolder] = []

    def folder(*more: str) -> Path:
        if not made:
            f = OutputFolder(target, force=force)
            f.claim("summary.json")
            f.record(f.claim(*names))
            made.append(f)
        if more:
            made[0].record(made[0].claim(*more))
        return made[0].path

    return folder


SLOWDOWN = ("slowdown p50", "p99")


def _brief(row: tuple) -> tuple:
    """A traffic row for the terminal: four significant digits, ``-`` for none."""
    return tuple("-" if v is None else f"{v:.4g}" if isinstance(v, float) else v for v in row)


def _print_simulation(
    name: str,
    result: Any,
    folder: Path,
    partial: str | None,
    intervals: list[dict[str, Any]] | None,
    written: list[Path],
) -> None:
    """The text output of ``simulate``: the headline figures, one row per flow, the intervals,
    the files written."""
    from farlink.reports.terminal import print_rows
    from farlink.sim import flow_rows, headline, traffic_rows

    payload = {**headline(result), "scenario": name, "out": str(folder)}
    if partial is not None:
        payload["partial"] = partial
    print_quantities(f"simulate {name} (seed {result.summary['seed']})", payload)
    print_rows(
        ["flow", "goodput_bps", "retransmits", "timeouts", "limited by", "share"],
        [
            (
                r["flow"],
                r["goodput_bps"],
                r["retransmissions"],
                r["timeouts"],
                r["limited_by"] or "-",
                "-" if r["limited_share"] is None else f"{r['limited_share']:.0%}",
            )
            for r in flow_rows(result)
        ],
    )
    udp, short, exchanges = traffic_rows(result)
    if udp:
        print_rows(
            ["UDP flow", "goodput_bps", "loss", "delay p50_s", "p99_s", "jitter p50_s", "p99_s"],
            [_brief(r) for r in udp],
        )
    if short:
        print_rows(
            ["short flows", "arrived", "finished", "FCT p50_s", "p90_s", "p99_s", *SLOWDOWN],
            [_brief(r) for r in short],
        )
    if exchanges:
        print_rows(
            ["request/response", "exchanges", "completed", "response p50_s", "p90_s", "p99_s"],
            [_brief(r) for r in exchanges],
        )
    if intervals is not None:
        print_rows(
            ["flow", "start_s", "end_s", "goodput_bps", "cwnd_bytes"],
            [tuple(r.values()) for r in intervals],
        )
    for path in written:
        typer.echo(f"wrote {path}")
