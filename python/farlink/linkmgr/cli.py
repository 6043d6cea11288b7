"""``farlink linkmgr``: the link manager's commands (its event log's readers and the dashboard).

Each command reads the log through :mod:`farlink.linkmgr`; a file that is not an event log is
one ``farlink: error:`` line and exit status 2 (``farlink.cli.app.main``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

__all__ = ["linkmgr_app"]

linkmgr_app = typer.Typer(
    no_args_is_help=True,
    help="Link management for multi-modem bundles: its event log and its web dashboard.",
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
) -> None:
    """Export the event log as CSV or as the XML connection database of seed 000 Figure 7.4."""
    from farlink.linkmgr.eventlog import EventLogError
    from farlink.linkmgr.export import events_csv, xml_database
    from farlink.outputs import write_bytes

    if csv == xml:
        raise _cli_error("--csv, --xml: give exactly one of them")
    _checked_log(log)
    if out is not None and out.exists() and out.resolve() == log.resolve():
        raise _cli_error(f"--out: {out} is the log itself; name another file")
    try:
        data = events_csv(log).encode() if csv else xml_database(log)
    except EventLogError as err:
        raise _cli_error(str(err)) from None
    if out is None:
        typer.echo(data.decode(), nl=False)
    else:
        write_bytes(out, data)


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
