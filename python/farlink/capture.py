"""Read packet captures (pcap, pcapng) and analyse their TCP connections like a simulation.

``read_capture(path)`` returns the IPv4 TCP packets of a capture and what was skipped;
``analyze_capture(path)`` groups them into connections and builds, per connection, the series
``docs/captures.md`` describes: time-sequence (with retransmissions), ACKs with SACK blocks, RTT
samples (Karn's rule, or TCP timestamps when both sides use them), detected timeouts, outstanding
data and goodput over 10, 100 and 1,000 s windows. ``analyze_result(result)`` builds the same
:class:`Connection` from a simulation's ``seq``/``ack``/``rtt`` traces, so a capture and a
simulation can be drawn in one figure (:func:`plot_connections`).

A truncated capture or a corrupted record is not an error: the packets before it are analysed and
:attr:`Capture.warnings` says what was ignored. A file that is no capture at all raises
:class:`CaptureError`.
"""

from __future__ import annotations

import io
import struct
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "GOODPUT_WINDOWS_S",
    "Capture",
    "CaptureError",
    "Connection",
    "Packet",
    "analyze_capture",
    "analyze_packets",
    "analyze_result",
    "call_drop_times_s",
    "plot_connections",
    "read_capture",
]

GOODPUT_WINDOWS_S = (10.0, 100.0, 1000.0)
# Histogram of goodput normalised to the link rate: 20 bins of 0.05 over [0, 1] (seed 004,
# Figures 10-12); a window above the rate (a rate given too low) is counted in the last bin.
NORMALIZED_BIN_EDGES = np.linspace(0.0, 1.0, 21)
MAX_RECORD_BYTES = 262_144  # larger than any link's snap length: a record this long is corrupt
_PCAP_MAGICS = {
    b"\xd4\xc3\xb2\xa1": ("<", 1e-6),
    b"\xa1\xb2\xc3\xd4": (">", 1e-6),
    b"\x4d\x3c\xb2\xa1": ("<", 1e-9),
    b"\xa1\xb2\x3c\x4d": (">", 1e-9),
}
_PCAPNG_MAGIC = b"\x0a\x0d\x0d\x0a"
LINKTYPE_ETHERNET, LINKTYPE_RAW, LINKTYPE_SLL, LINKTYPE_IPV4 = 1, 101, 113, 228
# DLT_RAW's platform values (12, 14) that some writers put in files instead of 101.
_RAW_TYPES = (LINKTYPE_RAW, LINKTYPE_IPV4, 12, 14)
_WRAP = 1 << 32
TIMEOUT_TOLERANCE = 0.98  # a capture's clock and the sender's timer differ by a little
MIN_RTO_S = 1.0  # RFC 6298 rule 2.4 (Linux uses 0.2 s: pass min_rto_s=0.2 for its captures)


class CaptureError(ValueError):
    """A file that cannot be read as a capture; the message names the file and what was wrong."""


@dataclass(frozen=True)
class Packet:
    """One IPv4 TCP segment as captured (addresses as dotted quads, time in seconds)."""

    time_s: float
    src: str
    dst: str
    sport: int
    dport: int
    seq: int
    ack: int
    flags: int
    payload: int
    tsval: int | None = None
    tsecr: int | None = None
    sack: tuple[tuple[int, int], ...] = ()

    @property
    def syn(self) -> bool:
        return bool(self.flags & 0x02)

    @property
    def has_ack(self) -> bool:
        return bool(self.flags & 0x10)


