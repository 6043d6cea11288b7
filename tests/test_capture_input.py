"""Captures people bring and captures that are hostile: link layers, clock steps, bounds.

The traffic is a simulation's pcap (raw IP, ns stamps) rewritten record by record: into
802.1Q-tagged Ethernet or Linux cooked v2 frames, with timestamps stepped, or cut.
"""

import contextlib
import io
import json
import struct
from pathlib import Path

import dpkt
import numpy as np
import pytest

from farlink import simulate
from farlink.captures.analysis import CaptureError, analyze_capture, read_capture
from farlink.captures.fit import PathFit, checked_scenario_toml, fit_path
from farlink.captures.loss import LossEstimate
from farlink.captures.read import MAX_FORWARD_JUMP_S
from farlink.cli.app import main


@pytest.fixture(scope="module")
def sim_pcap() -> bytes:
    doc = {
        "name": "input-chain",
        "seed": 3,
        "duration": "30s",
        "nodes": ["S", "R", "D"],
        "links": [
            {"name": "S-R", "a": "S", "b": "R", "rate": "10Mbps", "delay": "1ms"},
            {
                "name": "R-D",
                "a": "R",
                "b": "D",
                "rate": "1Mbps",
                "delay": "20ms",
                "queue_pkts": 20,
                "fwd": {"loss": {"model": "bernoulli", "p": 0.02}},
            },
        ],
        "flows": [{"name": "f", "from": "S", "to": "D", "app": {"kind": "bulk", "size": "200KB"}}],
        "pcap": ["S-R"],
    }
    return simulate(doc).pcap["S-R"]


def records(data: bytes) -> list[tuple[int, int, bytes]]:
    """(seconds, nanoseconds, frame) of each record of a little-endian ns pcap."""
    out, pos = [], 24
    while pos < len(data):
        sec, frac, incl, _ = struct.unpack_from("<IIII", data, pos)
        out.append((sec, frac, data[pos + 16 : pos + 16 + incl]))
        pos += 16 + incl
    return out


def pcap(recs: list[tuple[int, int, bytes]], linktype: int) -> bytes:
    head = struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 262144, linktype)
    body = b"".join(struct.pack("<IIII", s, f, len(b), len(b)) + b for s, f, b in recs)
    return head + body


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def test_vlan_ethernet_and_cooked_v2_read_as_raw_ip(sim_pcap, tmp_path):
    recs = records(sim_pcap)
    eth = [
        (
            s,
            f,
            b"\x02" * 6 + b"\x04" * 6 + b"\x81\x00\x00\x2a" + b"\x88\xa8\x00\x07" + b"\x08\x00" + b,
        )
        for s, f, b in recs
    ]
    # SLL2: protocol, reserved, ifindex, ARPHRD, packet type, address length, address (8).
    sll2 = [
        (s, f, b"\x08\x00" + b"\0\0" + b"\0\0\0\3" + b"\0\1" + b"\4" + b"\6" + b"\0" * 8 + b)
        for s, f, b in recs
    ]
    _, (raw,) = analyze_capture(write(tmp_path, "raw.pcap", sim_pcap))
    for name, linktype, frames in (("vlan", 1, eth), ("sll2", 276, sll2)):
        cap, (conn,) = analyze_capture(write(tmp_path, f"{name}.pcap", pcap(frames, linktype)))
        assert cap.linktype == linktype and not cap.warnings, name
        assert conn.retransmissions == raw.retransmissions > 0, name
        assert np.array_equal(conn.rtt["rtt_s"], raw.rtt["rtt_s"]), name


def test_not_a_capture_of_endless_zeros_stops_at_once(tmp_path):
    code, _, err = cli("analyze", "/dev/zero", "--out", str(tmp_path))
    assert code == 2 and err.count("\n") == 1
    assert err.startswith("farlink: error: /dev/zero: not a capture (first bytes 00000000)")


def test_reading_is_bounded_in_records_and_packets(sim_pcap, tmp_path):
    path = write(tmp_path, "s.pcap", sim_pcap)
    cap = read_capture(path, max_records=50)
    assert cap.records == 50 and "stopped after 50 records" in cap.warnings[0]
    cap = read_capture(path, max_packets=30)
    assert len(cap.packets) == 30 and "stopped after 30 TCP segments" in cap.warnings[0]
    # Records of zero length and zero time after a valid header: counted, nothing kept.
    zeros = pcap([(0, 0, b"")] * 1000, 101)
    cap = read_capture(write(tmp_path, "z.pcap", zeros))
    assert cap.records == 1000 and not cap.packets and cap.skipped["non_ip"] == 1000


