"""Read a packet capture (pcap, pcapng) as a stream of TCP segments, in bounded memory.

The file is read record by record: memory grows with the TCP segments kept (their headers,
never their payload), not with the file, and the work is bounded by :data:`MAX_RECORDS` records
and :data:`MAX_TCP_PACKETS` segments kept; past either, the rest is ignored with a warning.
pcapng blocks are framed here, each block's length checked against what a record may be
before it is read, so a corrupt length field cannot make the reader allocate gigabytes.

pcapng is read per interface: each Interface Description Block gives its interface's link type
and timestamp resolution (``if_tsresol``) and offset (``if_tsoffset``), and each packet is read
by the interface it names; a new section (Section Header Block) starts a new list of
interfaces and may change the byte order. Packets on an interface whose link type is not one of
the list below are skipped, counted (``skipped["other_link"]``) and named in a warning.

Link layers: raw IP (101, 228, 229 and DLT_RAW's platform values 12 and 14), Ethernet (1) with
any number of 802.1Q/802.1ad tags, Linux cooked capture v1 (113) and v2 (276, what
``tcpdump -i any`` writes); IPv4 and IPv6 (extension headers skipped) carrying TCP.

Timestamps are checked as they come. A record earlier than the one before it by at most
:data:`MAX_REORDER_S` was stamped out of order by the capture itself: a packet socket on a
machine with several CPUs timestamps each packet on the CPU that handles it, and two packets a
microsecond apart can reach the file in the other order. It is placed at the time of the record
before it (it moves by less than that bound) and the records after it keep their own times, so
the capture's clock stays the one other tools read; the warning says how many and by how much.
A record earlier by more, or later by more than :data:`MAX_FORWARD_JUMP_S`, is a clock step (an
absurd seconds field, a capture spliced from two, a clock set while capturing). The packet is
kept for its sequence numbers, placed at the time of the packet before it, and flagged
``time_ok = False`` so that no RTT sample and no duration uses its time; later records keep
their spacing after the step. One warning per kind says how many there were.
"""

from __future__ import annotations

import ipaddress
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

__all__ = [
    "MAX_FORWARD_JUMP_S",
    "MAX_RECORDS",
    "MAX_RECORD_BYTES",
    "MAX_REORDER_S",
    "MAX_TCP_PACKETS",
    "Capture",
    "CaptureError",
    "Packet",
    "read_capture",
]

MAX_RECORD_BYTES = 262_144  # larger than any link's snap length: a record this long is corrupt
MAX_RECORDS = 50_000_000  # about 4 GB of headers-only capture
MAX_TCP_PACKETS = 5_000_000  # about 1 GB of Packet objects
MAX_FORWARD_JUMP_S = 86_400.0  # a day without a packet inside one capture is a clock step
# Packets stamped on different CPUs reach a capture out of order by microseconds (2467
# packets of kernel CUBIC through a tbf, tcpdump on a veth, 2 CPUs: one record 0.48 µs before
# the one ahead of it); a millisecond is far above that and far below any clock step.
MAX_REORDER_S = 0.001

_PCAP_MAGICS = {
    b"\xd4\xc3\xb2\xa1": ("<", 1e-6),
    b"\xa1\xb2\xc3\xd4": (">", 1e-6),
    b"\x4d\x3c\xb2\xa1": ("<", 1e-9),
    b"\xa1\xb2\x3c\x4d": (">", 1e-9),
}
_PCAPNG_MAGIC = b"\x0a\x0d\x0d\x0a"
LINKTYPE_ETHERNET, LINKTYPE_RAW, LINKTYPE_SLL, LINKTYPE_IPV4, LINKTYPE_IPV6 = 1, 101, 113, 228, 229
LINKTYPE_SLL2 = 276
# DLT_RAW's platform values (12, 14) that some writers put in files instead of 101.
_RAW_TYPES = (LINKTYPE_RAW, LINKTYPE_IPV4, LINKTYPE_IPV6, 12, 14)
_SUPPORTED = (LINKTYPE_ETHERNET, LINKTYPE_SLL, LINKTYPE_SLL2, *_RAW_TYPES)
_ETH_IPV4, _ETH_IPV6 = b"\x08\x00", b"\x86\xdd"
_VLAN_TAGS = (b"\x81\x00", b"\x88\xa8", b"\x91\x00")
_IPV6_EXTENSIONS = (0, 43, 60)  # hop-by-hop, routing, destination options
_IPV6_FRAGMENT = 44