@dataclass
class Capture:
    """What a capture held: its TCP packets, counts of what was skipped, and warnings.

    Packet times are seconds after ``epoch_s`` (the whole second of the first pcap record; 0
    for pcapng); ``start_s`` is the first TCP packet's time on that scale.
    """

    source: str
    format: str
    linktype: int
    packets: list[Packet] = field(default_factory=list)
    records: int = 0
    skipped: dict[str, int] = field(
        default_factory=lambda: {"non_ipv4": 0, "non_tcp": 0, "malformed": 0}
    )
    bytes_ignored: int = 0
    warnings: list[str] = field(default_factory=list)
    start_s: float = 0.0
    epoch_s: float = 0.0

    @property
    def start_unix_s(self) -> float:
        """The first packet's time on the capture's own clock (POSIX seconds for real captures)."""
        return self.epoch_s + self.start_s


# --------------------------------------------------------------------------------------------
# reading


def read_capture(path: str | Path) -> Capture:
    """Read a pcap (µs or ns, either byte order) or pcapng file; keep its IPv4 TCP segments.

    Raises:
        CaptureError: the file cannot be read, or is not a pcap or pcapng capture, or its link
            type is not raw IP, Ethernet or Linux cooked.
    """
    source = str(path)
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise CaptureError(f"{source}: cannot read the file ({exc.strerror or exc})") from None
    if len(data) >= 4 and data[:4] in _PCAP_MAGICS:
        cap = _read_pcap(data, source)
    elif data[:4] == _PCAPNG_MAGIC:
        cap = _read_pcapng(data, source)
    else:
        raise CaptureError(
            f"{source}: not a capture (first bytes {data[:4].hex() or 'none'}); expected pcap "
            "(magic a1b2c3d4 or a1b23c4d, either byte order) or pcapng (0a0d0d0a)"
        )
    if cap.packets:
        cap.start_s = cap.packets[0].time_s
    return cap


def _check_linktype(linktype: int, source: str) -> None:
    if linktype not in (LINKTYPE_ETHERNET, LINKTYPE_SLL, *_RAW_TYPES):
        raise CaptureError(
            f"{source}: link type {linktype} is not supported; expected raw IP (101, 228), "
            "Ethernet (1) or Linux cooked (113)"
        )


def _read_pcap(data: bytes, source: str) -> Capture:
    order, unit = _PCAP_MAGICS[data[:4]]
    if len(data) < 24:
        raise CaptureError(f"{source}: pcap file header cut short ({len(data)} of 24 bytes)")
    linktype = struct.unpack(order + "I", data[20:24])[0] & 0x0FFFFFFF
    _check_linktype(linktype, source)
    cap = Capture(source, "pcap-ns" if unit == 1e-9 else "pcap-us", linktype)
    header = struct.Struct(order + "IIII")
    pos = 24
    while pos < len(data):
        if len(data) - pos < 16:
            _cut(cap, len(data) - pos, f"record {cap.records + 1} header cut short")
            break
        sec, frac, incl, _orig = header.unpack_from(data, pos)
        if incl > MAX_RECORD_BYTES or (unit == 1e-6 and frac >= 1_000_000) or frac >= 10**9:
            _cut(cap, len(data) - pos, f"record {cap.records + 1} at byte {pos} is corrupt")
            break
        if pos + 16 + incl > len(data):
            _cut(cap, len(data) - pos, f"record {cap.records + 1} cut short")
            break
        if cap.records == 0:
            cap.epoch_s = float(sec)  # times kept relative to it, so nanoseconds survive
        cap.records += 1
        _add(cap, (sec - cap.epoch_s) + frac * unit, data[pos + 16 : pos + 16 + incl])
        pos += 16 + incl
    return cap


def _read_pcapng(data: bytes, source: str) -> Capture:
    import dpkt

    stream = io.BytesIO(data)
    try:
        reader = dpkt.pcapng.Reader(stream)
    except Exception as exc:  # dpkt raises ValueError, struct.error or its own errors
        raise CaptureError(f"{source}: pcapng header unreadable ({exc})") from None
    linktype = reader.datalink()
    _check_linktype(linktype, source)
    cap = Capture(source, "pcapng", linktype)
    good = stream.tell()
    iterator = iter(reader)
    while True:
        try:
            ts, buf = next(iterator)
        except StopIteration:
            if stream.tell() < len(data):
                _cut(cap, len(data) - stream.tell(), f"block after packet {cap.records} unreadable")
            break
        except Exception:
            _cut(cap, len(data) - good, f"block after packet {cap.records} is cut short or corrupt")
            break
        good = stream.tell()
        cap.records += 1
        _add(cap, float(ts), bytes(buf))
    return cap


