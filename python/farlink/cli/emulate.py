"""``farlink emulate``: a scenario through the emulator, with real kernel TCP or farlink's own
sender on the wire."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

EXIT_INTERRUPTED = 130
EXIT_FAILED = 1


def emulate_command(
    scenario: Annotated[str, typer.Argument(help="A scenario TOML file or a preset name.")],
    command: Annotated[
        list[str] | None,
        typer.Argument(
            help="After `--`: a command run in the sender's namespace in place of the built-in "
            "transfer, with FARLINK_PEER and FARLINK_PORT set; the run ends when it exits and "
            "its exit status is farlink's.",
            show_default=False,
        ),
    ] = None,
    tcp: Annotated[
        str | None,
        typer.Option(
            help="Congestion controller of every flow (farlink's: reno, vegas, hybla, westwood, "
            "cubic, cubic-linux (the kernel's cubic), bic, stpd, bbr; or one of this kernel's), "
            "or a loss recovery (tahoe, "
            "newreno, sack, rack: farlink's sender with it); default: the scenario's.",
        ),
    ] = None,
    sender: Annotated[
        str | None,
        typer.Option(
            help="Whose TCP sends: kernel or farlink (farlink's own sender on the wire); "
            "default: the kernel's where it has the controller, farlink's otherwise.",
        ),
    ] = None,
    loss: Annotated[
        str | None,
        typer.Option(
            help="Packet error rate of the scenario's lossy link, data direction, in [0, 1)."
        ),
    ] = None,
    profile: Annotated[
        str | None,
        typer.Option(
            help="TCP profile of every flow: rfc or linux (Linux's defaults; with --sender "
            "farlink, --tcp cubic runs cubic-linux over RACK-TLP); docs/scenarios.md.",
        ),
    ] = None,
    duration: Annotated[
        str | None, typer.Option(help="Longest wall-clock time of the run (e.g. 30s, 2min).")
    ] = None,
    size: Annotated[
        str | None, typer.Option(help="Make every flow a bulk transfer of this size (e.g. 1MB).")
    ] = None,
    seed: Annotated[int | None, typer.Option(help="Master seed of the run.")] = None,
    transport: Annotated[
        str | None,
        typer.Option(
            help="Every flow's transport: tcp (one kernel TCP connection; a bundle stays "
            "multilink PPP) or mptcp (the kernel's Multipath TCP: one address and path per "
            "member of the bundle on the route, each member a link of its own; "
            "docs/multipath.md).",
        ),
    ] = None,
    set_: Annotated[
        list[str] | None,
        typer.Option("--set", help="Set a scenario field: path=value, e.g. links[1].queue_pkts=4."),
    ] = None,
    out: Annotated[
        Path | None, typer.Option(help="Folder for summary, traces and captures.")
    ] = None,
    pcap: Annotated[
        bool,
        typer.Option("--pcap", help="Capture each end node's TUN device as <out>/<node>.pcap."),
    ] = False,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Write into a folder farlink did not make, replacing its files "
            "(docs/security.md).",
        ),
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print one JSON object instead of a table.")
    ] = False,
    server: Annotated[
        str | None,
        typer.Option(
            help="A shell command run in the receiver's namespace (e.g. 'iperf3 -s', "
            "'python3 -m http.server 8000'); the command is told the port it listened on, IPv4 "
            "or IPv6, as $FARLINK_PORT; default: a sink that counts.",
        ),
    ] = None,
    shell: Annotated[
        bool,
        typer.Option(
            "--shell", help="Run an interactive shell ($SHELL) in the sender's namespace."
        ),
    ] = False,
    offload: Annotated[
        bool,
        typer.Option(
            "--offload",
            help="Open the TUN devices with offloads (IFF_VNET_HDR, TSO): super-segments are cut "
            "into MSS-sized packets for the links and delivered packets written coalesced; "
            "for paths past the per-packet ceiling (docs/emulator.md).",
        ),
    ] = False,
) -> None:
    """Emulate a scenario: real kernel TCP between network namespaces, through the scenario's
    link models in real time (Linux; needs CAP_NET_ADMIN and /dev/net/tun)."""
    from farlink import _core, units
    from farlink.cli.options import DEFAULT_OUT, CliError, checked, read
    from farlink.emulate import emulate, headline
    from farlink.outputs import OutputFolder, safe_name
    from farlink.reports.terminal import print_json, print_quantities
    from farlink.scenario import ScenarioError, describe_error, load_scenario

    argv = _workload(command, shell, server)
    try:
        doc = load_scenario(scenario)
        name = str(doc.get("name") or Path(scenario).stem)
        # The emulator names its captures after the nodes: refuse a folder farlink did not make.
        folder = OutputFolder(
            out if out is not None else DEFAULT_OUT / "emulate" / safe_name(name), force=force
        )
        folder.claim_folder()
        before = folder.listing()
        result = emulate(
            doc,
            tcp=tcp,
            sender=sender,
            loss=None if loss is None else read("--loss", units.parse_error_rate, loss),
            duration=None
            if duration is None
            else checked("--duration", units.parse_duration_s, duration),
            size=None if size is None else checked("--size", units.parse_size_bytes, size),
            seed=seed,
            sets=set_ or (),
            profile=profile,
            transport=transport,
            pcap_dir=folder.path if pcap else None,
            command=argv,
            server=server,
            offload=offload,
            command_stdout=_program_stdout(argv, as_json, out, folder.path),
        )
    except ScenarioError as err:
        raise CliError(describe_error(scenario, err, sets=set_ or ())) from None
    except _core.EmulatorError as err:
        if err.kind in ("usage", "unsupported"):
            raise CliError(str(err)) from None
        typer.echo(f"farlink: error: emulate: {err}", err=True)
        raise typer.Exit(EXIT_FAILED) from None
    result.to_parquet(folder.path)
    written = folder.record_written(before)
    if as_json:
        # The result document itself, as summary.json holds it (docs/results.md).
        print_json(result.summary)
    else:
        payload = {**headline(result), "scenario": name, "out": str(folder.path)}
        print_quantities(f"emulate {name} (seed {result.summary['seed']})", payload)
        for path in written:
            typer.echo(f"wrote {path}")
    if result.summary["interrupted"]:
        raise typer.Exit(_interrupted_status())
    ran = result.summary.get("command")
    if ran is not None and ran["exit_status"] != 0:
        raise typer.Exit(ran["exit_status"])


def _program_stdout(
    argv: list[str] | None, as_json: bool, out: Path | None, folder: Path
) -> str | Path | None:
    """Where a program's standard output goes: with ``--json`` not on farlink's, which carries
    only the document: into ``--out`` when given, else to standard error."""
    if argv is None or not as_json:
        return None
    return folder / "command-stdout.txt" if out is not None else "stderr"


def _workload(command: list[str] | None, shell: bool, server: str | None) -> list[str] | None:
    """The program the run is for: ``-- COMMAND``, the user's shell, or none (bulk)."""
    from farlink.cli.options import CliError

    if shell and command:
        raise CliError("--shell: give either --shell or a command after --, not both")
    if server is not None and not (shell or command):
        raise CliError("--server: it serves a command; give one after -- (or --shell)")
    if shell:
        return [os.environ.get("SHELL") or "/bin/sh"]
    return list(command) if command else None


def _interrupted_status() -> int:
    """The shell's status for a process a signal ended, 128 plus it: 143 for SIGTERM (a
    service manager's stop), 130 for Ctrl-C."""
    from farlink import _core

    sig = _core.emulate_interrupt_signal()
    return EXIT_INTERRUPTED if sig is None else 128 + sig