class CaptureError(ValueError):
    """A file that cannot be read as a capture; the message names the file and what was wrong."""


@dataclass(frozen=True, slots=True)
class Packet:
    """One TCP segment as captured (addresses as text, time in seconds).

    ``time_ok`` is False for a packet whose timestamp was a clock step (module notes): its time
    is the packet's before it and takes part in no RTT sample.
    """

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
    time_ok: bool = True
    mss: int | None = None  # the MSS option (SYN segments)
    window: int = 0  # the window field as sent (unscaled)
    wscale: int | None = None  # the window-scale option's shift (SYN segments)
    sack_permitted: bool = False  # the SACK-permitted option (SYN segments)

    @property
    def syn(self) -> bool:
        return bool(self.flags & 0x02)

    @property
    def has_ack(self) -> bool:
        return bool(self.flags & 0x10)

    @property
    def psh(self) -> bool:
        return bool(self.flags & 0x08)


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
        default_factory=lambda: {"non_ip": 0, "non_tcp": 0, "malformed": 0}
    )
    # pcapng: each interface's link type, in the order described (pcap: the file's one).
    interfaces: list[int] = field(default_factory=list)
    bytes_ignored: int = 0
    warnings: list[str] = field(default_factory=list)
    start_s: float = 0.0
    epoch_s: float = 0.0
    clock_steps: dict[str, int] = field(default_factory=lambda: {"backwards": 0, "jumps": 0})
    # Records stamped out of order by the capture (module notes), and the largest such step.
    reordered: int = 0
    reordered_max_s: float = 0.0

    @property
    def start_unix_s(self) -> float:
        """The first packet's time on the capture's own clock (POSIX seconds for real captures)."""
        return self.epoch_s + self.start_s


class _Full(Exception):
    """The bounds of the module notes were reached."""


class _Clock:
    """Places each record's time after the one before it (module notes)."""

    def __init__(self) -> None:
        self.offset = 0.0
        self.last: float | None = None

    def place(self, cap: Capture, raw_s: float) -> tuple[float, bool]:
        t = raw_s + self.offset
        if self.last is None:
            self.last = t
            return t, True
        step = t - self.last
        if -MAX_REORDER_S <= step < 0:
            cap.reordered += 1
            cap.reordered_max_s = max(cap.reordered_max_s, -step)
            return self.last, True
        if step < 0 or step > MAX_FORWARD_JUMP_S:
            cap.clock_steps["backwards" if step < 0 else "jumps"] += 1
            self.offset -= step
            return self.last, False
        self.last = t
        return t, True