def _cut(cap: Capture, ignored: int, what: str) -> None:
    cap.bytes_ignored += ignored
    cap.warnings.append(
        f"{cap.source}: {what}; analysed the {cap.records} packets before it and ignored the "
        f"last {ignored} bytes"
    )


def _ip_payload(linktype: int, frame: bytes) -> bytes | None:
    """The IPv4 datagram in a frame, or None for anything else."""
    if linktype in _RAW_TYPES:
        return frame
    if linktype == LINKTYPE_ETHERNET:
        offset, ethertype = 14, frame[12:14]
        while ethertype in (b"\x81\x00", b"\x88\xa8") and len(frame) >= offset + 4:
            ethertype, offset = frame[offset + 2 : offset + 4], offset + 4
        return frame[offset:] if ethertype == b"\x08\x00" else None
    return frame[16:] if frame[14:16] == b"\x08\x00" else None  # Linux SLL


def _add(cap: Capture, time_s: float, frame: bytes) -> None:
    ip = _ip_payload(cap.linktype, frame)
    if ip is None or len(ip) < 20 or ip[0] >> 4 != 4:
        cap.skipped["non_ipv4"] += 1
        return
    ihl = (ip[0] & 0x0F) * 4
    frag_offset = struct.unpack_from("!H", ip, 6)[0] & 0x1FFF
    if ip[9] != 6 or frag_offset:
        cap.skipped["non_tcp"] += 1
        return
    total = struct.unpack_from("!H", ip, 2)[0]
    if ihl < 20 or len(ip) < ihl + 20 or total < ihl + 20:
        cap.skipped["malformed"] += 1
        return
    sport, dport, seq, ack, off_flags = struct.unpack_from("!HHIIH", ip, ihl)
    off = (off_flags >> 12) * 4
    if off < 20 or total < ihl + off:
        cap.skipped["malformed"] += 1
        return
    tsval, tsecr, sack = _options(ip[ihl + 20 : ihl + off])
    cap.packets.append(
        Packet(
            time_s,
            ".".join(map(str, ip[12:16])),
            ".".join(map(str, ip[16:20])),
            sport,
            dport,
            seq,
            ack,
            off_flags & 0x1FF,
            total - ihl - off,
            tsval,
            tsecr,
            sack,
        )
    )


def _options(opts: bytes) -> tuple[int | None, int | None, tuple[tuple[int, int], ...]]:
    tsval = tsecr = None
    sack: list[tuple[int, int]] = []
    i = 0
    while i < len(opts):
        kind = opts[i]
        if kind == 0:
            break
        if kind == 1:
            i += 1
            continue
        if i + 1 >= len(opts) or opts[i + 1] < 2:
            break
        length = opts[i + 1]
        body = opts[i + 2 : i + length]
        if kind == 8 and len(body) == 8:
            tsval, tsecr = struct.unpack("!II", body)
        elif kind == 5:
            sack = [struct.unpack_from("!II", body, j) for j in range(0, len(body) - 7, 8)]
        i += length
    return tsval, tsecr, tuple(sack)


# --------------------------------------------------------------------------------------------
# analysis


