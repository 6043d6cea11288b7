"""Captures built byte by byte for the hostile-input tests and the fuzzer: many one-packet
connections (pcap), and pcapng files with several interfaces and sections."""

from __future__ import annotations

import struct

PCAPNG_BOM = 0x1A2B3C4D


def one_packet_connections_pcap(count: int, payload_bytes: int = 20) -> bytes:
    """A well-formed µs pcap (raw IPv4) of ``count`` TCP connections of one data segment
    each, from ``count`` different source addresses to one server, a millisecond apart."""
    out = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 101)]
    payload = b"x" * payload_bytes
    for i in range(count):
        tcp = struct.pack("!HHIIHHHH", 1024 + i % 60000, 80, 1000, 0, (5 << 12) | 0x18, 65535, 0, 0)
        src = bytes([10, (i >> 16) & 255, (i >> 8) & 255, i & 255])
        total = 20 + len(tcp) + len(payload)
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, total, 0, 0, 64, 6, 0, src, b"\x0a\xff\x00\x01")
        frame = ip + tcp + payload
        stamp = struct.pack("<IIII", 1_700_000_000 + i // 1000, (i % 1000) * 1000, total, total)
        out.append(stamp + frame)
    return b"".join(out)


def block(kind: int, body: bytes, order: str = "<") -> bytes:
    """A pcapng block: type, length, the body padded to 32 bits, the length again."""
    body += b"\0" * (-len(body) % 4)
    length = 12 + len(body)
    return struct.pack(order + "II", kind, length) + body + struct.pack(order + "I", length)


def section_header(order: str = "<") -> bytes:
    return block(0x0A0D0D0A, struct.pack(order + "IHHq", PCAPNG_BOM, 1, 0, -1), order)


def interface(linktype: int, tsresol: int | None = None, order: str = "<") -> bytes:
    """An Interface Description Block; ``tsresol`` the ``if_tsresol`` option's byte (9: ns)."""
    body = struct.pack(order + "HHI", linktype, 0, 262144)
    if tsresol is not None:
        body += struct.pack(order + "HH", 9, 1) + bytes([tsresol, 0, 0, 0])
    return block(1, body + struct.pack(order + "HH", 0, 0), order)


def packet(iface: int, ticks: int, frame: bytes, order: str = "<") -> bytes:
    """An Enhanced Packet Block on interface ``iface``, its time in the interface's ticks."""
    head = struct.pack(
        order + "IIIII", iface, ticks >> 32, ticks & 0xFFFFFFFF, len(frame), len(frame)
    )
    return block(6, head + frame, order)


def ethernet(ip: bytes) -> bytes:
    return b"\x04" * 6 + b"\x02" * 6 + b"\x08\x00" + ip
