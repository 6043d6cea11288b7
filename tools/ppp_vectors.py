"""Writes tests/data/ppp_vectors.json: PPP frames built independently of farlink's Rust codecs.

The address, control, protocol and LCP fields come from scapy's PPP layers; octet stuffing and
the frame check sequences are written here straight from RFC 1662 (section 4.2 and appendix C:
FCS-16 bit by bit, FCS-32 with zlib's CRC-32, which is the same polynomial and conventions); the
multilink headers from RFC 1990 section 3. The Rust tests (crates/farlink-linkmgr/tests/
ppp_vectors.rs) check the link manager's encoders and decoders against this file.

Run: .venv/bin/python tools/ppp_vectors.py
"""

from __future__ import annotations

import json
import random
import struct
import zlib
from pathlib import Path

from scapy.layers.ppp import (
    HDLC,
    PPP,
    PPP_IPCP,
    PPP_IPCP_Option_DNS1,
    PPP_IPCP_Option_IPAddress,
    PPP_LCP_ACCM_Option,
    PPP_LCP_Configure,
    PPP_LCP_Echo,
    PPP_LCP_Magic_Number_Option,
    PPP_LCP_MRU_Option,
    PPP_LCP_Option,
    PPP_LCP_Terminate,
)

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "ppp_vectors.json"
LCP = 0xC021
IPCP = 0x8021
MP = 0x003D


def fcs16(data: bytes) -> int:
    """RFC 1662 appendix C.2, bit by bit: reflected polynomial x^16 + x^12 + x^5 + 1."""
    fcs = 0xFFFF
    for octet in data:
        fcs ^= octet
        for _ in range(8):
            fcs = (fcs >> 1) ^ 0x8408 if fcs & 1 else fcs >> 1
    return fcs ^ 0xFFFF


def stuff(data: bytes, accm: int) -> bytes:
    out = bytearray()
    for octet in data:
        if octet in (0x7E, 0x7D) or (octet < 0x20 and accm >> octet & 1):
            out += bytes([0x7D, octet ^ 0x20])
        else:
            out.append(octet)
    return bytes(out)


def content(protocol: int, info: bytes, acfc: bool, pfc: bool) -> bytes:
    """Address, control and protocol from scapy, compressed as RFC 1661 sections 6.5/6.6 say."""
    full = bytes(HDLC() / PPP(proto=protocol)) + info
    assert full[:2] == b"\xff\x03" and full[2:4] == struct.pack(">H", protocol)
    lcp = protocol == LCP
    head = b"" if acfc and not lcp else full[:2]
    proto = full[3:4] if pfc and not lcp and protocol < 0x100 else full[2:4]
    return head + proto + info


def frame(protocol: int, info: bytes, accm: int, acfc: bool, pfc: bool, fcs: int) -> bytes:
    body = content(protocol, info, acfc, pfc)
    if fcs == 16:
        trailer = struct.pack("<H", fcs16(body))
    else:
        trailer = struct.pack("<I", zlib.crc32(body))
    return b"\x7e" + stuff(body + trailer, accm) + b"\x7e"


def mp_header(fmt: str, begin: bool, end: bool, seq: int) -> bytes:
    flags = (0x80 if begin else 0) | (0x40 if end else 0)
    if fmt == "long":
        return bytes([flags]) + (seq & 0xFFFFFF).to_bytes(3, "big")
    return ((flags << 8) | (seq & 0x0FFF)).to_bytes(2, "big")


def lcp_packets() -> list[dict]:
    mp_options = [
        PPP_LCP_MRU_Option(max_recv_unit=1500),
        PPP_LCP_ACCM_Option(accm=0x000A0000),
        PPP_LCP_Magic_Number_Option(magic_number=0x1A2B3C4D),
        PPP_LCP_Option(type=17, data=struct.pack(">H", 1600)),  # MRRU (RFC 1990 5.1.1)
        PPP_LCP_Option(type=18),  # Short Sequence Number Header Format (5.1.2)
        PPP_LCP_Option(type=19, data=b"\x03" + bytes.fromhex("020000c0ffee")),  # class 3: MAC
    ]
    cases = [
        ("configure_request_mp", PPP_LCP_Configure(code=1, id=1, options=mp_options)),
        ("configure_ack_mp", PPP_LCP_Configure(code=2, id=1, options=mp_options)),
        (
            "configure_nak_mru",
            PPP_LCP_Configure(code=3, id=2, options=[PPP_LCP_MRU_Option(max_recv_unit=1200)]),
        ),
        (
            "configure_reject_ssnhf",
            PPP_LCP_Configure(code=4, id=3, options=[PPP_LCP_Option(type=18)]),
        ),
        ("terminate_request", PPP_LCP_Terminate(code=5, id=4, data=b"bye")),
        ("terminate_ack", PPP_LCP_Terminate(code=6, id=4)),
        ("echo_request", PPP_LCP_Echo(code=9, id=5, magic_number=0x1A2B3C4D, data=b"ping")),
        ("echo_reply", PPP_LCP_Echo(code=10, id=5, magic_number=0x0BADF00D)),
    ]
    return [{"name": name, "packet_hex": bytes(pkt).hex()} for name, pkt in cases]