@dataclass
class Connection:
    """The series of one TCP connection, in the data direction; times in seconds.

    ``seq``: ``time_s``, ``seq`` (relative to the first data byte), ``len_bytes``,
    ``retransmission``. ``ack``: ``time_s``, ``ack`` (relative), ``dupack``; ``sack`` lists the
    SACK blocks (relative) of each ACK. ``rtt``: ``time_s``, ``rtt_s`` by ``rtt_method``
    (``timestamps``, ``karn`` or ``sender`` for the simulator's own samples); ``rtt_karn`` the
    Karn samples always. ``outstanding``: ``time_s``, ``bytes``. ``goodput``: window length in
    seconds → goodput in bit/s of each complete non-overlapping window.
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
            "timeouts": len(self.timeouts_s),
            "timeout_times_s": self.timeouts_s.tolist(),
            "acks": len(self.ack["ack"]),
            "dupacks": int(self.ack["dupack"].sum()),
            "sack_blocks": sum(len(b) for b in self.sack),
            "rtt_method": self.rtt_method,
            "rtt_samples": len(rtt),
            "rtt_karn_samples": len(self.rtt_karn["rtt_s"]),
            "rtt_min_s": float(rtt.min()) if len(rtt) else None,
            "rtt_median_s": float(np.median(rtt)) if len(rtt) else None,
            "rtt_max_s": float(rtt.max()) if len(rtt) else None,
            "max_outstanding_bytes": int(self.outstanding["bytes"].max())
            if len(self.outstanding["bytes"])
            else 0,
            "goodput_windows": {
                f"{w:g}s": _window_summary(g, link_rate_bps) for w, g in self.goodput.items()
            },
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
    path: str | Path, *, min_rto_s: float = MIN_RTO_S
) -> tuple[Capture, list[Connection]]:
    """Read a capture and analyse each of its TCP connections (see :func:`analyze_packets`)."""
    from farlink.address_map import label_connections  # flow names from the address map

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
    min_rto_s: float = MIN_RTO_S,
) -> list[Connection]:
    """Group packets by 4-tuple and analyse each connection that carries data.

    The data sender is the side that sent more payload bytes; times are relative to ``start_s``.
    """
    groups: dict[frozenset[tuple[str, int]], list[Packet]] = {}
    for p in packets:
        groups.setdefault(frozenset(((p.src, p.sport), (p.dst, p.dport))), []).append(p)
    connections = []
    for group in groups.values():
        sent: dict[tuple[str, int], int] = {}
        for p in group:
            sent[(p.src, p.sport)] = sent.get((p.src, p.sport), 0) + p.payload
        sender = max(sent, key=lambda k: (sent[k], k))
        if sent[sender] == 0:
            continue
        connections.append(_connection(group, sender, start_s, source, min_rto_s))
    return connections


def _connection(
    group: list[Packet], sender: tuple[str, int], start_s: float, source: str, min_rto_s: float
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
    ts_rtt = _timestamp_rtt(segs, acks, ack_v, start_s) if _uses_timestamps(data, other) else None
    dst = next((p.dst, p.dport) for p in segs)
    name = f"{sender[0]}:{sender[1]}->{dst[0]}:{dst[1]}"
    payload_acks = np.array([p.payload for p in acks], dtype=np.int64)
    all_t = [p.time_s - start_s for p in group]
    return build_connection(
        name=name,
        source=source,
        seg_t=seg_t,
        seq=seq,
        lens=lens,
        ack_t=ack_t,
        ack=ack_v,
        sack=sack,
        ack_payload=payload_acks,
        rtt=ts_rtt,
        rtt_method="timestamps" if ts_rtt is not None else "karn",
        span=(min(all_t), max(all_t)),
        min_rto_s=min_rto_s,
    )


def _uses_timestamps(data: list[Packet], other: list[Packet]) -> bool:
    return any(p.tsval is not None for p in data) and any(p.tsecr not in (None, 0) for p in other)


def _timestamp_rtt(
    segs: list[Packet], acks: list[Packet], ack_v: np.ndarray, start_s: float
) -> dict[str, np.ndarray]:
    """RTT from TSecr: an ACK that advances the cumulative ACK, minus when its echoed TSval was
    first sent on a data segment (RFC 7323 section 4)."""
    first: dict[int, float] = {}
    for p in segs:
        if p.tsval is not None:
            first.setdefault(p.tsval, p.time_s)
    times, rtts = [], []
    highest = -1
    for p, a in zip(acks, ack_v, strict=True):
        if a > highest:
            if highest >= 0 and p.tsecr in first:
                times.append(p.time_s - start_s)
                rtts.append(p.time_s - first[p.tsecr])
            highest = a
    return {"time_s": np.array(times), "rtt_s": np.array(rtts)}


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
    rtt_method: str = "karn",
    span: tuple[float, float] | None = None,
    min_rto_s: float = MIN_RTO_S,
) -> Connection:
    """Build the per-connection series from data segments and ACKs (both time-ordered).

    ``retransmission`` defaults to "starts below the highest sequence number sent so far".
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
    karn = _karn_rtt(seg_t, seq, lens, retransmission, ack_t, ack)
    if rtt is None or not len(rtt["rtt_s"]):
        rtt, rtt_method = karn, "karn"
    timeouts = _timeouts(seg_t, seq, retransmission, ack_t, ack, rtt, min_rto_s)
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
        timeouts_s=timeouts,
        outstanding=_outstanding(seg_t, seq + lens, ack_t, ack),
        goodput=_goodput(ack_t, ack, t0, t1),
        delivered_bytes=delivered,
        duration_s=float(t1 - t0),
    )


