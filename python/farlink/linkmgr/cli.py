"""``farlink linkmgr``: the link manager's commands: the daemon (``run``), the simulated modems
(``modem-sim``), its event log's readers and the dashboard.

Each command reads the log through :mod:`farlink.linkmgr`; a file that is not an event log is
one ``farlink: error:`` line and exit status 2 (``farlink.cli.app.main``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from farlink.cli.options import ForceFlag
from farlink.linkmgr.run import DEFAULT_PRESET

PRESET_NAME = DEFAULT_PRESET

__all__ = ["linkmgr_app"]

EXIT_FAILED = 1
EXIT_INTERRUPTED = 130
MAX_MODEMS = 64

linkmgr_app = typer.Typer(
    no_args_is_help=True,
    help="Link management for multi-modem bundles: the daemon (seed 000 ch. 7), simulated "
    "Iridium modems to run it against, its event log and its web dashboard (docs/linkmgr.md).",
)

LogArg = Annotated[
    Path,
    typer.Argument(help="The daemon's event log (SQLite, docs/linkmgr.md).", show_default=False),
]


def _cli_error(message: str) -> Exception:
    from farlink.cli.options import CliError

    return CliError(message)


def _checked_log(log: Path):
    """Open the log once so that a bad file is refused before any output is written."""
    from farlink.linkmgr.eventlog import EventLog, EventLogError

    try:
        EventLog(log).close()
    except EventLogError as err:
        raise _cli_error(str(err)) from None


@linkmgr_app.command("log")
def log_command(
    log: LogArg,
    csv: Annotated[bool, typer.Option("--csv", help="Every event as a CSV row.")] = False,
    xml: Annotated[
        bool,
        typer.Option("--xml", help="The KUMICS connection database (seed 000 Figure 7.4)."),
    ] = False,
    out: Annotated[
        Path | None, typer.Option("--out", help="Write to this file instead of standard output.")
    ] = None,
    force: ForceFlag = False,
) -> None:
    """Export the event log as CSV or as the XML connection database of seed 000 Figure 7.4."""
    from farlink.linkmgr.eventlog import EventLogError
    from farlink.linkmgr.export import events_csv, xml_database
    from farlink.outputs import OutputFolder

    if csv == xml:
        raise _cli_error("--csv, --xml: give exactly one of them")
    _checked_log(log)
    if out is not None and out.exists() and out.resolve() == log.resolve():
        raise _cli_error(f"--out: {out} is the log itself; name another file")
    # Claimed before the export is built: a file farlink did not write is refused at once.
    folder = None if out is None else OutputFolder(out.parent, force=force)
    if folder is not None:
        folder.claim(out.name)
    try:
        data = events_csv(log).encode() if csv else xml_database(log)
    except EventLogError as err:
        raise _cli_error(str(err)) from None
    if folder is None:
        typer.echo(data.decode(), nl=False)
    else:
        folder.write_bytes(out.name, data)


@linkmgr_app.command("uptime")
def uptime_command(
    log: LogArg,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print one JSON object instead of a table.")
    ] = False,
) -> None:
    """Uptime with all members and with at least one member up (seed 001), per member too."""
    from farlink.linkmgr.eventlog import EventLogError
    from farlink.linkmgr.uptime import uptime_report
    from farlink.reports.terminal import print_json

    _checked_log(log)
    try:
        report = uptime_report(log)
    except EventLogError as err:
        raise _cli_error(str(err)) from None
    if as_json:
        print_json(report.to_dict())
        return
    _print_uptime(report)


def _print_uptime(report) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(highlight=False)
    console.print(f"uptime {report.log}")
    console.print(
        f"  log time {report.duration_s:.0f} s ({report.duration_s / 3600:.2f} h), "
        f"{report.events} events"
    )
    console.print(f"  all members up       {100 * report.all_up_fraction:6.2f} %")
    console.print(f"  at least one up      {100 * report.any_up_fraction:6.2f} %")
    console.print(
        f"  call drops {report.drops} (of the primary {report.primary_drops}), dials {report.dials}"
    )
    table = Table("modem", "uptime %", "drops", "dials", "connected", "state", box=None)
    for m in report.members:
        table.add_row(
            m.modem,
            f"{100 * m.uptime_fraction:.2f}",
            str(m.drops),
            str(m.dials),
            str(m.dials_connected),
            m.state,
        )
    console.print(table)


@linkmgr_app.command("dashboard")
def dashboard_command(
    log: LogArg,
    listen: Annotated[
        str,
        typer.Option(
            "--listen",
            help="ADDR:PORT to serve on (port 0: any free one). Off loopback, --token is needed.",
        ),
    ] = "127.0.0.1:8750",
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            help="Every request must carry it (Authorization: Bearer TOKEN or ?token=TOKEN).",
        ),
    ] = None,
) -> None:
    """Serve the web dashboard of a log: the page at /, live updates, /metrics for Prometheus.

    Prints the page's address once listening, then serves until Ctrl-C.
    """
    from farlink.linkmgr.dashboard import DashboardError, serve
    from farlink.linkmgr.eventlog import EventLogError

    _checked_log(log)
    try:
        serve(log, listen, token)
    except DashboardError as err:
        raise _cli_error(str(err)) from None
    except EventLogError as err:
        raise _cli_error(str(err)) from None


def _fail(err: Exception) -> None:
    """A configuration or option error is bad input (exit 2); anything else a failure (1)."""
    if getattr(err, "kind", None) == "config":
        raise _cli_error(str(err)) from None
    typer.echo(f"farlink: error: linkmgr: {err}", err=True)
    raise typer.Exit(EXIT_FAILED) from None


@linkmgr_app.command("run")
def run_command(
    config: Annotated[Path, typer.Argument(help="The daemon's configuration (TOML).")],
) -> None:
    """Run the daemon: dial (air) or answer (ground) every member, notice call drops, redial,
    block failing modems, log every event; until SIGTERM or Ctrl-C."""
    from farlink import _core
    from farlink.linkmgr.dashboard import DashboardError
    from farlink.linkmgr.run import run_daemon

    try:
        run_daemon(config)
    except _core.LinkMgrError as err:
        _fail(err)
    except DashboardError as err:
        raise _cli_error(f"{config}: {err}") from None


TargetArg = Annotated[
    Path,
    typer.Argument(
        help="The daemon's configuration (its `control` socket) or the control socket itself.",
        show_default=False,
    ),
]
ModemArg = Annotated[
    str,
    typer.Argument(
        help="A member's name, or its number in the log (0 for the first).", show_default=False
    ),
]


def _control(target: Path, request: str, modem: str) -> None:
    from farlink import _core

    try:
        typer.echo(_core.linkmgr_control(str(target), request, modem))
    except _core.LinkMgrError as err:
        raise _cli_error(f"linkmgr {request}: {err}") from None


@linkmgr_app.command("hold")
def hold_command(target: TargetArg, modem: ModemArg) -> None:
    """Tell a running daemon to hang a member up and keep it down (maintenance) until
    `release`; logged as `hold`."""
    _control(target, "hold", modem)


@linkmgr_app.command("release")
def release_command(target: TargetArg, modem: ModemArg) -> None:
    """Tell a running daemon to let a held member dial again; logged as `release`."""
    _control(target, "release", modem)


@linkmgr_app.command("modem-sim")
def modem_sim_command(
    modems: Annotated[int, typer.Option(help="Modem pairs (air and ground), 1 to 64.")] = 8,
    directory: Annotated[
        Path,
        typer.Option("--dir", help="Folder for the links DIR/air<k> and DIR/ground<k>."),
    ] = Path("farlink-modems"),
    time_scale: Annotated[
        float,
        typer.Option(help="Divide dial times and call durations by this (at least 1)."),
    ] = 1.0,
    seed: Annotated[int | None, typer.Option(help="Seed of the random streams.")] = None,
    preset: Annotated[
        str, typer.Option(help="Scenario (preset or file) whose bundle the modems follow.")
    ] = DEFAULT_PRESET,
    signal_reply: Annotated[
        float,
        typer.Option(help="Seconds a signal query (AT+CSQ) takes to answer (seed 000: 4)."),
    ] = 4.0,
    loss: Annotated[
        str | None,
        typer.Option(
            help="Frame error rate air to ground in [0, 1) (the preset's lossy link, as "
            "`simulate --loss`); default: the preset's."
        ),
    ] = None,
) -> None:
    """Simulated Iridium modems on pseudo-terminals: dials, call drops, delays, frame errors
    and ARQ repeats drawn as the simulator draws them; until SIGTERM or Ctrl-C. Prints each
    link's path when ready; counters in DIR/modem-sim.json."""
    from farlink import _core, units
    from farlink.cli.options import read
    from farlink.linkmgr.run import run_modem_sim
    from farlink.scenario import ScenarioError, describe_error

    frame_error_rate = None if loss is None else read("--loss", units.parse_error_rate, loss)
    if not 1 <= modems <= MAX_MODEMS:
        raise _cli_error(f"--modems: expected 1 to {MAX_MODEMS}, got {modems}")
    if seed is not None and not 0 <= seed < 2**64:
        raise _cli_error(f"--seed: expected a whole number from 0 to 2^64-1, got {seed}")
    try:
        run_modem_sim(
            modems,
            directory,
            time_scale=time_scale,
            seed=seed,
            preset=preset,
            signal_reply_s=signal_reply,
            loss=frame_error_rate,
        )
    except ScenarioError as err:
        raise _cli_error(describe_error(preset, err)) from None
    except _core.LinkMgrError as err:
        _fail(err)