def ipcp_packets() -> list[dict]:
    """RFC 1332 packets as scapy builds them, and what farlink's IPCP must answer."""
    addr = PPP_IPCP_Option_IPAddress
    cases = [
        ("configure_request", PPP_IPCP(code=1, id=1, options=[addr(data="10.9.0.1")])),
        ("configure_ack", PPP_IPCP(code=2, id=1, options=[addr(data="10.9.0.1")])),
        # A pppd-like peer asking for an address and a DNS server...
        (
            "request_address_and_dns",
            PPP_IPCP(code=1, id=7, options=[addr(data="0.0.0.0"), PPP_IPCP_Option_DNS1()]),
        ),
        # ...is refused the DNS option first,
        ("reject_dns", PPP_IPCP(code=4, id=7, options=[PPP_IPCP_Option_DNS1()])),
        ("request_address", PPP_IPCP(code=1, id=8, options=[addr(data="0.0.0.0")])),
        # then offered the address we hold for it.
        ("nak_address", PPP_IPCP(code=3, id=8, options=[addr(data="10.9.0.2")])),
    ]
    return [{"name": name, "packet_hex": bytes(pkt).hex()} for name, pkt in cases]


def bond_frames() -> dict:
    """The first frames a bundle endpoint sends: LCP's request on a member before anything is
    negotiated (every control character escaped, no compression), and IPCP's request inside
    one MP fragment once LCP agreed ACCM 0, ACFC and PFC (RFC 1990 section 3)."""
    lcp = PPP_LCP_Configure(
        code=1,
        id=1,
        options=[
            PPP_LCP_MRU_Option(max_recv_unit=1500),
            PPP_LCP_ACCM_Option(accm=0),
            PPP_LCP_Magic_Number_Option(magic_number=0x5EED0001),
            PPP_LCP_Option(type=7),  # Protocol-Field-Compression
            PPP_LCP_Option(type=8),  # Address-and-Control-Field-Compression
            PPP_LCP_Option(type=17, data=struct.pack(">H", 1500)),  # MRRU
            PPP_LCP_Option(type=19, data=b"\x01\x01"),  # Endpoint Discriminator, class 1
        ],
    )
    ipcp = PPP_IPCP(code=1, id=1, options=[PPP_IPCP_Option_IPAddress(data="10.9.0.1")])
    fragment = mp_header("long", True, True, 0) + bytes(PPP(proto=IPCP) / ipcp)
    return {
        "lcp_request_wire_hex": frame(LCP, bytes(lcp), 0xFFFFFFFF, False, False, 16).hex(),
        "ipcp_request_wire_hex": frame(MP, fragment, 0, True, True, 16).hex(),
    }


def build() -> dict:
    rng = random.Random(1662)
    hdlc = []
    payloads = [b"", bytes(range(256)), b"\x7e\x7d\x11\x13\x00" * 4, rng.randbytes(1500)]
    setups = [
        (0xFFFFFFFF, False, False, 16),
        (0x00000000, True, True, 16),
        (0x000A0000, True, False, 32),
        (0xFFFFFFFF, False, True, 32),
    ]
    for protocol in (0x0021, 0x003D, 0x0057, LCP):
        for i, info in enumerate(payloads):
            for accm, acfc, pfc, fcs in setups:
                hdlc.append(
                    {
                        "protocol": protocol,
                        "info_hex": info.hex(),
                        "accm": accm,
                        "acfc": acfc,
                        "pfc": pfc,
                        "fcs": fcs,
                        "wire_hex": frame(protocol, info, accm, acfc, pfc, fcs).hex(),
                        "name": f"proto {protocol:#06x} payload {i} accm {accm:#x} fcs-{fcs}",
                    }
                )
    mp = []
    for fmt in ("long", "short"):
        for seq in (0, 1, 0x0FFF, 0x1000, 0xABCDEF, 0xFFFFFF):
            for begin, end in ((True, True), (True, False), (False, False), (False, True)):
                payload = rng.randbytes(rng.randrange(0, 40))
                header = mp_header(fmt, begin, end, seq)
                mp.append(
                    {
                        "format": fmt,
                        "begin": begin,
                        "end": end,
                        "seq": seq % (1 << (24 if fmt == "long" else 12)),
                        "payload_hex": payload.hex(),
                        "info_hex": (header + payload).hex(),
                        "wire_hex": frame(MP, header + payload, 0, True, True, 16).hex(),
                    }
                )
    return {
        "about": "Generated by tools/ppp_vectors.py (scapy + RFC 1662/1990 formats); do not edit.",
        "hdlc": hdlc,
        "mp": mp,
        "lcp": lcp_packets(),
        "ipcp": ipcp_packets(),
        "bond": bond_frames(),
    }


def render() -> str:
    return json.dumps(build(), indent=1) + "\n"


def main() -> None:
    doc = build()
    OUT.write_text(render())
    n = {k: len(doc[k]) for k in ("hdlc", "mp", "lcp", "ipcp")}
    print(
        f"wrote {OUT}: {n['hdlc']} frames, {n['mp']} MP headers, {n['lcp']} LCP packets, "
        f"{n['ipcp']} IPCP packets, {len(doc['bond'])} bundle frames"
    )


if __name__ == "__main__":
    main()
