"""The ``emulate`` engine from Python: ``farlink.emulate(scenario, **overrides) -> Result``.

Real kernel TCP between Linux network namespaces, through the scenario's link models in real
time (the Rust crate ``farlink-emu``, run with the GIL released). This module only prepares the
scenario document and wraps what comes back, in the shape of :func:`farlink.sim.simulate`'s
result: the same summary keys per flow and in the aggregate, plus ``emulator`` (departure-time
error of delivered packets, packets moved, the kernel settings applied), a ``tcp_info`` trace
(the senders' ``TCP_INFO`` sampled every 10 ms), a ``goodput`` trace (the bytes each receiving
application had read, at its reads: at most one row per 10 ms) and, over a bundle, a
``member_state`` trace (every member's state changes, the call drops among them), the last two
in ``simulate``'s columns.

Needs CAP_NET_ADMIN and ``/dev/net/tun``; raises ``_core.EmulatorError`` (``kind``: ``usage``,
``unsupported``, ``system``, ``internal``) when it cannot run.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from farlink import _core
from farlink.results.result import Result
from farlink.results.schema import emulate_document
from farlink.scenario import apply_overrides, load_scenario, to_core_json

__all__ = ["emulate", "headline"]

#: The column types of the traces the emulator shares with the simulator (docs/traces.md), so
#: that their files match whichever engine wrote them, empty ones too.
_TRACE_DTYPES = {
    "goodput": {"time_ns": np.uint64, "flow": np.uint32, "delivered_bytes": np.uint64},
    "member_state": {
        "time_ns": np.uint64,
        "link": np.uint32,
        "member": np.uint32,
        "state": np.uint8,
    },
}


def emulate(
    scenario: str | Path | dict[str, Any],
    *,
    tcp: str | None = None,
    sender: str | None = None,
    loss: float | None = None,
    duration: str | None = None,
    size: str | None = None,
    seed: int | None = None,
    sets: list[str] | tuple[str, ...] = (),
    profile: str | None = None,
    transport: str | None = None,
    spin_us: int = 10,
    record_deliveries: bool = False,
    realtime: bool = True,
    pcap_dir: str | Path | None = None,
    command: list[str] | tuple[str, ...] | None = None,
    server: str | None = None,
    listen: bool = True,
    offload: bool = False,
    command_stdout: str | Path | None = None,
) -> Result:
    """Run a scenario (a preset name, a TOML path or a parsed document) on the emulator.

    ``tcp`` names the congestion controller of every flow (default: each flow's own), or a loss
    recovery (``tahoe``, ``newreno``, ``sack``, ``rack``: farlink's sender with that recovery).
    ``sender``: ``"kernel"`` (kernel TCP in the sender's namespace, ``TCP_CONGESTION``) or
    ``"farlink"`` (farlink's own sender on the wire, docs/wire.md); default: the kernel's where
    the kernel has the controller, farlink's otherwise. ``profile``: every flow's TCP profile
    (``"linux"``: under it ``tcp`` names a Linux module, and farlink's sender runs its model, e.g.
    ``cubic-linux`` for ``cubic``, over Linux's recovery). The other overrides are
    ``simulate``'s.
    ``spin_us``: the driver wakes this long before each deadline and spins to it (0: timerfd
    alone). ``record_deliveries`` adds, per link direction, the loss-model ordinals of the
    packets lost (``lost_ordinals``). ``realtime``: run the driver's thread SCHED_FIFO while it
    runs, where permitted (``emulator.realtime`` says whether it did). ``pcap_dir``: write what
    crossed each end node's TUN device, both ways, as ``<pcap_dir>/<node>.pcap`` (LINKTYPE_RAW,
    nanosecond timestamps).

    ``transport``: every flow's transport, as ``simulate``'s: ``"mptcp"`` runs the kernel's
    Multipath TCP (``IPPROTO_MPTCP`` sockets) over one path per member of the flow's bundle,
    each member a link of its own (docs/multipath.md); its ``subflows`` say what each carried.

    ``command``: a program (argv) run in the first flow's sender namespace in place of the
    built-in bulk transfer, with ``FARLINK_PEER`` and ``FARLINK_PORT`` in its environment; the
    run ends when it exits (or at ``duration``, if given), and ``summary["command"]`` says how
    (``exit_status``, ``ended_by``), and its TCP connections are the first flow's figures
    (``summary["command"]["connections"]``). ``server``: a shell command run in the receiver
    namespace; the command starts once it listens on any TCP port, IPv4 or IPv6, and is given
    that port as ``FARLINK_PORT``; without it a sink there accepts, discards and counts (the
    flows' ``delivered_bytes``). ``listen=False`` starts no sink: every connection is
    refused. ``command_stdout``: where the command's and the server's standard output go:
    ``None`` (farlink's own), ``"stderr"``, or a file path (appended to); ``--json`` keeps
    standard output for the document.

    ``offload``: open the TUN devices with offloads (``IFF_VNET_HDR``, TSO): the kernel's TCP
    super-segments are read whole, cut into MSS-sized packets for the links, and what the links
    deliver together is written coalesced (docs/emulator.md); ``emulator.io_path`` says which
    path ran and ``emulator.offload`` counts the reads, writes and coalesced packets.
    """
    doc = scenario if isinstance(scenario, dict) else load_scenario(scenario)
    doc = apply_overrides(
        doc,
        loss=loss,
        duration=duration,
        size=size,
        seed=seed,
        sets=sets,
        profile=profile,
        transport=transport,
    )
    options = {
        "tcp": tcp,
        "sender": sender,
        "spin_us": spin_us,
        "record_deliveries": record_deliveries,
        "realtime": realtime,
        "pcap_dir": None if pcap_dir is None else str(pcap_dir),
        "command": None if command is None else [str(a) for a in command],
        "server": server,
        # A command runs until it exits unless a duration was asked for.
        "command_bounded": duration is not None,
        "listen": listen,
        "offload": offload,
        "command_stdout": _stdout_option(command_stdout),
    }
    # While it runs, the core handles Ctrl-C and SIGTERM itself (it ends the run, cleans up and
    # says `interrupted`), then gives the process its handlers back.
    started = time.perf_counter()
    raw = json.loads(_core.emulate(to_core_json(doc), json.dumps(options)))
    wall_time_s = time.perf_counter() - started
    columns = {trace: raw.pop(trace) for trace in ("tcp_info", "goodput", "member_state")}
    name = doc.get("name") or (Path(scenario).stem if isinstance(scenario, str | Path) else None)
    summary = emulate_document(raw, scenario=name, wall_time_s=wall_time_s)
    if not any("bundle" in link for link in summary["links"]):
        # No bundle, no member states: not recorded rather than empty.
        del columns["member_state"]
    traces = {
        trace: {
            column: np.asarray(values, dtype=_TRACE_DTYPES.get(trace, {}).get(column))
            for column, values in table.items()
        }
        for trace, table in columns.items()
    }
    return Result(
        summary=summary,
        traces=traces,
        scenario=doc,
        engine="emulate",
        names={
            "flows": [f["name"] for f in summary["flows"]],
            "links": [link["name"] for link in summary["links"]],
        },
    )


def headline(result: Result) -> dict[str, Any]:
    """The figures ``farlink emulate --json`` prints first: ``simulate``'s, then the emulator's.

    ``transfer_time_s`` is the time the last bulk transfer delivered its last byte, or None when
    any flow is unfinished (the result document's own field).
    """
    s = result.summary
    emu = s["emulator"]
    ran = {"command": s["command"]} if "command" in s else {}
    return {
        **ran,
        "goodput_bps": s["goodput_bps"],
        "normalized_goodput": s["normalized_goodput"],
        "delivered_bytes": s["delivered_bytes"],
        "transfer_time_s": s["transfer_time_s"],
        "retransmissions": s["retransmissions"],
        "timeouts": s["timeouts"],
        "drops": s["drops"],
        "sim_time_s": s["sim_time_s"],
        "interrupted": s["interrupted"],
        "emulator": {
            "departure_error_us": emu["departure_error_us"],
            "packets_read": emu["packets_read"],
            "packets_written": emu["packets_written"],
            "io_path": emu["io_path"],
            "cpu_fraction": emu["cpu_fraction"],
        },
    }


def _stdout_option(command_stdout: str | Path | None) -> str | dict[str, str]:
    """The emulator's ``command_stdout`` option for ``emulate(command_stdout=...)``."""
    if command_stdout is None:
        return "inherit"
    if command_stdout == "stderr":
        return "stderr"
    return {"file": str(command_stdout)}