@linkmgr_app.command("demo")
def demo_command(
    modems: Annotated[int, typer.Option(help="Simulated modem pairs, 1 to 64.")] = 8,
    size: Annotated[
        str, typer.Option(help="Bytes sent air to ground over TCP (100KB: about a minute).")
    ] = "100KB",
    time_scale: Annotated[
        float,
        typer.Option(
            help="Divide drop intervals, dial times and the daemons' timers by this (at least 1)."
        ),
    ] = 1.0,
    keep: Annotated[
        bool, typer.Option("--keep", help="Stay up after the transfer, until Ctrl-C.")
    ] = False,
    listen: Annotated[
        str,
        typer.Option(
            help="ADDR:PORT of the dashboard (port 0: any free one). Off loopback, --token."
        ),
    ] = "127.0.0.1:8750",
    token: Annotated[
        str | None, typer.Option(help="Every dashboard request must carry it.")
    ] = None,
    directory: Annotated[
        Path, typer.Option("--dir", help="Folder for the logs, configurations and modem links.")
    ] = Path("farlink-out") / "linkmgr-demo",
    as_json: Annotated[
        bool, typer.Option("--json", help="Print one JSON object at the end.")
    ] = False,
    force: ForceFlag = False,
) -> None:
    """Two namespaces, simulated modems, a daemon at each end and a TCP transfer across the
    bonded bundle, its time beside the simulator's and eq. 36's (docs/linkmgr.md). Needs root."""
    from farlink import units
    from farlink.linkmgr.dashboard import DashboardError
    from farlink.linkmgr.demo import DemoError, run_demo
    from farlink.reports.terminal import print_json

    if not 1 <= modems <= MAX_MODEMS:
        raise _cli_error(f"--modems: expected 1 to {MAX_MODEMS}, got {modems}")
    if not time_scale >= 1:
        raise _cli_error(f"--time-scale: expected at least 1, got {time_scale}")
    try:
        size_bytes = int(units.parse_size_bytes(size))
    except ValueError as err:
        raise _cli_error(f"--size: {err}") from None

    def say(line: str) -> None:
        typer.echo(line, err=as_json)

    try:
        result = run_demo(
            modems=modems,
            size_bytes=size_bytes,
            time_scale=time_scale,
            folder=directory.resolve(),
            keep=keep,
            force=force,
            listen=listen,
            token=token,
            say=say,
        )
    except DashboardError as err:
        raise _cli_error(str(err)) from None
    except DemoError as err:
        typer.echo(f"farlink: error: linkmgr demo: {err}", err=True)
        raise typer.Exit(EXIT_FAILED) from None
    except KeyboardInterrupt:
        typer.echo("farlink: linkmgr demo: interrupted; its namespaces are removed", err=True)
        raise typer.Exit(EXIT_INTERRUPTED) from None
    if as_json:
        print_json(result.to_dict())
        return
    _print_demo(result)


def _print_demo(r) -> None:
    typer.echo(
        f"{r.size_bytes} bytes over {r.modems} bonded simulated modems, time scale {r.time_scale:g}"
        f" (from the first dial; {r.drops} call drops; bytes verified: {r.verified})"
    )
    typer.echo(f"  demo (kernel TCP, the daemons)      {r.transfer_time_s:8.1f} s")
    seeds = len(r.sim.times_s)
    if r.sim_transfer_time_s is None:
        typer.echo(f"  simulate {PRESET_NAME:<26} unfinished in {seeds} seeds")
    else:
        typer.echo(
            f"  simulate {PRESET_NAME:<26} {r.sim_transfer_time_s:8.1f} s median of {seeds} seeds,"
            f" p10-p90 {r.sim.percentile_s(10):.1f}-{r.sim.percentile_s(90):.1f} s"
            f" (the demo: {r.against_sim})"
        )
    typer.echo(f"  eq. 36 (this bundle's inputs)       {r.model_transfer_time_s:8.1f} s")
    typer.echo(f"  event log {r.log}")