@pytest.mark.parametrize(
    ("where", "sec"),
    [("jump", 0xFFFFFFFF), ("backwards", 0), ("jump-first", 0xFFFFFFFF)],
)
def test_clock_steps_are_warned_and_kept_out_of_rtt_and_duration(sim_pcap, tmp_path, where, sec):
    recs = records(sim_pcap)
    _, (clean,) = analyze_capture(write(tmp_path, "clean.pcap", sim_pcap))
    i = 0 if where == "jump-first" else len(recs) // 2
    _, f0, b0 = recs[i]
    recs[i] = (sec, f0, b0)
    path = write(tmp_path, "stepped.pcap", pcap(recs, 101))
    cap, (conn,) = analyze_capture(path)
    (warning,) = cap.warnings
    assert "clock stepped" in warning
    # One absurd record in the middle is a step away and a step back; a first record far
    # ahead makes the second one a step backwards.
    if where == "jump-first":
        assert "1 timestamps went backwards, 0 jumped ahead" in warning
    else:
        assert "1 timestamps went backwards, 1 jumped ahead" in warning
    assert conn.rtt["rtt_s"].min() >= 0
    assert conn.duration_s <= clean.duration_s + 1e-6
    assert conn.retransmissions == clean.retransmissions
    summary = conn.summary()
    assert summary["goodput_bps"] >= 0.9 * clean.summary()["goodput_bps"]
    # fit writes a scenario the core accepts, and says why it distrusted the clock.
    out = tmp_path / "fit.toml"
    code, _, err = cli("fit", str(path), "--out", str(out))
    assert code == 0 and f"farlink: warning: {path}: " in err and "clock stepped" in err
    assert "delay_s = -" not in out.read_text()


def test_a_record_stamped_microseconds_early_is_reordering_not_a_clock_step(sim_pcap, tmp_path):
    # Packets timestamped on different CPUs: one record 0.5 µs before the one ahead of it.
    recs = records(sim_pcap)
    i = len(recs) // 2
    before_ns = recs[i - 1][0] * 1_000_000_000 + recs[i - 1][1]
    early_ns = before_ns - 500
    recs[i] = (early_ns // 1_000_000_000, early_ns % 1_000_000_000, recs[i][2])
    cap = read_capture(write(tmp_path, "reordered.pcap", pcap(recs, 101)))
    (warning,) = cap.warnings
    assert "1 records stamped before the record ahead of them, by up to 0.5 µs" in warning
    assert cap.clock_steps == {"backwards": 0, "jumps": 0}
    times = [p.time_s for p in cap.packets]
    assert times == sorted(times) and all(p.time_ok for p in cap.packets)
    # Every other record keeps its own time: the clock other tools read.
    clean = read_capture(write(tmp_path, "clean.pcap", sim_pcap))
    moved = [a.time_s != b.time_s for a, b in zip(cap.packets, clean.packets, strict=True)]
    assert sum(moved) == 1
    # Beyond the bound it is a clock step, as before.
    late_ns = before_ns - int(2e6)
    recs[i] = (late_ns // 1_000_000_000, late_ns % 1_000_000_000, recs[i][2])
    cap = read_capture(write(tmp_path, "stepped.pcap", pcap(recs, 101)))
    assert cap.clock_steps["backwards"] == 1 and cap.reordered == 0


def test_pcapng_whose_timestamps_span_ages_is_read_in_bounded_memory(sim_pcap, tmp_path):
    buf = io.BytesIO()
    writer = dpkt.pcapng.Writer(buf, linktype=101)
    for k, (s, f, b) in enumerate(records(sim_pcap)):
        ts = 1.0 if k == 3 else 1.7e9 + s + f * 1e-9  # one record from 1970
        writer.writepkt(b, ts=ts)
    cap, (conn,) = analyze_capture(write(tmp_path, "ages.pcapng", buf.getvalue()))
    assert cap.clock_steps == {"backwards": 1, "jumps": 1}
    assert conn.duration_s < MAX_FORWARD_JUMP_S
    assert all(len(g) < 100 for g in conn.goodput.values())


def test_fit_of_a_capture_cut_mid_record_warns_as_analyze_does(sim_pcap, tmp_path):
    path = write(tmp_path, "cut.pcap", sim_pcap[: len(sim_pcap) * 2 // 3 + 5])
    code, out, err = cli("fit", str(path), "--out", str(tmp_path / "f.toml"), "--json")
    assert code == 0
    (line,) = err.splitlines()
    assert line.startswith(f"farlink: warning: {path}: ") and "cut short" in line
    assert json.loads(out)["loss_rate"] >= 0


def test_fit_refuses_a_path_the_core_refuses(sim_pcap, tmp_path):
    fit = fit_path(write(tmp_path, "s.pcap", sim_pcap))
    checked_scenario_toml(fit, "fine")  # the real fit is accepted
    zero_rate = PathFit(**{**fit.__dict__, "rate_bps": 0.0})
    with pytest.raises(ValueError, match="not a valid scenario") as err:
        checked_scenario_toml(zero_rate, "bad")
    assert "rate" in str(err.value)


def test_loss_estimate_defaults_keep_old_fields():
    est = LossEstimate(10, 9, 1, 1, 0, 0, 0.1)
    assert est.lost_before_tap == 1 and est.loss_rate_after_tap == 0.0


def test_a_folder_is_not_a_capture(tmp_path):
    with pytest.raises(CaptureError, match="cannot read the file"):
        read_capture(tmp_path)


def test_goodput_windows_are_bounded_for_a_capture_of_years():
    from farlink.captures.analysis import MAX_GOODPUT_WINDOWS, build_connection

    # Two packets a decade apart with nothing wrong with the clock between them.
    conn = build_connection(
        name="decade",
        source="test",
        seg_t=np.array([0.0]),
        seq=np.array([0]),
        lens=np.array([1000]),
        ack_t=np.array([3.2e9]),
        ack=np.array([1000]),
    )
    assert len(conn.goodput[10.0]) == MAX_GOODPUT_WINDOWS
