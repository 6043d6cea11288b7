"""``farlink send``: farlink's own TCP sender to a real listener, through a TUN device."""

from __future__ import annotations

from typing import Annotated

import typer

from farlink.cli.options import JsonFlag

EXIT_INTERRUPTED = 130
EXIT_FAILED = 1


def send_command(
    host: Annotated[str, typer.Argument(help="The listener's IPv4 address or name.")],
    port: Annotated[int, typer.Argument(help="The listener's TCP port.")],
    tcp: Annotated[
        str,
        typer.Option(
            help="CC or CC,RECOVERY: farlink's congestion controller (reno, vegas, hybla, "
            "westwood, cubic, cubic-linux, bic, stpd, bbr) and loss recovery (tahoe, reno, "
            "newreno, sack; default: the core's).",
        ),
    ] = "reno",
    size: Annotated[str, typer.Option(help="Bytes to send (e.g. 1MB, 100000B).")] = "1MB",
    netns: Annotated[
        str | None,
        typer.Option(
            help="Send from this namespace farlink made (farlink-...); default: the host's."
        ),
    ] = None,
    seed: Annotated[int | None, typer.Option(help="Seed of the payload's bytes.")] = None,
    set_: Annotated[
        list[str] | None,
        typer.Option("--set", help="Set a TCP field: tcp.FIELD=VALUE, e.g. tcp.min_rto=200ms."),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Send bytes to a listener with farlink's own TCP sender (Linux; needs CAP_NET_ADMIN and
    /dev/net/tun). Prints the transfer time, goodput, retransmissions, timeouts and the SHA-256
    of the bytes sent; docs/wire.md, "farlink send"."""
    from farlink import _core, units
    from farlink.cli.options import CliError, checked
    from farlink.reports.terminal import print_json, print_quantities
    from farlink.scenario import ScenarioError
    from farlink.send import SendError, send

    sets = [s.strip() for s in set_ or ()]
    checked("--size", units.parse_size_bytes, size)
    try:
        report = send(host, port, tcp=tcp, size=size, netns=netns, seed=seed, sets=sets)
    except SendError as err:
        raise CliError(str(err)) from None
    except ScenarioError as err:
        # The TCP table is flows[0].tcp of send's one-flow scenario: name the option instead.
        path, message = getattr(err, "path", None), getattr(err, "message", None)
        if not (path and message and path.startswith("flows[0].tcp")):
            raise CliError(str(err)) from None
        field = path.removeprefix("flows[0].")
        given = any(s.startswith(field) for s in sets)
        raise CliError(f"{f'--set {field}' if given else '--tcp'}: {message}") from None
    except _core.EmulatorError as err:
        if err.kind in ("usage", "unsupported"):
            raise CliError(str(err)) from None
        typer.echo(f"farlink: error: send: {err}", err=True)
        raise typer.Exit(EXIT_FAILED) from None
    if report["error"]:
        raise CliError(f"send: {report['error']}")
    if as_json:
        print_json(report)
    else:
        print_quantities(f"send to {report['host']}:{report['port']}", report)
    if report["interrupted"]:
        raise typer.Exit(EXIT_INTERRUPTED)