def _karn_rtt(
    seg_t: np.ndarray,
    seq: np.ndarray,
    lens: np.ndarray,
    retx: np.ndarray,
    ack_t: np.ndarray,
    ack: np.ndarray,
) -> dict[str, np.ndarray]:
    """RTT samples after Karn: an ACK that advances the cumulative ACK to exactly the end of a
    segment sent once gives a sample, unless any byte below the ACK was retransmitted between
    that segment's transmission and the ACK (a hole being filled would inflate the sample)."""
    ends = seq + lens
    sent_once: dict[int, float] = {}
    ambiguous: set[int] = set()
    for t, e, r in zip(seg_t, ends, retx, strict=True):
        if r or e in sent_once:
            ambiguous.add(int(e))
        sent_once.setdefault(int(e), float(t))
    retx_t = seg_t[retx]
    retx_seq = seq[retx]
    times, rtts = [], []
    highest = -1
    for t, a in zip(ack_t, ack, strict=True):
        a = int(a)
        if a <= highest:
            continue
        highest = a
        sent = sent_once.get(a)
        if sent is None or a in ambiguous or t < sent:
            continue
        lo, hi = bisect_right(retx_t, sent), bisect_left(retx_t, t)
        if hi > lo and (retx_seq[lo:hi] < a).any():
            continue
        times.append(float(t))
        rtts.append(float(t - sent))
    return {"time_s": np.array(times), "rtt_s": np.array(rtts)}


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
    10-12), as bit/s; windows start at the connection's first packet."""
    if len(ack):
        highest = np.maximum.accumulate(np.maximum(ack, 0))
    else:
        highest = np.zeros(0, dtype=np.int64)
    out = {}
    for w in GOODPUT_WINDOWS_S:
        n = int((t1 - t0) // w)
        edges = t0 + w * np.arange(n + 1)
        idx = np.searchsorted(ack_t, edges, side="right") - 1
        level = np.where(idx >= 0, highest[np.clip(idx, 0, None)] if len(ack) else 0, 0)
        out[w] = np.diff(level) * 8 / w
    return out


def analyze_result(result: Any, *, min_rto_s: float = MIN_RTO_S) -> list[Connection]:
    """The same :class:`Connection` per flow from a ``farlink.simulate`` Result's traces.

    The retransmission flags and RTT samples are the sender's own (``seq`` and ``rtt`` traces);
    the ``ack`` trace holds the ACKs the sender took in, so no duplicate ACKs are seen.
    """
    seq_tr, ack_tr, rtt_tr = (result.trace(n) for n in ("seq", "ack", "rtt"))
    flows = result.names.get("flows", [])
    out = []
    for f in sorted(set(seq_tr["flow"].tolist())):
        s = seq_tr["flow"] == f
        a = ack_tr["flow"] == f
        r = rtt_tr["flow"] == f
        seg_t = seq_tr["time_ns"][s] / 1e9
        ack_t = ack_tr["time_ns"][a] / 1e9
        out.append(
            build_connection(
                name=flows[f] if f < len(flows) else f"flow {f}",
                source="simulation",
                seg_t=seg_t,
                seq=seq_tr["seq"][s].astype(np.int64),
                lens=seq_tr["len_bytes"][s].astype(np.int64),
                ack_t=ack_t,
                ack=ack_tr["ack"][a].astype(np.int64),
                retransmission=seq_tr["retransmission"][s],
                rtt={
                    "time_s": rtt_tr["time_ns"][r] / 1e9,
                    "rtt_s": rtt_tr["rtt_ns"][r] / 1e9,
                },
                rtt_method="sender",
                span=(0.0, max([*seg_t[-1:], *ack_t[-1:], 0.0])),
                min_rto_s=min_rto_s,
            )
        )
    return out


# The member states of the core's ``member_state`` trace, by code (crates/farlink-core
# src/trace.rs, MEMBER_STATE_NAMES); ``call_lost`` is entered at the instant of a call drop.
MEMBER_STATE_NAMES = (
    "idle",
    "connecting",
    "connected",
    "call_lost",
    "dropped",
    "failed",
    "blocked",
)
_CALL_LOST = MEMBER_STATE_NAMES.index("call_lost")


def call_drop_times_s(result: Any) -> np.ndarray:
    """Times (s) of the call drops of every bundle member in a simulation, from its
    ``member_state`` trace (empty when the scenario has no bundle or the trace is off)."""
    states = result.traces.get("member_state")
    if not states or not len(states["time_ns"]):
        return np.zeros(0)
    lost = states["state"] == _CALL_LOST
    return np.sort(states["time_ns"][lost] / 1e9)


# --------------------------------------------------------------------------------------------
# figures


def plot_connections(
    connections: list[Connection],
    out: str | Path,
    *,
    stem: str = "analysis",
    drops_s: np.ndarray | None = None,
    sim_drops_s: np.ndarray | None = None,
    link_rate_bps: float | None = None,
    title: str | None = None,
    figures: tuple[str, ...] = ("tseq", "rtt", "outstanding", "goodput"),
) -> list[Path]:
    """Draw the connections (of one capture, or a capture beside a simulation) in four PNGs:
    time-sequence (retransmissions marked, call drops as vertical lines: ``drops_s`` from a log
    dashed, ``sim_drops_s`` from a simulation dotted), RTT samples, outstanding data and goodput
    histograms (normalised to ``link_rate_bps`` when given); ``figures`` chooses which of the
    four (by the names ending their files). Returns the paths written."""
    import matplotlib.pyplot as plt

    from farlink import plots  # noqa: F401  (selects the Agg backend)

    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    written = []

    def save(fig: Any, name: str) -> None:
        if name not in figures:
            plt.close(fig)
            return
        path = folder / f"{stem}-{name}.png"
        fig.savefig(path, metadata={"Software": "farlink"})
        plt.close(fig)
        written.append(path)

    fig, ax = plt.subplots(figsize=(7.0, 4.4), dpi=120)
    for i, c in enumerate(connections):
        s = c.seq
        ax.plot(s["time_s"], (s["seq"] + s["len_bytes"]) / 1e3, ".", ms=2, label=f"{c.name} sent")
        rt = s["retransmission"]
        ax.plot(
            s["time_s"][rt],
            (s["seq"][rt] + s["len_bytes"][rt]) / 1e3,
            _RETX_MARKERS[i % len(_RETX_MARKERS)],
            ms=5,
            label=f"{c.name} retransmissions ({rt.sum()})",
        )
        ax.step(c.ack["time_s"], c.ack["ack"] / 1e3, where="post", lw=0.8, label=f"{c.name} ACK")
    for i, t in enumerate(drops_s if drops_s is not None else []):
        ax.axvline(t, color="0.4", ls="--", lw=0.8, label="call drop" if i == 0 else None)
    for i, t in enumerate(sim_drops_s if sim_drops_s is not None else []):
        label = "simulated call drop" if i == 0 else None
        ax.axvline(t, color="tab:purple", ls=":", lw=0.9, label=label)
    ax.set(xlabel="time (s)", ylabel="sequence (KB)", title=title or f"{stem}: time-sequence")
    _finish(ax)
    save(fig, "tseq")

    fig, ax = plt.subplots(figsize=(7.0, 4.4), dpi=120)
    for c in connections:
        ax.plot(c.rtt["time_s"], c.rtt["rtt_s"], ".", ms=3, label=f"{c.name} ({c.rtt_method})")
    ax.set(xlabel="time (s)", ylabel="RTT (s)", title=f"{stem}: RTT samples")
    _finish(ax)
    save(fig, "rtt")

    fig, ax = plt.subplots(figsize=(7.0, 4.4), dpi=120)
    for c in connections:
        ax.step(
            c.outstanding["time_s"],
            c.outstanding["bytes"] / 1e3,
            where="post",
            lw=0.8,
            label=c.name,
        )
    ax.set(xlabel="time (s)", ylabel="outstanding (KB)", title=f"{stem}: outstanding data")
    _finish(ax)
    save(fig, "outstanding")

    fig, axes = plt.subplots(len(GOODPUT_WINDOWS_S), 1, figsize=(7.0, 8.0), dpi=120)
    for ax, w in zip(axes, GOODPUT_WINDOWS_S, strict=True):
        _goodput_panel(ax, connections, w, link_rate_bps)
    axes[0].set_title(f"{stem}: goodput histograms", fontsize=10)
    fig.tight_layout()
    save(fig, "goodput")
    return written


# Retransmission markers, one style per connection so a capture and a simulation drawn together
# stay apart (red crosses first, as tcptrace draws them).
_RETX_MARKERS = ("rx", "k+", "m1", "c2")


def _goodput_panel(
    ax: Any, connections: list[Connection], w: float, link_rate_bps: float | None
) -> None:
    """One histogram panel: goodput over windows of ``w`` seconds, in kbit/s or normalised."""
    drawn = False
    for c in connections:
        g = c.goodput[w]
        if not len(g):
            continue
        label = f"{c.name} ({len(g)} windows)"
        if link_rate_bps:
            # Fractions of the windows, so a capture and a longer simulation compare.
            counts = normalized_histogram(g / link_rate_bps)
            ax.stairs(counts / len(g), NORMALIZED_BIN_EDGES, fill=True, alpha=0.5, label=label)
        else:
            ax.hist(g / 1e3, bins=30, alpha=0.6, label=label)
        drawn = True
    if not drawn:
        ax.text(0.5, 0.5, "no complete window", ha="center", va="center", transform=ax.transAxes)
    if link_rate_bps:
        rate = f"{link_rate_bps / 1e3:g} kbit/s"
        ax.set(
            xlabel=f"goodput over {w:g} s windows / link rate ({rate})",
            ylabel="share of windows",
            xlim=(0.0, 1.0),
        )
    else:
        ax.set(xlabel=f"goodput over {w:g} s windows (kbit/s)", ylabel="windows")
    _finish(ax, legend=drawn)


def _finish(ax: Any, legend: bool = True) -> None:
    ax.grid(True, alpha=0.3)
    ax.title.set_fontsize(10)
    if legend:
        ax.legend(fontsize=7)
