"""Analyse the TCP connections of packet captures (pcap, pcapng) like a simulation.

``read_capture(path)`` (:mod:`farlink.captures.read`, bounded and streaming) returns the TCP
packets (IPv4, IPv6) of a capture and what was skipped; ``analyze_capture(path)`` groups them
into connections and builds, per connection, the series ``docs/captures.md`` describes:
time-sequence (with retransmissions), ACKs with SACK blocks, tap-to-tap RTT samples and the
sender's own RTT where its timestamps show it (:mod:`farlink.captures.rtt`), timeouts inferred from
the capture (:mod:`farlink.captures.rto`), outstanding data and goodput over 10, 100 and 1,000 s
windows. :mod:`farlink.captures.simulated` builds the same :class:`Connection` from a
simulation's traces, so that a capture and a simulation can be drawn in one set of figures
(:mod:`farlink.captures.figures`).

A truncated capture, a corrupted record or a clock step is not an error: the packets are
analysed and :attr:`Capture.warnings` says what was ignored or distrusted. A file that is no
capture at all raises :class:`CaptureError`.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from farlink.captures.handshake import Handshake, handshake
from farlink.captures.read import Capture, CaptureError, Packet, read_capture
from farlink.captures.rto import TIMEOUT_TOLERANCE, infer_timeouts, sender_times
from farlink.captures.rtt import segment_waits, sender_rtt, tap_rtt, wireshark_ack_rtt
from farlink.captures.tap import TapPosition, tap_position

__all__ = [
    "GOODPUT_WINDOWS_S",
    "Capture",
    "CaptureError",
    "Connection",
    "Packet",
    "PacketGroup",
    "analyze_capture",
    "analyze_packets",
    "data_connections",
    "iter_connections",
    "read_capture",
]

GOODPUT_WINDOWS_S = (10.0, 100.0, 1000.0)
# Histogram of goodput normalised to the link rate: 20 bins of 0.05 over [0, 1] (seed 004,
# Figures 10-12); a window above the rate (a rate given too low) is counted in the last bin.
NORMALIZED_BIN_EDGES = np.linspace(0.0, 1.0, 21)
MAX_GOODPUT_WINDOWS = 1_000_000
_WRAP = 1 << 32
MIN_RTO_S = 1.0  # RFC 6298 rule 2.4 (Linux uses 0.2 s: pass min_rto_s=0.2 for its captures)


# --------------------------------------------------------------------------------------------
# analysis


@dataclass
class Connection:
    """The series of one TCP connection, in the data direction; times in seconds.

    ``seq``: ``time_s``, ``seq`` (relative to the first data byte), ``len_bytes``,
    ``retransmission``. ``ack``: ``time_s``, ``ack`` (relative), ``dupack``; ``sack`` lists the
    SACK blocks (relative) of each ACK. ``rtt``: ``time_s``, ``rtt_s`` by ``rtt_method``
    (tap to tap, :mod:`farlink.captures.rtt`, or ``sender`` for the simulator's own samples);
    ``rtt_karn`` the tap-to-tap samples without timestamps always; ``rtt_wireshark`` the samples
    by Wireshark's ``ack_rtt`` rule, for comparing with it. ``sender_rtt``: the
    sender's own RTT estimated from its TSvals (the queue before the tap included), or None.
    ``timeouts_s``: the timeouts seen at the tap (:mod:`farlink.captures.rto`), and
    ``timeouts_unseen`` the firings inferred from backoff whose copies never crossed it.
    ``outstanding``: ``time_s``, ``bytes``. ``goodput``: window length in seconds → goodput in
    bit/s of each complete non-overlapping window.
    """

    name: str
    source: str
    seq: dict[str, np.ndarray]
    ack: dict[str, np.ndarray]
    sack: list[tuple[tuple[int, int], ...]]
    rtt: dict[str, np.ndarray]
    rtt_method: str
    rtt_karn: dict[str, np.ndarray]
    timeouts_s: np.ndarray
    outstanding: dict[str, np.ndarray]
    goodput: dict[float, np.ndarray]
    delivered_bytes: int
    duration_s: float
    timeouts_unseen: int = 0
    sender_rtt: dict[str, np.ndarray] | None = None
    sender_rtt_method: str | None = None
    mss_bytes: int | None = None
    # From the timer's restart (the last advancing ACK) to each timeout episode's first
    # timeout: the sender's RTO then, as the tap saw it (captures only).
    timeout_waits_s: np.ndarray | None = None
    # The options both ends agreed and the receiver's window (captures only).
    handshake: Handshake | None = None
    # Each data segment's wait before the tap from its TSval (NaN where none), and the TSval
    # clock's rate, its resolution (captures whose sender uses timestamps only).
    seg_wait_s: np.ndarray | None = None
    ts_clock_hz: float | None = None
    # Samples by Wireshark's ack_rtt rule (farlink.captures.rtt.wireshark_ack_rtt).
    rtt_wireshark: dict[str, np.ndarray] | None = None
    # Each data segment's PSH flag (captures only).
    push: np.ndarray | None = None
    # Where on the path the tap was (farlink.captures.tap; captures only).
    tap: TapPosition | None = None

    @property
    def retransmitted_segments(self) -> int:
        """Retransmissions in MSS-sized segments, as the sender's kernel counts them: a
        segment larger than the MSS (TSO/GSO at the tap) counts once per MSS it holds."""
        lens = self.seq["len_bytes"][self.seq["retransmission"]]
        if not self.mss_bytes:
            return len(lens)
        return int(np.ceil(lens / self.mss_bytes).sum())

    @property
    def retransmissions(self) -> int:
        return int(self.seq["retransmission"].sum())

    def summary(self, link_rate_bps: float | None = None) -> dict[str, Any]:
        """A JSON-ready summary of the connection; with ``link_rate_bps`` the goodput windows
        also normalised to that rate, with their histogram (:data:`NORMALIZED_BIN_EDGES`)."""
        rtt = self.rtt["rtt_s"]
        sent = int(self.seq["len_bytes"].sum())
        return {
            "connection": self.name,
            "source": self.source,
            "duration_s": self.duration_s,
            "data_segments": len(self.seq["seq"]),
            "bytes_sent": sent,
            "delivered_bytes": self.delivered_bytes,
            "goodput_bps": 8 * self.delivered_bytes / self.duration_s if self.duration_s else None,
            "retransmissions": self.retransmissions,
            "retransmitted_bytes": int(self.seq["len_bytes"][self.seq["retransmission"]].sum()),
            "mss_bytes": self.mss_bytes,
            "retransmitted_segments": self.retransmitted_segments,
            "timeouts": len(self.timeouts_s) + self.timeouts_unseen,
            "timeouts_unseen_at_tap": self.timeouts_unseen,
            "timeout_times_s": self.timeouts_s.tolist(),
            "acks": len(self.ack["ack"]),
            "dupacks": int(self.ack["dupack"].sum()),
            "sack_blocks": sum(len(b) for b in self.sack),
            "rtt_method": self.rtt_method,
            "rtt_samples": len(rtt),
            "rtt_karn_samples": len(self.rtt_karn["rtt_s"]),
            "rtt_min_s": float(rtt.min()) if len(rtt) else None,
            "rtt_median_s": float(np.median(rtt)) if len(rtt) else None,
            "rtt_p95_s": float(np.percentile(rtt, 95)) if len(rtt) else None,
            "rtt_max_s": float(rtt.max()) if len(rtt) else None,
            **self._wireshark_rtt_summary(),
            **self._sender_rtt_summary(),
            "max_outstanding_bytes": int(self.outstanding["bytes"].max())
            if len(self.outstanding["bytes"])
            else 0,
            "goodput_windows": {
                f"{w:g}s": _window_summary(g, link_rate_bps) for w, g in self.goodput.items()
            },
        }

    def _wireshark_rtt_summary(self) -> dict[str, Any]:
        r = self.rtt_wireshark["rtt_s"] if self.rtt_wireshark is not None else np.zeros(0)
        return {
            "rtt_wireshark_samples": len(r),
            "rtt_wireshark_median_s": float(np.median(r)) if len(r) else None,
            "rtt_wireshark_p95_s": float(np.percentile(r, 95)) if len(r) else None,
        }

    def _sender_rtt_summary(self) -> dict[str, Any]:
        r = self.sender_rtt["rtt_s"] if self.sender_rtt is not None else np.zeros(0)
        return {
            "sender_rtt_method": self.sender_rtt_method,
            "sender_rtt_median_s": float(np.median(r)) if len(r) else None,
            "sender_rtt_p95_s": float(np.percentile(r, 95)) if len(r) else None,
        }


def _window_summary(g: np.ndarray, link_rate_bps: float | None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "windows": len(g),
        "mean_bps": float(g.mean()) if len(g) else None,
        "min_bps": float(g.min()) if len(g) else None,
        "max_bps": float(g.max()) if len(g) else None,
    }
    if link_rate_bps:
        norm = g / link_rate_bps
        out["link_rate_bps"] = link_rate_bps
        out["mean_normalized"] = float(norm.mean()) if len(g) else None
        out["min_normalized"] = float(norm.min()) if len(g) else None
        out["max_normalized"] = float(norm.max()) if len(g) else None
        out["histogram_normalized"] = {
            "edges": NORMALIZED_BIN_EDGES.tolist(),
            "counts": normalized_histogram(norm).tolist(),
        }
    return out


def normalized_histogram(norm: np.ndarray) -> np.ndarray:
    """Counts of normalised goodput per bin of :data:`NORMALIZED_BIN_EDGES` (above 1: last)."""
    clipped = np.clip(norm, 0.0, 1.0)
    return np.histogram(clipped, bins=NORMALIZED_BIN_EDGES)[0]


def _unwrap(values: list[int], base: int) -> np.ndarray:
    """32-bit sequence numbers relative to ``base``, unwrapped in the order given."""
    out = np.empty(len(values), dtype=np.int64)
    last = 0
    for i, v in enumerate(values):
        rel = (v - base) % _WRAP
        delta = (rel - last % _WRAP + _WRAP // 2) % _WRAP - _WRAP // 2
        last += delta
        out[i] = last
    return out


def analyze_capture(
    path: str | Path, *, min_rto_s: float | None = None
) -> tuple[Capture, list[Connection]]:
    """Read a capture and analyse each of its TCP connections (see :func:`analyze_packets`)."""
    from farlink.captures.address_map import label_connections  # flow names from the address map

    cap = read_capture(path)
    connections = analyze_packets(
        cap.packets, start_s=cap.start_s, source=cap.source, min_rto_s=min_rto_s
    )
    return cap, label_connections(connections, path)


def analyze_packets(
    packets: list[Packet],
    *,
    start_s: float = 0.0,
    source: str = "capture",
    min_rto_s: float | None = None,
) -> list[Connection]:
    """Group packets by 4-tuple and analyse each connection that carries data.

    The data sender is the side that sent more payload bytes; times are relative to ``start_s``.
    """
    groups = data_connections(packets)
    return list(iter_connections(groups, start_s=start_s, source=source, min_rto_s=min_rto_s))


@dataclass(frozen=True, slots=True)
class PacketGroup:
    """The packets of one connection (both directions, in capture order) and its data
    sender's address and port."""

    packets: list[Packet]
    sender: tuple[str, int]
    sent_bytes: int


def data_connections(packets: list[Packet]) -> list[PacketGroup]:
    """The packets grouped by 4-tuple in one pass, each connection that carries data in the
    order it first appears (the sender: the side that sent more payload bytes). Cheap beside
    the analysis of each group, so a caller can count connections before analysing any."""
    groups: dict[frozenset[tuple[str, int]], list[Packet]] = {}
    for p in packets:
        groups.setdefault(frozenset(((p.src, p.sport), (p.dst, p.dport))), []).append(p)
    found = []
    for group in groups.values():
        sent: dict[tuple[str, int], int] = {}
        for p in group:
            sent[(p.src, p.sport)] = sent.get((p.src, p.sport), 0) + p.payload
        sender = max(sent, key=lambda k: (sent[k], k))
        if sent[sender]:
            found.append(PacketGroup(group, sender, sent[sender]))
    return found


def iter_connections(
    groups: list[PacketGroup],
    *,
    start_s: float = 0.0,
    source: str = "capture",
    min_rto_s: float | None = None,
) -> Iterator[Connection]:
    """Each group analysed in turn (:func:`data_connections`), one :class:`Connection` at a
    time, so that a caller that keeps only summaries holds one connection's series at once."""
    for g in groups:
        yield _connection(g.packets, g.sender, start_s, source, min_rto_s)


def _connection(
    group: list[Packet],
    sender: tuple[str, int],
    start_s: float,
    source: str,
    min_rto_s: float | None,
) -> Connection:
    data = [p for p in group if (p.src, p.sport) == sender]
    acks = [p for p in group if (p.src, p.sport) != sender and p.has_ack]
    syns = [p for p in data if p.syn]
    base = (
        (syns[0].seq + 1)
        if syns
        else min((p for p in data if p.payload), key=lambda p: p.time_s).seq
    )
    segs = [p for p in data if p.payload]
    seq = _unwrap([p.seq for p in segs], base)
    lens = np.array([p.payload for p in segs], dtype=np.int64)
    seg_t = np.array([p.time_s - start_s for p in segs])
    ack_v = _unwrap([p.ack for p in acks], base)
    ack_t = np.array([p.time_s - start_s for p in acks])
    sack = [
        tuple((int(_unwrap([lo], base)[0]), int(_unwrap([hi], base)[0])) for lo, hi in p.sack)
        for p in acks
    ]
    other = [p for p in group if (p.src, p.sport) != sender]
    uses_ts = _uses_timestamps(data, other)
    mss = _sender_mss(other, lens, uses_ts)
    dst = next((p.dst, p.dport) for p in segs)
    name = f"{sender[0]}:{sender[1]}->{dst[0]}:{dst[1]}"
    payload_acks = np.array([p.payload for p in acks], dtype=np.int64)
    all_t = [p.time_s - start_s for p in group]
    conn = build_connection(
        name=name,
        source=source,
        seg_t=seg_t,
        seq=seq,
        lens=lens,
        ack_t=ack_t,
        ack=ack_v,
        sack=sack,
        ack_payload=payload_acks,
        seg_ok=np.array([p.time_ok for p in segs], dtype=bool),
        ack_ok=np.array([p.time_ok for p in acks], dtype=bool),
        seg_tsval=_ts_column([p.tsval for p in segs]) if uses_ts else None,
        ack_tsecr=_ts_column([p.tsecr for p in acks]) if uses_ts else None,
        span=(min(all_t), max(all_t)),
        min_rto_s=min_rto_s,
        mss_bytes=mss,
    )
    conn.handshake = handshake(data, other, uses_ts)
    tap_rtt_s = conn.rtt["rtt_s"]
    conn.tap = tap_position(data, other, float(tap_rtt_s.min()) if len(tap_rtt_s) else None)
    if conn.tap.acks_reach_sender_at_once:
        _time_by_sender_clock(conn, min_rto_s)
    conn.push = np.array([p.psh for p in segs], dtype=bool)
    return conn


def _time_by_sender_clock(conn: Connection, min_rto_s: float | None) -> None:
    """Where the tap is at the sender and its segments carry TSvals, the timeouts judged on the
    sender's clock (:mod:`farlink.captures.rto`, "On the sender's clock"), at the tap times of
    the segments found."""
    if conn.seg_wait_s is None or conn.ts_clock_hz is None or conn.sender_rtt is None:
        return
    if not len(conn.sender_rtt["rtt_s"]):
        return
    seg_t = conn.seq["time_s"]
    sent_t = sender_times(seg_t, conn.seg_wait_s, conn.ts_clock_hz)
    order = np.argsort(sent_t, kind="stable")
    found = infer_timeouts(
        sent_t[order],
        conn.seq["seq"][order],
        conn.seq["len_bytes"][order],
        conn.seq["retransmission"][order],
        conn.ack["time_s"],
        conn.ack["ack"],
        conn.sack,
        longest_rtt_s=float(conn.sender_rtt["rtt_s"].max()),
        min_rto_s=min_rto_s,
    )
    conn.timeouts_s = seg_t[order[found.segments]]
    conn.timeouts_unseen = found.unseen
    conn.timeout_waits_s = found.first_waits_s


def _sender_mss(other: list[Packet], lens: np.ndarray, uses_ts: bool) -> int | None:
    """The sender's segment size: the receiver's MSS option less the timestamp option's 12
    bytes when they are used (RFC 7323 section 4.3 / Linux's mss_cache), else the commonest
    segment length among those no larger than an Ethernet frame's payload."""
    offered = [p.mss for p in other if p.syn and p.mss]
    if offered:
        return offered[0] - (12 if uses_ts else 0)
    small = lens[lens <= 1460]
    if not len(small):
        return None
    values, counts = np.unique(small, return_counts=True)
    return int(values[np.argmax(counts)])


def _ts_column(values: list[int | None]) -> np.ndarray:
    return np.array([-1 if v is None else v for v in values], dtype=np.int64)


def _uses_timestamps(data: list[Packet], other: list[Packet]) -> bool:
    return any(p.tsval is not None for p in data) and any(p.tsecr not in (None, 0) for p in other)


def build_connection(
    *,
    name: str,
    source: str,
    seg_t: np.ndarray,
    seq: np.ndarray,
    lens: np.ndarray,
    ack_t: np.ndarray,
    ack: np.ndarray,
    sack: list[tuple[tuple[int, int], ...]] | None = None,
    ack_payload: np.ndarray | None = None,
    retransmission: np.ndarray | None = None,
    rtt: dict[str, np.ndarray] | None = None,
    rtt_method: str = "sender",
    span: tuple[float, float] | None = None,
    min_rto_s: float | None = None,
    seg_ok: np.ndarray | None = None,
    ack_ok: np.ndarray | None = None,
    seg_tsval: np.ndarray | None = None,
    ack_tsecr: np.ndarray | None = None,
    mss_bytes: int | None = None,
) -> Connection:
    """Build the per-connection series from data segments and ACKs (both time-ordered).

    ``retransmission`` defaults to "starts below the highest sequence number sent so far".
    Without ``rtt`` (a capture), the RTT samples are the tap's (:mod:`farlink.captures.rtt`) and the
    timeouts are inferred from the capture (:mod:`farlink.captures.rto`, ``min_rto_s`` a hint);
    with the sender's own samples (a simulation), timeouts are found by the RTO those samples
    give (:func:`_timeouts`, at least ``min_rto_s``, 1 s by default).
    ``seg_ok``/``ack_ok`` are False for packets whose time is a clock step (none by default).
    """
    seq = np.asarray(seq, dtype=np.int64)
    lens = np.asarray(lens, dtype=np.int64)
    if retransmission is None:
        ends = seq + lens
        high = np.maximum.accumulate(np.concatenate([[0], ends]))[:-1]
        high[0] = seq[0] if len(seq) else 0
        retransmission = seq < high
    retransmission = np.asarray(retransmission, dtype=bool)
    sack = sack if sack is not None else [() for _ in ack]
    ack_payload = ack_payload if ack_payload is not None else np.zeros(len(ack), dtype=np.int64)
    dup = np.zeros(len(ack), dtype=bool)
    if len(ack) > 1:
        dup[1:] = (ack[1:] == ack[:-1]) & (ack_payload[1:] == 0) & (ack[1:] > 0)
    max_end = int((seq + lens).max()) if len(seq) else 0
    delivered = int(min(ack.max(), max_end)) if len(ack) else 0
    seg_ok = np.ones(len(seq), dtype=bool) if seg_ok is None else seg_ok
    ack_ok = np.ones(len(ack), dtype=bool) if ack_ok is None else ack_ok
    tap_args = (seg_t, seq, lens, seg_ok)
    karn_samples = tap_rtt(*tap_args, None, ack_t, ack, ack_ok, None, sack)
    karn = karn_samples.as_series()
    wireshark = wireshark_ack_rtt(seg_t, seq, lens, ack_t, ack).as_series()
    sender = waits = None
    if rtt is not None:
        timeouts = _timeouts(
            seg_t,
            seq,
            retransmission,
            ack_t,
            ack,
            rtt,
            MIN_RTO_S if min_rto_s is None else min_rto_s,
        )
        unseen, first_waits = 0, None
    else:
        tap = tap_rtt(*tap_args, seg_tsval, ack_t, ack, ack_ok, ack_tsecr, sack)
        rtt, rtt_method = tap.as_series(), tap.method
        if seg_tsval is not None:
            sender = sender_rtt(tap, seg_t, seg_tsval, seg_ok)
            waits = segment_waits(seg_t, seg_tsval, seg_ok)
        longest = sender[0].rtt_s if sender is not None else tap.rtt_s
        found = infer_timeouts(
            seg_t,
            seq,
            lens,
            retransmission,
            ack_t,
            ack,
            sack,
            longest_rtt_s=float(longest.max()) if len(longest) else 0.0,
            min_rto_s=min_rto_s,
        )
        timeouts, unseen, first_waits = found.times_s, found.unseen, found.first_waits_s
    t0, t1 = span if span is not None else (0.0, max([*seg_t[-1:], *ack_t[-1:], 0.0]))
    return Connection(
        name=name,
        source=source,
        seq={"time_s": seg_t, "seq": seq, "len_bytes": lens, "retransmission": retransmission},
        ack={"time_s": ack_t, "ack": ack, "dupack": dup},
        sack=sack,
        rtt=rtt,
        rtt_method=rtt_method,
        rtt_karn=karn,
        rtt_wireshark=wireshark,
        timeouts_s=timeouts,
        outstanding=_outstanding(seg_t, seq + lens, ack_t, ack),
        goodput=_goodput(ack_t, ack, t0, t1),
        delivered_bytes=delivered,
        duration_s=float(t1 - t0),
        timeouts_unseen=unseen,
        timeout_waits_s=first_waits,
        sender_rtt=sender[0].as_series() if sender is not None else None,
        sender_rtt_method=sender[0].method if sender is not None else None,
        mss_bytes=mss_bytes,
        seg_wait_s=waits[0] if waits is not None else None,
        ts_clock_hz=waits[1] if waits is not None else None,
    )


def _timeouts(
    seg_t: np.ndarray,
    seq: np.ndarray,
    retx: np.ndarray,
    ack_t: np.ndarray,
    ack: np.ndarray,
    rtt: dict[str, np.ndarray],
    min_rto_s: float,
) -> np.ndarray:
    """Retransmissions taken for retransmission timeouts (the heuristic of docs/captures.md).

    A retransmission is a timeout when it resends the first unacknowledged byte and comes at
    least the running RTO estimate after the timer's last restart: the last ACK that advanced
    (RFC 6298 rule 5.3; duplicate ACKs do not restart it) or the previous timeout. The estimate
    is RFC 6298's from the RTT samples so far, at least ``min_rto_s`` (1 s before the first
    sample); it is not backed off, so a backed-off timeout still counts."""
    rtt_t, rtt_v = rtt["time_s"], rtt["rtt_s"]
    advancing = np.ones(len(ack), dtype=bool)
    if len(ack):
        advancing[1:] = ack[1:] > np.maximum.accumulate(ack)[:-1]
    adv_t, adv_v = ack_t[advancing], ack[advancing]
    found: list[float] = []
    srtt = rttvar = 0.0
    used = 0
    for i in np.flatnonzero(retx):
        t = float(seg_t[i])
        while used < len(rtt_t) and rtt_t[used] <= t:
            r = float(rtt_v[used])
            if used == 0:
                srtt, rttvar = r, r / 2
            else:
                rttvar = 0.75 * rttvar + 0.25 * abs(srtt - r)
                srtt = 0.875 * srtt + 0.125 * r
            used += 1
        rto = max(min_rto_s, srtt + 4 * rttvar) if used else max(min_rto_s, 1.0)
        k = bisect_right(adv_t, t)
        snd_una = int(adv_v[k - 1]) if k else int(seq[0])
        restart = max(float(adv_t[k - 1]) if k else 0.0, found[-1] if found else 0.0)
        if seq[i] <= snd_una and t - restart >= TIMEOUT_TOLERANCE * rto:
            found.append(t)
    return np.array(found)


def _outstanding(
    seg_t: np.ndarray, ends: np.ndarray, ack_t: np.ndarray, ack: np.ndarray
) -> dict[str, np.ndarray]:
    """Highest byte sent minus highest byte acknowledged, after every segment and ACK."""
    t = np.concatenate([seg_t, ack_t])
    kind = np.concatenate([np.zeros(len(seg_t)), np.ones(len(ack_t))])
    order = np.lexsort((kind, t))
    snd = np.concatenate([ends, np.zeros(len(ack_t), dtype=np.int64)])[order]
    una = np.concatenate([np.zeros(len(seg_t), dtype=np.int64), ack])[order]
    snd_max = np.maximum.accumulate(snd) if len(snd) else snd
    snd_una = np.maximum.accumulate(una) if len(una) else una
    return {"time_s": t[order], "bytes": np.maximum(snd_max - snd_una, 0)}


def _goodput(ack_t: np.ndarray, ack: np.ndarray, t0: float, t1: float) -> dict[float, np.ndarray]:
    """In-order bytes acknowledged in each complete non-overlapping window (seed 004, Figures
    10-12), as bit/s; windows start at the connection's first packet. At most
    :data:`MAX_GOODPUT_WINDOWS` windows per length (8 MB each): a span longer than that (a
    capture of years) keeps its first ones."""
    if len(ack):
        highest = np.maximum.accumulate(np.maximum(ack, 0))
    else:
        highest = np.zeros(0, dtype=np.int64)
    out = {}
    for w in GOODPUT_WINDOWS_S:
        n = min(int((t1 - t0) // w), MAX_GOODPUT_WINDOWS)
        edges = t0 + w * np.arange(n + 1)
        idx = np.searchsorted(ack_t, edges, side="right") - 1
        level = np.where(idx >= 0, highest[np.clip(idx, 0, None)] if len(ack) else 0, 0)
        out[w] = np.diff(level) * 8 / w
    return out
