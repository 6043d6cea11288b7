"""Issue 32's "85 % of the members' summed capacity" with a sender that keeps its connection
open until everything is acknowledged (docs/multipath.md, "When the sender shuts down").

The kernel's path manager opens a subflow only while the application may still write, and
resets a join that completes after the shutdown; the emulator's built-in sender shuts down as
soon as its last byte is written unless the flow says ``app.shutdown = "acknowledged"``
(``scenario/shutdown.rs``). This runs the validation's flow without call drops
(bench/validate_mptcp.py: ``flow_sets()``, ``NO_DROPS``, iridium-4 sped up 20 times, 1 MB
or ``--size``, the kernel's CUBIC) with that shutdown, for each send buffer given (``autotuned``: no
``send_buffer`` key), seeds 1 to 3, on the emulator (the kernel's Multipath TCP) and on
farlink's simulator (which opens every subflow at the start, whatever the shutdown), and
prints per run: the kernel's goodput as a share of the members' summed rate, its transfer
time, per member the subflows that carried data and the payload its path carried (copies and
retransmissions included), the payload sent per byte delivered, and the simulator's share.

``--phases`` adds a table that splits each run, the kernel's and the simulator's, into its
start, its steady state with every subflow and its end (:func:`phases`: where the share of
the summed rate is lost against the members' ceiling), read from the kernel's run's captures
at its end nodes and the application's reads, and from the simulator's per-subflow traces.

Each emulated run is kept in ``--out`` (the flow's summary as JSON, the application's reads,
the end nodes' captures; one whose JSON exists is not run again; ``--fresh`` runs everything),
so an interrupted run resumes.

Run (root, namespaces, the kernel's Multipath TCP; about a minute per emulated megabyte):
``python bench/mptcp_shutdown.py [--buffers 1MB autotuned] [--seeds 3] [--shutdown acknowledged]
[--size 1MB] [--phases]``
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import validate_mptcp

ROOT = Path(__file__).resolve().parents[1]
SIZE = "1MB"
#: What issue 32 asks of the kernel over four equal members without call drops.
TARGET_SHARE = 0.85
#: A full-sized packet on a member's line (the emulator's MTU; the simulator's 1448-byte
#: segments with their 52 bytes of headers).
PACKET_BYTES = 1500


def sets_for(buffer: str, shutdown: str) -> list[str]:
    """The validation's flow without call drops, its send buffer ``buffer`` (``autotuned``:
    the kernel's own) and the application's ``shutdown``."""
    base = [a for a in validate_mptcp.flow_sets() if "send_buffer" not in a]
    own = [] if buffer == "autotuned" else [f'flows[0].tcp.send_buffer="{buffer}"']
    return [*base, *own, validate_mptcp.NO_DROPS, f'flows[0].app.shutdown="{shutdown}"']


def scenario() -> dict[str, Any]:
    from farlink.bonding import speed_up
    from farlink.scenario import load_scenario

    return speed_up(load_scenario("iridium-4"), validate_mptcp.SPEEDUP)


def run_stem(buffer: str, shutdown: str, size: str, seed: int) -> str:
    """The name a run is kept under in ``--out`` (1 MB runs keep the name they had before
    ``--size``)."""
    sized = "" if size == SIZE else f"-{size}"
    return f"{shutdown}-{buffer}{sized}-seed{seed}"


def emulated(
    buffer: str, shutdown: str, size: str, seed: int, out: Path, fresh: bool
) -> dict[str, Any]:
    """The kernel's run (kept in ``out``): the flow's summary. Beside it the run keeps what
    the phases are read from (:func:`kept_timeline`): the receiving application's reads
    (``STEM.goodput.json``, with the emulator's timing figures) and what crossed each end
    node's TUN device (``STEM-pcap/NODE.pcap``)."""
    from farlink.emulate import emulate

    stem = run_stem(buffer, shutdown, size, seed)
    path = out / f"{stem}.json"
    if path.exists() and not fresh:
        return json.loads(path.read_text(encoding="utf-8"))
    print(f"emulating: {size}, send buffer {buffer}, shutdown {shutdown}, seed {seed}", flush=True)
    pcap_dir = out / f"{stem}-pcap"
    pcap_dir.mkdir(parents=True, exist_ok=True)
    result = emulate(
        scenario(),
        size=size,
        seed=seed,
        sets=sets_for(buffer, shutdown),
        transport="mptcp",
        tcp="cubic",
        pcap_dir=pcap_dir,
    )
    flow = result.summary["flows"][0]
    goodput = result.trace("goodput")
    reads = {
        "time_ns": goodput["time_ns"].tolist(),
        "delivered_bytes": goodput["delivered_bytes"].tolist(),
        "emulator": result.summary["emulator"],
    }
    (out / f"{stem}.goodput.json").write_text(
        json.dumps(reads, allow_nan=False) + "\n", encoding="utf-8"
    )
    path.write_text(json.dumps(flow, indent=2, allow_nan=False) + "\n", encoding="utf-8")
    return flow


def simulated_run(buffer: str, shutdown: str, size: str, seed: int) -> Any:
    """farlink's simulator on the same scenario and seed, with its traces (per subflow: the
    segments sent and the ACKs taken in; the application's reads every 10 ms)."""
    from farlink.sim import simulate

    traces = ["trace.seq=true", "trace.ack=true", 'trace.goodput_interval="10ms"']
    return simulate(
        scenario(),
        size=size,
        seed=seed,
        sets=[*sets_for(buffer, shutdown), *traces],
        transport="mptcp",
    )


@dataclass
class Timeline:
    """One run's course, in seconds from the run's start: the receiving application's reads
    (``read_s``, ``read_bytes``: bytes read in all by then) and, per member (index), the
    payload the sender saw acknowledged on its subflows (``acked``: instants and bytes in all,
    at each ACK that moved it), the instant the member's first subflow began (the kernel: its
    SYN; the simulator opens every subflow at the start), and the payload bytes a full data
    segment carried."""

    read_s: np.ndarray
    read_bytes: np.ndarray
    acked: dict[int, tuple[np.ndarray, np.ndarray]]
    opened_s: dict[int, float]
    payload_bytes: int
    transfer_s: float
    #: The connection-level copies (:func:`connection_copies`): instants and bytes; None where
    #: the engine does not show them (the simulator: its ``reinjected_bytes`` only).
    copies: tuple[np.ndarray, np.ndarray] | None = None
    #: The emulator's departure-time error of the packets it wrote (``p50``, ``p99``, ``max``
    #: in µs): how late against the link models' instants; None for the simulator.
    departure_error_us: dict[str, float] | None = None
    #: How long the connection-level receive window held the sender back
    #: (:func:`window_limited_s`); None for the simulator.
    window_limited_s: float | None = None
    #: Per member: when its last data segment left the sender, and (the kernel's captures)
    #: when the last reached the receiver's device.
    last_sent_s: dict[int, float] | None = None
    last_arrived_s: dict[int, float] | None = None


def delivered_at(t: Timeline, at_s: float) -> float:
    """Bytes the application had read by ``at_s``."""
    i = int(np.searchsorted(t.read_s, at_s, side="right"))
    return float(t.read_bytes[i - 1]) if i > 0 else 0.0


def kept_timeline(out: Path, stem: str, flow: dict[str, Any]) -> Timeline | None:
    """The kernel's run ``stem`` from what :func:`emulated` kept (None: kept before the run
    kept its captures; ``--fresh`` runs it again). The captures' clock is the driver's from
    the run's start plus an unknown fraction of a second (the pcap writer's epoch); it is
    taken out by the first data segment written to the receiver's device, which the
    application's first read follows within a read's wakeup."""
    from farlink.captures.read import read_capture

    reads_path = out / f"{stem}.goodput.json"
    pcap_dir = out / f"{stem}-pcap"
    doc = scenario()
    sender, receiver = doc["flows"][0]["from"], doc["flows"][0]["to"]
    if not reads_path.exists() or not (pcap_dir / f"{sender}.pcap").exists():
        return None
    reads = json.loads(reads_path.read_text(encoding="utf-8"))
    read_s = np.asarray(reads["time_ns"], dtype=float) / 1e9
    read_bytes = np.asarray(reads["delivered_bytes"], dtype=float)
    arrivals = [p for p in read_capture(pcap_dir / f"{receiver}.pcap").packets if p.payload > 0]
    offset_s = arrivals[0].time_s - read_s[read_bytes > 0][0]
    isn: dict[tuple[str, int], int] = {}
    opened_s: dict[int, float] = {}
    # Per subflow (the sender's address and port): payload acknowledged, from its ISN + 1.
    done: dict[tuple[str, int], int] = {}
    # Per subflow: the end of the payload it sent, so that the ACK of its FIN (one sequence
    # number past its last byte) is not taken for payload.
    sent_end: dict[tuple[str, int], int] = {}
    acked_rows: dict[int, list[tuple[float, int]]] = {}
    sent = read_capture(pcap_dir / f"{sender}.pcap")
    copies = connection_copies(pcap_dir / f"{sender}.pcap")
    for p in sent.packets:
        at_s = p.time_s - offset_s
        subflow = (p.dst, p.dport)
        if p.syn and not p.has_ack:
            isn[(p.src, p.sport)] = p.seq
            opened_s.setdefault(member_of(p.src), at_s)
        elif (p.src, p.sport) in isn and p.payload > 0:
            end = (p.seq - isn[(p.src, p.sport)] - 1 + p.payload) % 2**32
            sent_end[(p.src, p.sport)] = max(sent_end.get((p.src, p.sport), 0), end)
        elif subflow in isn and p.has_ack and not p.syn:
            acked = min((p.ack - isn[subflow] - 1) % 2**32, sent_end.get(subflow, 0))
            if acked > done.get(subflow, 0):
                done[subflow] = acked
                k = member_of(p.dst)
                total = sum(b for (a, _), b in done.items() if member_of(a) == k)
                acked_rows.setdefault(k, []).append((at_s, total))
    payloads = np.asarray([p.payload for p in arrivals])
    last_sent_s = {
        member_of(p.src): p.time_s - offset_s
        for p in sent.packets
        if p.payload > 0 and (p.src, p.sport) in isn
    }
    last_arrived_s = {member_of(p.src): p.time_s - offset_s for p in arrivals}
    return Timeline(
        read_s=read_s,
        read_bytes=read_bytes,
        acked={
            k: (np.asarray([r[0] for r in v]), np.asarray([r[1] for r in v], dtype=float))
            for k, v in sorted(acked_rows.items())
        },
        opened_s=opened_s,
        payload_bytes=int(np.bincount(payloads).argmax()),
        transfer_s=flow["transfer_time_s"],
        copies=(
            np.asarray([c[0] - sent.epoch_s - offset_s for c in copies]),
            np.asarray([c[2] for c in copies], dtype=float),
        ),
        departure_error_us=reads["emulator"]["departure_error_us"],
        window_limited_s=window_limited_s(pcap_dir / f"{sender}.pcap", int(np.max(payloads))),
        last_sent_s=dict(sorted(last_sent_s.items())),
        last_arrived_s=dict(sorted(last_arrived_s.items())),
    )


def data_mapping(options: bytes) -> tuple[int, int] | None:
    """A data segment's Multipath TCP mapping (RFC 8684 sec. 3.3, the DSS option: kind 30,
    subtype 2): its data sequence number and the subflow sequence number (relative to the
    subflow's ISN) it maps; None without one (the first data, sent under MP_CAPABLE)."""
    import dpkt

    for kind, data in dpkt.tcp.parse_opts(options):
        if kind != 30 or not data or data[0] >> 4 != 2:
            continue
        flags, at = data[1], 2
        if flags & 0x01:  # a data ACK: 8 bytes or 4
            at += 8 if flags & 0x02 else 4
        if not flags & 0x04:  # no mapping
            return None
        width = 8 if flags & 0x08 else 4
        dsn = int.from_bytes(data[at : at + width], "big")
        ssn = int.from_bytes(data[at + width : at + width + 4], "big")
        return dsn, ssn
    return None


def tcp_segments(capture: Path) -> Iterator[tuple[float, Any, Any]]:
    """Each TCP segment of ``capture`` (a pcap file of IPv4 packets): its capture time, its IP
    packet and its TCP segment, as dpkt parses them."""
    import dpkt

    with open(capture, "rb") as f:
        for ts, buf in dpkt.pcap.Reader(f):
            ip = dpkt.ip.IP(buf)
            if ip.p == dpkt.ip.IP_PROTO_TCP:
                yield float(ts), ip, ip.data


def connection_copies(capture: Path) -> list[tuple[float, int, int]]:
    """The connection-level copies the sender put on its subflows (``capture``: its node's):
    per data segment that carried data of the connection already sent on some subflow, its
    capture time, member and the bytes copied. A subflow's own retransmission (the same
    subflow sequence again) is not a copy: it is the member's ``retransmissions``."""
    import dpkt

    isn: dict[tuple[bytes, int], int] = {}
    sent: set[tuple[bytes, int, int]] = set()
    covered: list[tuple[int, int]] = []
    copies = []
    for ts, ip, tcp in tcp_segments(capture):
        subflow = (ip.src, tcp.sport)
        if tcp.flags & dpkt.tcp.TH_SYN and not tcp.flags & dpkt.tcp.TH_ACK:
            isn[subflow] = tcp.seq
        if subflow not in isn or not tcp.data:
            continue
        relative = (tcp.seq - isn[subflow]) % 2**32
        mapping = data_mapping(tcp.opts)
        again = (*subflow, relative) in sent
        sent.add((*subflow, relative))
        if mapping is None or again:
            continue
        start = mapping[0] + (relative - mapping[1])
        copied = add_covered(covered, start, start + len(tcp.data))
        if copied:
            copies.append((ts, ip.src[1], copied))
    return copies


def data_ack(options: bytes) -> tuple[int, int] | None:
    """A segment's Multipath TCP data ACK (the DSS option's): its value and width in bytes
    (8, or 4 for the low half); None without one."""
    import dpkt

    for kind, data in dpkt.tcp.parse_opts(options):
        if kind == 30 and data and data[0] >> 4 == 2 and data[1] & 0x01:
            width = 8 if data[1] & 0x02 else 4
            return int.from_bytes(data[2 : 2 + width], "big"), width
    return None


def note_handshake(
    ip: Any, tcp: Any, isn: dict[tuple[bytes, int], int], shift: dict[tuple[bytes, int], int]
) -> None:
    """A subflow's SYN (its ISN, by the sender's address and port) or SYN-ACK (the receiver's
    window scale, by the same key)."""
    import dpkt

    if not tcp.flags & dpkt.tcp.TH_ACK:
        isn[(ip.src, tcp.sport)] = tcp.seq
        return
    for kind, data in dpkt.tcp.parse_opts(tcp.opts):
        if kind == dpkt.tcp.TCP_OPT_WSCALE:
            shift[(ip.dst, tcp.dport)] = data[0]


def window_limited_s(capture: Path, mss_bytes: int) -> float:
    """How long the sender (``capture``: its node's) had filled the connection-level receive
    window: the last data ACK plus the window the receiver advertised with it (RFC 8684 sec.
    3.3.5: one window for the connection, relative to the data ACK, on any subflow) less than
    ``mss_bytes`` beyond the highest data sequence number sent."""
    import dpkt

    isn: dict[tuple[bytes, int], int] = {}
    shift: dict[tuple[bytes, int], int] = {}  # the receiver's window scale, per subflow
    highest = acked = None
    limited_s, since = 0.0, None
    for ts, ip, tcp in tcp_segments(capture):
        if tcp.flags & dpkt.tcp.TH_SYN:
            note_handshake(ip, tcp, isn, shift)
            continue
        if tcp.data and (ip.src, tcp.sport) in isn:
            mapping = data_mapping(tcp.opts)
            if mapping is not None:
                relative = (tcp.seq - isn[(ip.src, tcp.sport)]) % 2**32
                end = mapping[0] + relative - mapping[1] + len(tcp.data)
                highest = end if highest is None else max(highest, end)
            continue
        ack = data_ack(tcp.opts)
        if ack is None or (ip.dst, tcp.dport) not in shift:
            continue
        value, width = ack
        if width == 4 and acked is not None:
            value = (acked & ~0xFFFFFFFF) | value
        elif width == 4:
            continue
        acked = value
        if highest is None:
            continue
        edge = acked + (tcp.win << shift[(ip.dst, tcp.dport)])
        now_limited = edge - highest < mss_bytes
        if since is not None:
            limited_s += float(ts) - since
        since = float(ts) if now_limited else None
    return limited_s


def add_covered(covered: list[tuple[int, int]], start: int, end: int) -> int:
    """Adds ``[start, end)`` to the sorted, disjoint ranges ``covered``; returns how many of
    its bytes were in them already."""
    from farlink.captures.intervals import merge_interval

    before = sum(e - s for s, e in covered)
    merge_interval(covered, start, end)
    return (end - start) - (sum(e - s for s, e in covered) - before)


def member_of(address: str) -> int:
    """The member whose path an address of the sender's is (``10.k.x.y``: member ``k``,
    ``crates/farlink-emu/src/mptcp.rs``)."""
    return int(address.split(".")[1])


def simulated_timeline(result: Any) -> Timeline:
    """The simulator's run in the same terms (its subflow ``k`` is member ``k``'s)."""
    seq, ack, goodput = result.trace("seq"), result.trace("ack"), result.trace("goodput")
    acked = {}
    opened_s = {}
    end_s = result.summary["flows"][0]["transfer_time_s"]
    for k in np.unique(seq["flow"]).tolist():
        sel = ack["flow"] == k
        at_s, done = ack["time_ns"][sel] / 1e9, ack["ack"][sel].astype(float)
        sent = seq["flow"] == k
        highest = float((seq["seq"][sent] + seq["len_bytes"][sent]).max())
        if done[-1] < highest:
            # The run ends with the transfer, before the ACKs of the subflow's last segments
            # reach its sender: they were delivered by then.
            at_s, done = np.append(at_s, end_s), np.append(done, highest)
        acked[k] = (at_s, done)
        opened_s[k] = float(seq["time_ns"][seq["flow"] == k][0]) / 1e9
    last_sent_s = {k: float(seq["time_ns"][seq["flow"] == k][-1]) / 1e9 for k in sorted(opened_s)}
    return Timeline(
        read_s=goodput["time_ns"] / 1e9,
        read_bytes=goodput["delivered_bytes"].astype(float),
        acked=acked,
        opened_s=opened_s,
        payload_bytes=int(np.bincount(seq["len_bytes"]).argmax()),
        transfer_s=end_s,
        last_sent_s=last_sent_s,
    )


def line_efficiency(payload_bytes: int) -> float:
    """The most of a member's rate the application can get: a full-sized packet
    (``PACKET_BYTES`` on the line) carries ``payload_bytes``, and selective repeat sends each
    27-byte frame 1 + p + p^2 times on average (p the scenario's frame error rate, 3 tries)."""
    doc = scenario()
    link = doc["links"][0]
    p = float(link["fwd"]["loss"]["p"])
    tries = int(link["bundle"]["arq"]["max_tries"])
    sends_per_frame = sum(p**i for i in range(tries))
    return payload_bytes / PACKET_BYTES / sends_per_frame


def phases(t: Timeline, summed_bps: float, delivered_bytes: float) -> dict[str, Any]:
    """The run split in three. The start: until every member's subflow has data acknowledged;
    the steady state: until the first member's subflow has its last byte acknowledged; the
    end. The steady state's share of the summed rate is given as the application read it and
    as the subflows carried it (payload acknowledged on them, copies included): the two differ
    by what the connection level held out of order at the steady state's ends.

    The overall share splits exactly into the ceiling (``line_efficiency``) less what was lost
    against it, in shares of the summed rate over the whole transfer: each member's time before
    its subflow's first byte was acknowledged (``lost_start``) and after its last
    (``lost_end``), its rate short of the ceiling in between (``lost_active``), and the payload
    the subflows carried beyond the ``delivered_bytes`` (``lost_copies``: connection-level
    copies, sent again by the kernel's scheduler or retransmission)."""
    first = {k: float(a[0][0]) for k, a in t.acked.items()}
    last = {k: float(a[0][-1]) for k, a in t.acked.items()}
    carried = {k: float(a[1][-1]) for k, a in t.acked.items()}
    start_s, steady_end_s, end_s = max(first.values()), min(last.values()), t.transfer_s
    rate = summed_bps / 8
    member_rate = rate / len(t.acked)
    ceiling = line_efficiency(t.payload_bytes)
    steady_s = steady_end_s - start_s
    steady = (delivered_at(t, steady_end_s) - delivered_at(t, start_s)) / (rate * steady_s)
    steady_subflows = sum(
        float(np.interp(steady_end_s, a[0], a[1]) - np.interp(start_s, a[0], a[1]))
        for a in t.acked.values()
    ) / (rate * steady_s)
    whole = rate * end_s
    active = {k: member_rate * ceiling * (last[k] - first[k]) for k in t.acked}
    return {
        "opened_last_s": max(t.opened_s.values()),
        "start_s": start_s,
        "steady_end_s": steady_end_s,
        "last_done_s": max(last.values()),
        "end_s": end_s,
        "steady": steady,
        "steady_subflows": steady_subflows,
        "ceiling": ceiling,
        "payload_bytes": t.payload_bytes,
        "lost_start": sum(member_rate * ceiling * f for f in first.values()) / whole,
        "lost_active": sum(active[k] - carried[k] for k in t.acked) / whole,
        "lost_end": sum(member_rate * ceiling * (end_s - s) for s in last.values()) / whole,
        "lost_copies": (sum(carried.values()) - delivered_bytes) / whole,
        "overall": delivered_bytes / whole,
        "copies": t.copies,
        "departure_error_us": t.departure_error_us,
        "window_limited_s": t.window_limited_s,
    }


def phase_rows(
    out: Path, stem: str, buffer: str, seed: int, kernel: dict[str, Any], sim: Any
) -> tuple[list[str], list[str]]:
    """The phase table's rows for one seed, the kernel's run then the simulator's, and the
    end table's."""
    summed_bps = kernel["bottleneck_bps"]
    timeline = kept_timeline(out, stem, kernel)
    rows, ends = [], []
    if timeline is None:
        rows.append(f"| kernel, {buffer} | {seed} | (no captures kept: --fresh) |")
    else:
        done = kernel["delivered_bytes"]
        rows.append(phase_row(f"kernel, {buffer}", seed, phases(timeline, summed_bps, done)))
        ends.append(end_row(f"kernel, {buffer}", seed, timeline))
    simulated = simulated_timeline(sim)
    done = sim.summary["flows"][0]["delivered_bytes"]
    rows.append(phase_row(f"sim, {buffer}", seed, phases(simulated, summed_bps, done)))
    ends.append(end_row(f"sim, {buffer}", seed, simulated))
    return rows, ends


def end_row(engine: str, seed: int, t: Timeline) -> str:
    """Per member: when its last data segment was sent, and when it arrived (where known),
    and when the member's subflow had its last byte acknowledged."""
    last_sent = t.last_sent_s or {}
    arrived = t.last_arrived_s or {}
    cells = []
    for k, (at_s, _) in t.acked.items():
        reached = f"{arrived[k]:.1f}" if k in arrived else "-"
        cells.append(f"{last_sent.get(k, float('nan')):.1f} / {reached} / {at_s[-1]:.1f}")
    return f"| {engine} | {seed} | {t.transfer_s:.1f} | " + " | ".join(cells) + " |"


def phase_row(engine: str, seed: int, ph: dict[str, Any]) -> str:
    return (
        f"| {engine} | {seed} | {ph['end_s']:.1f} | {ph['opened_last_s']:.2f} "
        f"| {ph['start_s']:.2f} | {ph['steady_end_s']:.1f} | {ph['last_done_s']:.1f} "
        f"| {ph['steady']:.3f} | {ph['steady_subflows']:.3f} "
        f"| {ph['steady_subflows'] / ph['ceiling']:.3f} "
        f"| {ph['payload_bytes']} / {ph['ceiling']:.3f} "
        f"| {ph['lost_start']:.3f} | {ph['lost_active']:.3f} | {ph['lost_end']:.3f} "
        f"| {ph['lost_copies']:.3f} | {copies_cell(ph)} | {ph['overall']:.3f} "
        f"| {window_cell(ph)} | {lateness_cell(ph)} |"
    )


def window_cell(ph: dict[str, Any]) -> str:
    """How long the receive window held the kernel's sender back (s)."""
    held = ph["window_limited_s"]
    return "-" if held is None else f"{held:.1f}"


def lateness_cell(ph: dict[str, Any]) -> str:
    """The emulator's departure-time error, ms: median / 99th percentile / most."""
    late = ph["departure_error_us"]
    if late is None:
        return "-"
    return f"{late['p50'] / 1e3:.2f} / {late['p99'] / 1e3:.1f} / {late['max'] / 1e3:.1f}"


def copies_cell(ph: dict[str, Any]) -> str:
    """The connection-level copies seen in the capture: KB, and when the last was sent."""
    if ph["copies"] is None:
        return "-"
    at_s, copied = ph["copies"]
    if not len(at_s):
        return "0"
    return f"{copied.sum() / 1e3:.1f} / {at_s[-1]:.1f}"


END_HEADER = [
    "| engine | seed | transfer (s) | member 0: last data sent / arrived / acked (s) "
    "| member 1 | member 2 | member 3 |",
    "|---|---|---|---|---|---|---|",
]

PHASE_HEADER = [
    "| engine | seed | transfer (s) | last subflow opened (s) | every subflow acked data (s) "
    "| first subflow done (s) | last subflow done (s) "
    "| steady state, of the summed rate: read | carried | carried, of the ceiling "
    "| full segment's payload (B) / ceiling "
    "| lost at the start | lost while active | lost at the end | lost to copies "
    "| copies seen (KB) / the last sent at (s) | overall "
    "| receive window full (s) | packets written late (ms): median / p99 / most |",
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
]


def members(flow: dict[str, Any]) -> str:
    """Per member: the subflows that carried data and the payload its path carried (MB, copies
    and retransmissions included)."""
    return ", ".join(f"{s['established']} / {s['bytes_sent'] / 1e6:.2f}" for s in flow["subflows"])


def row(buffer: str, seed: int, kernel: dict[str, Any], sim: dict[str, Any]) -> str:
    share = kernel["normalized_goodput"]
    reached = "yes" if kernel["verified"] and share >= TARGET_SHARE else "no"
    sent = sum(s["bytes_sent"] for s in kernel["subflows"])
    return (
        f"| {buffer} | {seed} | {'yes' if kernel['verified'] else 'no'} "
        f"| {kernel['transfer_time_s']:.1f} | {share:.3f} | {reached} | {members(kernel)} "
        f"| {sent / kernel['delivered_bytes']:.2f} | {sim['normalized_goodput']:.3f} "
        f"| {100 * (sim['goodput_bps'] / kernel['goodput_bps'] - 1):+.1f} % |"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--buffers", nargs="+", default=["1MB", "autotuned"])
    parser.add_argument("--seeds", type=int, default=validate_mptcp.SEEDS)
    parser.add_argument("--shutdown", choices=["acknowledged", "written"], default="acknowledged")
    parser.add_argument("--out", type=Path, default=ROOT / "farlink-out" / "mptcp-shutdown")
    parser.add_argument("--size", default=SIZE, help=f"the transfer's size (default {SIZE})")
    parser.add_argument("--fresh", action="store_true", help="run every emulation again")
    parser.add_argument(
        "--phases",
        action="store_true",
        help="also split each run into its start, steady state and end (phase_table)",
    )
    args = parser.parse_args(argv)
    if args.seeds < 1:
        parser.error("--seeds: expected at least 1")
    try:
        from farlink.units import parse_size_bytes

        parse_size_bytes(args.size)
    except ValueError as e:
        parser.error(f"--size: {e}")
    lines = [
        f"iridium-4 x{validate_mptcp.SPEEDUP:g}, no call drops, {args.size}, "
        f'app.shutdown = "{args.shutdown}"',
        "",
        "| send buffer | seed | verified | kernel transfer (s) | kernel, of the members' summed "
        "rate | at least 0.85 | kernel per member: subflows / MB sent "
        "| kernel, sent per byte delivered | sim, of the summed rate | sim goodput vs kernel |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    phase_lines = ["", *PHASE_HEADER]
    end_lines = ["", *END_HEADER]
    for buffer in args.buffers:
        for seed in range(1, args.seeds + 1):
            kernel = emulated(buffer, args.shutdown, args.size, seed, args.out, args.fresh)
            sim = simulated_run(buffer, args.shutdown, args.size, seed)
            lines.append(row(buffer, seed, kernel, sim.summary["flows"][0]))
            if args.phases:
                stem = run_stem(buffer, args.shutdown, args.size, seed)
                rows, ends = phase_rows(args.out, stem, buffer, seed, kernel, sim)
                phase_lines += rows
                end_lines += ends
    if args.phases:
        lines += phase_lines + end_lines
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