def read_capture(
    path: str | Path,
    *,
    max_records: int = MAX_RECORDS,
    max_packets: int = MAX_TCP_PACKETS,
) -> Capture:
    """Read a pcap (µs or ns, either byte order) or pcapng file; keep its TCP segments.

    Raises:
        CaptureError: the file cannot be opened, is not a pcap or pcapng capture, or its link
            type is not one of the module notes'.
    """
    source = str(path)
    try:
        f = open(path, "rb")  # closed in the finally below
    except OSError as exc:
        raise CaptureError(f"{source}: cannot read the file ({exc.strerror or exc})") from None
    try:
        magic = f.read(4)
        if magic in _PCAP_MAGICS:
            cap = _Reader(source, f, max_records, max_packets).pcap(magic)
        elif magic == _PCAPNG_MAGIC:
            f.seek(0)
            cap = _Reader(source, f, max_records, max_packets).pcapng()
        else:
            raise CaptureError(
                f"{source}: not a capture (first bytes {magic.hex() or 'none'}); expected pcap "
                "(magic a1b2c3d4 or a1b23c4d, either byte order) or pcapng (0a0d0d0a)"
            )
    except OSError as exc:
        raise CaptureError(f"{source}: cannot read the file ({exc.strerror or exc})") from None
    finally:
        f.close()
    if cap.packets:
        cap.start_s = cap.packets[0].time_s
    if cap.reordered:
        cap.warnings.append(
            f"{source}: {cap.reordered} records stamped before the record ahead of them, by up "
            f"to {cap.reordered_max_s * 1e6:.3g} µs (packets timestamped on different CPUs); "
            "each was placed at the time of the record before it"
        )
    steps = cap.clock_steps
    if steps["backwards"] or steps["jumps"]:
        cap.warnings.append(
            f"{source}: the capture's clock stepped: {steps['backwards']} timestamps went "
            f"backwards, {steps['jumps']} jumped ahead by more than {MAX_FORWARD_JUMP_S:g} s; "
            "those packets were placed at the time of the packet before them and kept out of "
            "RTT samples and durations"
        )
    return cap


def _check_linktype(linktype: int, source: str) -> None:
    if linktype not in _SUPPORTED:
        raise CaptureError(
            f"{source}: link type {linktype} is not supported; expected raw IP (101, 228, 229), "
            "Ethernet (1) or Linux cooked (113, 276)"
        )


_LINKTYPE_NAMES = "raw IP (101, 228, 229), Ethernet (1) or Linux cooked (113, 276)"
_PCAPNG_SHB, _PCAPNG_IDB, _PCAPNG_PB, _PCAPNG_EPB = 0x0A0D0D0A, 1, 2, 6
_PCAPNG_BOM = 0x1A2B3C4D
# The longest pcapng block taken: a packet of the longest record plus its block's header,
# trailer and room for options (comments, flags, hashes).
_MAX_PCAPNG_BLOCK = MAX_RECORD_BYTES + 4096


@dataclass(frozen=True, slots=True)
class _Interface:
    """A pcapng interface: its link type and how its timestamps read as seconds."""

    linktype: int
    ticks_per_s: float
    offset_s: int

    @property
    def supported(self) -> bool:
        return self.linktype in _SUPPORTED


class _Corrupt(Exception):
    """A pcapng block that cannot be read; its message says which."""


