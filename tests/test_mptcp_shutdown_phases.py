"""bench/mptcp_shutdown.py's phases of a Multipath TCP run (docs/multipath.md, "The kernel's
share without drops"), without an emulation: the DSS option's fields, the connection-level
copies and the receive window read from a small capture written here, and the split of the
simulator's run into its phases adding up to its share of the summed rate."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import dpkt
import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
RECEIVER = bytes([10, 0, 0, 2])
PORT = 5000
MSS = 1000


def load():
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))  # mptcp_shutdown imports validate_mptcp by name
    spec = importlib.util.spec_from_file_location("mptcp_shutdown", BENCH / "mptcp_shutdown.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["mptcp_shutdown"] = module  # its dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


def option(kind: int, body: bytes) -> bytes:
    return bytes([kind, 2 + len(body)]) + body


def padded(options: bytes) -> bytes:
    return options + b"\x01" * (-len(options) % 4)


def dss_mapping(dsn: int, ssn: int, length: int) -> bytes:
    """RFC 8684 sec. 3.3: subtype 2, flags M and m (a mapping with an 8-byte DSN)."""
    body = bytes([2 << 4, 0x04 | 0x08]) + dsn.to_bytes(8, "big")
    return option(30, body + ssn.to_bytes(4, "big") + length.to_bytes(2, "big"))


def dss_ack(data_ack: int) -> bytes:
    """Subtype 2, flags A and a (an 8-byte data ACK)."""
    return option(30, bytes([2 << 4, 0x01 | 0x02]) + data_ack.to_bytes(8, "big"))


def packet(src: bytes, sport: int, dst: bytes, dport: int, **tcp) -> bytes:
    opts = padded(tcp.pop("opts", b""))
    segment = dpkt.tcp.TCP(sport=sport, dport=dport, opts=opts, **tcp)
    segment.off = (20 + len(opts)) // 4
    ip = dpkt.ip.IP(src=src, dst=dst, p=dpkt.ip.IP_PROTO_TCP, data=segment)
    ip.len = 20 + len(bytes(segment))
    return bytes(ip)


def sender_capture(path: Path) -> None:
    """Two subflows (members 0 and 1) of a connection: each sends 1000 bytes of its own, then
    member 1 sends member 0's again (a connection-level copy) and member 0 its own again (a
    subflow's retransmission); the receiver's window is full from 2 s to 7 s."""
    members = {0: (bytes([10, 0, 0, 1]), 40000, 100), 1: (bytes([10, 1, 0, 1]), 40001, 200)}
    syn, ack, push = dpkt.tcp.TH_SYN, dpkt.tcp.TH_ACK, dpkt.tcp.TH_PUSH | dpkt.tcp.TH_ACK
    data = b"x" * MSS

    def send(k, relative, dsn):
        src, port, isn = members[k]
        return packet(
            src,
            port,
            RECEIVER,
            PORT,
            seq=isn + relative,
            flags=push,
            data=data,
            opts=dss_mapping(dsn, relative, MSS),
        )

    def answer(k, data_ack, window):
        src, port, _ = members[k]
        return packet(RECEIVER, PORT, src, port, flags=ack, win=window, opts=dss_ack(data_ack))

    rows = []
    for src, port, isn in members.values():
        rows.append((0.0, packet(src, port, RECEIVER, PORT, seq=isn, flags=syn)))
        rows.append(
            (
                0.1,
                packet(
                    RECEIVER,
                    PORT,
                    src,
                    port,
                    flags=syn | ack,
                    opts=option(dpkt.tcp.TCP_OPT_WSCALE, bytes([1])),
                ),
            )
        )
    rows += [
        (1.0, send(0, 1, 0)),
        (1.0, send(1, 1, MSS)),
        (2.0, answer(0, 0, 1000)),  # 0 + 1000 << 1 = 2000: all sent, window full
        (3.0, send(1, 1 + MSS, 0)),  # the connection's first 1000 bytes again
        (4.0, send(0, 1, 0)),  # member 0's own segment again
        (7.0, answer(1, 2 * MSS, 1000)),  # window open again
    ]
    with open(path, "wb") as f:
        writer = dpkt.pcap.Writer(f, linktype=dpkt.pcap.DLT_RAW)
        for at_s, buf in rows:
            writer.writepkt(buf, ts=1000.0 + at_s)


def test_dss_fields_are_read_as_rfc_8684_lays_them_out():
    m = load()
    alone = dss_ack(0x1_0000_0005)  # a data ACK alone: no mapping
    assert m.data_mapping(alone) is None
    assert m.data_ack(alone) == (0x1_0000_0005, 8)
    assert m.data_mapping(padded(dss_mapping(7 << 40, 1449, 1424))) == (7 << 40, 1449)
    # MP_CAPABLE (subtype 0) carries no mapping of this form.
    assert m.data_mapping(option(30, bytes([0x01, 0x81]) + bytes(8))) is None


def test_covered_ranges_count_what_was_sent_before():
    m = load()
    covered: list[tuple[int, int]] = []
    assert m.add_covered(covered, 0, 10) == 0
    assert m.add_covered(covered, 20, 30) == 0
    assert m.add_covered(covered, 5, 25) == 10
    assert m.add_covered(covered, 0, 40) == 30
    assert covered == [(0, 40)]


def test_a_copy_and_a_full_window_are_read_from_the_sender_s_capture(tmp_path):
    m = load()
    capture = tmp_path / "Summit.pcap"
    sender_capture(capture)
    copies = m.connection_copies(capture)
    # Member 1's copy of member 0's bytes counts; member 0 sending its own again does not.
    assert [(round(at - 1000.0, 3), k, n) for at, k, n in copies] == [(3.0, 1, MSS)]
    assert m.window_limited_s(capture, MSS) == pytest.approx(5.0)


def test_the_simulator_s_phases_add_up_to_its_share():
    m = load()
    run = m.simulated_run("autotuned", "acknowledged", "1MB", 1)
    flow = run.summary["flows"][0]
    ph = m.phases(m.simulated_timeline(run), flow["bottleneck_bps"], flow["delivered_bytes"])
    assert ph["overall"] == pytest.approx(flow["normalized_goodput"])
    lost = ph["lost_start"] + ph["lost_active"] + ph["lost_end"] + ph["lost_copies"]
    assert ph["ceiling"] - lost == pytest.approx(ph["overall"])
    # 1448 bytes in 1500 on the line, each 27-byte frame sent 1 + p + p^2 times (p = 1.3 %).
    assert ph["ceiling"] == pytest.approx(1448 / 1500 / (1 + 0.013 + 0.013**2))
    # The subflows carried at least what was delivered: the ACKs that come back after the run's
    # end (it ends with the transfer) are counted too.
    assert ph["lost_copies"] >= -1e-9
    assert 0 < ph["start_s"] < ph["steady_end_s"] <= ph["last_done_s"] <= ph["end_s"]