class _Reader:
    def __init__(self, source: str, f: BinaryIO, max_records: int, max_packets: int):
        self.source, self.f = source, f
        self.max_records, self.max_packets = max_records, max_packets
        self.clock = _Clock()

    def pcap(self, magic: bytes) -> Capture:
        order, unit = _PCAP_MAGICS[magic]
        head = magic + self.f.read(20)
        if len(head) < 24:
            raise CaptureError(
                f"{self.source}: pcap file header cut short ({len(head)} of 24 bytes)"
            )
        linktype = struct.unpack(order + "I", head[20:24])[0] & 0x0FFFFFFF
        _check_linktype(linktype, self.source)
        cap = Capture(self.source, "pcap-ns" if unit == 1e-9 else "pcap-us", linktype)
        cap.interfaces.append(linktype)
        header = struct.Struct(order + "IIII")
        pos = 24
        try:
            while True:
                rec = self.f.read(16)
                if not rec:
                    break
                if len(rec) < 16:
                    self._cut(cap, pos, f"record {cap.records + 1} header cut short")
                    break
                sec, frac, incl, _orig = header.unpack(rec)
                if incl > MAX_RECORD_BYTES or frac >= (1_000_000 if unit == 1e-6 else 10**9):
                    self._cut(cap, pos, f"record {cap.records + 1} at byte {pos} is corrupt")
                    break
                frame = self.f.read(incl)
                if len(frame) < incl:
                    self._cut(cap, pos, f"record {cap.records + 1} cut short")
                    break
                if cap.records == 0:
                    cap.epoch_s = float(sec)  # times kept relative to it, so nanoseconds survive
                self._record(cap, (sec - cap.epoch_s) + frac * unit, frame)
                pos += 16 + incl
        except _Full as full:
            self._stop(cap, str(full))
        return cap

    def pcapng(self) -> Capture:
        cap = Capture(self.source, "pcapng", 0)
        order, interfaces = "<", []
        # Link types skipped: type -> packets (named in one warning at the end).
        other: dict[int, int] = {}
        pos = 0
        try:
            while True:
                try:
                    block = self._pcapng_block(order)
                except _Corrupt as err:
                    if pos == 0:
                        raise CaptureError(
                            f"{self.source}: pcapng header unreadable ({err})"
                        ) from None
                    self._cut(cap, pos, f"block after packet {cap.records} {err}")
                    break
                if block is None:
                    break
                kind, body, order = block
                pos += 12 + len(body)
                if kind == _PCAPNG_SHB:
                    interfaces = []  # a new section describes its interfaces anew
                elif kind == _PCAPNG_IDB:
                    try:
                        interfaces.append(_interface(body, order))
                    except _Corrupt as err:
                        self._cut(cap, pos - 12 - len(body), f"interface description {err}")
                        break
                    if not cap.interfaces:
                        cap.linktype = interfaces[-1].linktype
                    cap.interfaces.append(interfaces[-1].linktype)
                elif kind in (_PCAPNG_EPB, _PCAPNG_PB):
                    self._pcapng_packet(cap, kind, body, order, interfaces, other)
        except _Full as full:
            self._stop(cap, str(full))
        if not cap.interfaces:
            raise CaptureError(f"{self.source}: pcapng without an interface description block")
        if other:
            cap.skipped["other_link"] = sum(other.values())
            kinds = ", ".join(f"{n} on link type {t}" for t, n in sorted(other.items()))
            cap.warnings.append(
                f"{self.source}: skipped {sum(other.values())} packets on interfaces of a link "
                f"type not supported ({kinds}); supported: {_LINKTYPE_NAMES}"
            )
        return cap

    def _pcapng_block(self, order: str) -> tuple[int, bytes, str] | None:
        """The next block (type, body between length fields, byte order), None at the end."""
        head = self.f.read(8)
        if not head:
            return None
        if len(head) < 8:
            raise _Corrupt("is cut short")
        if head[:4] == _PCAPNG_MAGIC:  # a section header: its byte-order magic comes next
            bom = self.f.read(4)
            if len(bom) < 4:
                raise _Corrupt("is cut short")
            if struct.unpack("<I", bom)[0] == _PCAPNG_BOM:
                order = "<"
            elif struct.unpack(">I", bom)[0] == _PCAPNG_BOM:
                order = ">"
            else:
                raise _Corrupt(f"has an unknown byte-order magic {bom.hex()}")
            head += bom
        kind, length = struct.unpack(order + "II", head[:8])
        if length < 12 + len(head) - 8 or length % 4 or length > _MAX_PCAPNG_BLOCK:
            raise _Corrupt(f"is corrupt (block length {length})")
        rest = self.f.read(length - len(head))
        if len(rest) < length - len(head):
            raise _Corrupt("is cut short")
        body = head[8:] + rest[:-4]
        if struct.unpack(order + "I", rest[-4:])[0] != length:
            raise _Corrupt("is corrupt (its two length fields differ)")
        return kind, body, order

    def _pcapng_packet(
        self,
        cap: Capture,
        kind: int,
        body: bytes,
        order: str,
        interfaces: list[_Interface],
        other: dict[int, int],
    ) -> None:
        """An Enhanced Packet Block (or an obsolete Packet Block) read by its interface."""
        if len(body) < 20:
            self._take_record(cap)
            cap.skipped["malformed"] += 1
            return
        if kind == _PCAPNG_EPB:
            iface, ts_high, ts_low, caplen = struct.unpack_from(order + "IIII", body, 0)
        else:
            iface, _drops, ts_high, ts_low, caplen = struct.unpack_from(order + "HHIII", body, 0)
        frame = body[20 : 20 + caplen]
        if iface >= len(interfaces) or len(frame) < caplen:
            self._take_record(cap)
            cap.skipped["malformed"] += 1
            return
        interface = interfaces[iface]
        if not interface.supported:
            self._take_record(cap)
            other[interface.linktype] = other.get(interface.linktype, 0) + 1
            return
        ticks = (ts_high << 32) | ts_low
        self._record(cap, interface.offset_s + ticks / interface.ticks_per_s, frame, interface)

    def _remaining(self, pos: int) -> int:
        try:
            end = self.f.seek(0, 2)
        except OSError:  # a pipe: its length is not known
            return 0
        return max(end - pos, 0)

    def _cut(self, cap: Capture, pos: int, what: str) -> None:
        ignored = self._remaining(pos)
        cap.bytes_ignored += ignored
        cap.warnings.append(
            f"{cap.source}: {what}; analysed the {cap.records} packets before it and ignored "
            f"the last {ignored} bytes"
        )

    def _stop(self, cap: Capture, what: str) -> None:
        cap.warnings.append(f"{cap.source}: {what}; the rest of the file was not read")

    def _take_record(self, cap: Capture) -> None:
        """Count one more record, or stop at the bound (module notes)."""
        if cap.records >= self.max_records:
            raise _Full(f"stopped after {self.max_records} records")
        cap.records += 1

    def _record(
        self, cap: Capture, raw_s: float, frame: bytes, interface: _Interface | None = None
    ) -> None:
        self._take_record(cap)
        time_s, ok = self.clock.place(cap, raw_s)
        linktype = cap.linktype if interface is None else interface.linktype
        pkt = _tcp_packet(cap, time_s, ok, frame, linktype)
        if pkt is not None:
            if len(cap.packets) >= self.max_packets:
                raise _Full(f"stopped after {self.max_packets} TCP segments")
            cap.packets.append(pkt)


_IF_TSRESOL, _IF_TSOFFSET = 9, 14


def _interface(body: bytes, order: str) -> _Interface:
    """An Interface Description Block's link type, and its ``if_tsresol`` (default 10^-6 s)
    and ``if_tsoffset`` (default 0) options (pcapng, section 4.2)."""
    if len(body) < 8:
        raise _Corrupt("is cut short")
    linktype = struct.unpack_from(order + "H", body, 0)[0]
    ticks_per_s, offset_s = 1e6, 0
    pos = 8
    while pos + 4 <= len(body):
        code, length = struct.unpack_from(order + "HH", body, pos)
        value = body[pos + 4 : pos + 4 + length]
        if code == 0 or len(value) < length:
            break
        if code == _IF_TSRESOL and length >= 1:
            # High bit clear: a negative power of ten; set: a negative power of two.
            exponent = value[0] & 0x7F
            if value[0] & 0x80:
                ticks_per_s = float(2**exponent)
            elif exponent <= 18:
                ticks_per_s = float(10**exponent)
            else:
                raise _Corrupt(f"has a resolution of 10^-{exponent} s, finer than any clock")
        elif code == _IF_TSOFFSET and length >= 8:
            offset_s = struct.unpack_from(order + "q", value, 0)[0]
        pos += 4 + (length + 3) // 4 * 4
    return _Interface(linktype, ticks_per_s, offset_s)


def _ip_payload(linktype: int, frame: bytes) -> bytes | None:
    """The IP datagram in a frame, or None for anything else."""
    if linktype in _RAW_TYPES:
        return frame
    if linktype == LINKTYPE_ETHERNET:
        offset, ethertype = 14, frame[12:14]
        while ethertype in _VLAN_TAGS and len(frame) >= offset + 4:
            ethertype, offset = frame[offset + 2 : offset + 4], offset + 4
    elif linktype == LINKTYPE_SLL:
        offset, ethertype = 16, frame[14:16]
    else:  # LINKTYPE_SLL2: protocol first, 20-byte header
        offset, ethertype = 20, frame[0:2]
    return frame[offset:] if ethertype in (_ETH_IPV4, _ETH_IPV6) else None


def _tcp_packet(
    cap: Capture, time_s: float, ok: bool, frame: bytes, linktype: int
) -> Packet | None:
    ip = _ip_payload(linktype, frame)
    version = ip[0] >> 4 if ip else 0
    if version == 4 and len(ip) >= 20:
        found = _ipv4(cap, ip)
    elif version == 6 and len(ip) >= 40:
        found = _ipv6(cap, ip)
    else:
        cap.skipped["non_ip"] += 1
        return None
    if found is None:
        return None
    src, dst, tcp, tcp_len = found
    if len(tcp) < 20 or tcp_len < 20:
        cap.skipped["malformed"] += 1
        return None
    sport, dport, seq, ack, off_flags, window = struct.unpack_from("!HHIIHH", tcp, 0)
    off = (off_flags >> 12) * 4
    if off < 20 or tcp_len < off:
        cap.skipped["malformed"] += 1
        return None
    opts = _options(tcp[20:off])
    return Packet(
        time_s,
        src,
        dst,
        sport,
        dport,
        seq,
        ack,
        off_flags & 0x1FF,
        tcp_len - off,
        opts.tsval,
        opts.tsecr,
        opts.sack,
        ok,
        opts.mss,
        window,
        opts.wscale,
        opts.sack_permitted,
    )


def _ipv4(cap: Capture, ip: bytes) -> tuple[str, str, bytes, int] | None:
    ihl = (ip[0] & 0x0F) * 4
    frag_offset = struct.unpack_from("!H", ip, 6)[0] & 0x1FFF
    if ip[9] != 6 or frag_offset:
        cap.skipped["non_tcp"] += 1
        return None
    total = struct.unpack_from("!H", ip, 2)[0]
    if ihl < 20 or total < ihl:
        cap.skipped["malformed"] += 1
        return None
    src = ".".join(map(str, ip[12:16]))
    dst = ".".join(map(str, ip[16:20]))
    return src, dst, ip[ihl:], total - ihl


def _ipv6(cap: Capture, ip: bytes) -> tuple[str, str, bytes, int] | None:
    length = struct.unpack_from("!H", ip, 4)[0]  # payload after the fixed header
    nxt, pos = ip[6], 40
    while nxt in _IPV6_EXTENSIONS or nxt == _IPV6_FRAGMENT:
        if len(ip) < pos + 8:
            cap.skipped["malformed"] += 1
            return None
        if nxt == _IPV6_FRAGMENT and struct.unpack_from("!H", ip, pos + 2)[0] & 0xFFF8:
            cap.skipped["non_tcp"] += 1  # not the first fragment: no TCP header
            return None
        size = 8 if nxt == _IPV6_FRAGMENT else (ip[pos + 1] + 1) * 8
        nxt, pos = ip[pos], pos + size
    if nxt != 6:
        cap.skipped["non_tcp"] += 1
        return None
    if length < pos - 40:
        cap.skipped["malformed"] += 1
        return None
    src = str(ipaddress.IPv6Address(ip[8:24]))
    dst = str(ipaddress.IPv6Address(ip[24:40]))
    return src, dst, ip[pos:], length - (pos - 40)


@dataclass
class _Options:
    """The TCP options a segment carried that the analysis reads."""

    tsval: int | None = None
    tsecr: int | None = None
    sack: tuple[tuple[int, int], ...] = ()
    mss: int | None = None
    wscale: int | None = None
    sack_permitted: bool = False


def _options(opts: bytes) -> _Options:
    out = _Options()
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
            out.tsval, out.tsecr = struct.unpack("!II", body)
        elif kind == 5:
            out.sack = tuple(struct.unpack_from("!II", body, j) for j in range(0, len(body) - 7, 8))
        elif kind == 2 and len(body) == 2:
            out.mss = struct.unpack("!H", body)[0]
        elif kind == 3 and len(body) == 1:
            out.wscale = body[0]
        elif kind == 4:
            out.sack_permitted = True
        i += length
    return out
