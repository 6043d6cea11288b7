"""Capture analysis: a simulation's pcap read back, compared with its traces; damaged input.

The scenario is S - R - D with loss on R -> D and the capture tapped on S - R. The tap is
upstream of every loss, so it sees every segment the sender sends: the retransmissions in the
capture are exactly the sender's (the simulator's summary ``retransmissions``). A segment's
capture time is when it enters the link at S, an ACK's when it enters the link at R, so an RTT
seen at the tap is the sender's minus the return delay R -> S (1 ms and a few µs).
"""

import io
import json
import struct
from pathlib import Path
from typing import Any

import dpkt
import numpy as np
import pytest

from farlink import simulate
from farlink.captures.analysis import CaptureError, analyze_capture, read_capture
from farlink.captures.figures import plot_connections
from farlink.captures.simulated import analyze_result, call_drop_times_s
from farlink.cli.app import main

TAP_RETURN_DELAY_S = 0.001


def chain(*, timestamps: bool = True, seed: int = 7) -> dict[str, Any]:
    return {
        "name": "capture-chain",
        "seed": seed,
        "duration": "60s",
        "nodes": ["S", "R", "D"],
        "links": [
            {"name": "S-R", "a": "S", "b": "R", "rate": "10Mbps", "delay": "1ms"},
            {
                "name": "R-D",
                "a": "R",
                "b": "D",
                "rate": "1Mbps",
                "delay": "40ms",
                "queue_pkts": 20,
                "fwd": {"loss": {"model": "bernoulli", "p": 0.03}},
            },
        ],
        "flows": [
            {
                "name": "ftp",
                "from": "S",
                "to": "D",
                "app": {"kind": "bulk", "size": "300KB"},
                "tcp": {"timestamps": timestamps},
            }
        ],
        "trace": {"all": True},
        "pcap": ["S-R"],
    }


@pytest.fixture(scope="module")
def run_ts():
    return simulate(chain())


@pytest.fixture(scope="module")
def run_karn():
    return simulate(chain(timestamps=False, seed=11))


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def raw_packets(result) -> list[tuple[float, bytes]]:
    return [(float(ts), bytes(b)) for ts, b in dpkt.pcap.Reader(io.BytesIO(result.pcap["S-R"]))]


def test_capture_of_a_simulation_matches_its_summary_and_traces(run_ts, tmp_path):
    cap, conns = analyze_capture(write(tmp_path, "s.pcap", run_ts.pcap["S-R"]))
    assert cap.format == "pcap-ns" and cap.linktype == 101 and not cap.warnings
    assert cap.skipped == {"non_ip": 0, "non_tcp": 0, "malformed": 0}
    (conn,) = conns
    flow = run_ts.summary["flows"][0]
    assert flow["retransmissions"] > 0, "the loss was applied"
    assert conn.retransmissions == flow["retransmissions"]
    (sim,) = analyze_result(run_ts)
    assert sim.retransmissions == conn.retransmissions
    assert sim.delivered_bytes == conn.delivered_bytes
    assert 0 < conn.delivered_bytes <= flow["delivered_bytes"] == 300_000
    # The tap sees the same segments, each when it leaves S's queue onto S - R: at or after
    # the time the sender sent it.
    assert np.array_equal(conn.seq["seq"], sim.seq["seq"])
    lag = conn.seq["time_s"] - sim.seq["time_s"]
    assert lag.min() >= -1e-9 and lag.max() < 0.1
    assert np.array_equal(conn.seq["retransmission"], sim.seq["retransmission"])
    assert conn.outstanding["bytes"].max() > 0
    assert conn.sack and any(conn.sack), "SACK blocks are read from the ACKs"


def test_tap_rtt_with_timestamps_is_the_senders_less_the_return_delay(run_ts, tmp_path):
    # The simulator times each ACK against the newest segment it covers, as the tap does (the
    # segment holding the last byte acknowledged); the timestamps only choose between copies.
    _, (conn,) = analyze_capture(write(tmp_path, "s.pcap", run_ts.pcap["S-R"]))
    assert conn.rtt_method == "tap-to-tap karn+timestamps"
    sender = run_ts.trace("rtt")["rtt_ns"] / 1e9
    tap = conn.rtt["rtt_s"] + TAP_RETURN_DELAY_S
    assert len(tap) == pytest.approx(len(sender), rel=0.05)
    assert np.median(tap) == pytest.approx(np.median(sender), abs=0.002)
    assert np.percentile(tap, 95) == pytest.approx(np.percentile(sender, 95), abs=0.002)
    # The sender's RTT estimated from its TSvals (1 ms ticks) adds the wait in S's queue.
    assert conn.sender_rtt_method.startswith("tap-to-tap + wait before the tap from TSval")
    est = conn.sender_rtt["rtt_s"]
    assert np.median(est) == pytest.approx(np.median(sender), abs=0.002)
    assert np.percentile(est, 95) == pytest.approx(np.percentile(sender, 95), abs=0.002)
    assert len(conn.rtt_karn["rtt_s"]) > 0


def test_karn_rtt_without_timestamps_is_close_to_the_senders(run_karn, tmp_path):
    _, (conn,) = analyze_capture(write(tmp_path, "k.pcap", run_karn.pcap["S-R"]))
    assert conn.rtt_method == "tap-to-tap karn" and conn.sender_rtt is None
    assert conn.retransmissions == run_karn.summary["flows"][0]["retransmissions"] > 0
    sender = run_karn.trace("rtt")["rtt_ns"] / 1e9
    assert np.median(conn.rtt["rtt_s"]) + TAP_RETURN_DELAY_S == pytest.approx(
        np.median(sender), abs=0.003
    )
    # Karn's rule: no sample is taken by an ACK for a retransmitted segment's end.
    retx_ends = set((conn.seq["seq"] + conn.seq["len_bytes"])[conn.seq["retransmission"]])
    sampled = conn.ack["ack"][np.searchsorted(conn.ack["time_s"], conn.rtt["time_s"])]
    assert len(sampled) > 10 and not set(sampled.tolist()) & retx_ends


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_detected_timeouts_are_the_senders(seed, tmp_path):
    doc = chain(seed=seed)
    doc["links"][1]["fwd"]["loss"]["p"] = 0.2
    result = simulate(doc)
    _, (conn,) = analyze_capture(write(tmp_path, "t.pcap", result.pcap["S-R"]))
    (sim,) = analyze_result(result)
    flow = result.summary["flows"][0]
    assert flow["timeouts"] > 0
    assert len(conn.timeouts_s) == len(sim.timeouts_s) == flow["timeouts"]
    assert conn.retransmissions == flow["retransmissions"]
    assert conn.delivered_bytes == sim.delivered_bytes


def test_timeout_anatomy_lists_every_timeout_the_sender_took(tmp_path):
    # tools/timeout_anatomy.py, which docs/captures.md reads the heavy cases with: one line per
    # timeout and a count by kind, adding up to the sender's own timeouts.
    import subprocess
    import sys
    from pathlib import Path

    doc = chain(seed=1)
    doc["links"][1]["fwd"]["loss"]["p"] = 0.2
    result = simulate(doc)
    pcap = write(tmp_path, "t.pcap", result.pcap["S-R"])
    tool = Path(__file__).resolve().parent.parent / "tools" / "timeout_anatomy.py"
    out = subprocess.run(
        [sys.executable, str(tool), str(pcap)], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    timeouts = result.summary["flows"][0]["timeouts"]
    rows = [line.split() for line in out[2:-1]]
    assert timeouts > 0 and len(rows) == timeouts
    assert all(float(r[1]) > 0 and int(r[3]) >= 1 for r in rows), "outstanding, copies"
    kinds = [int(part.split()[0]) for part in out[-1].split(", ")]
    assert sum(kinds) == timeouts


def _tool(name: str):
    """A script of tools/ loaded as a module."""
    import importlib.util

    path = Path(__file__).resolve().parent.parent / "tools" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_ack_anatomy_tells_a_delaying_receiver_from_one_that_acks_each_segment(tmp_path):
    # tools/ack_anatomy.py, which docs/captures.md reads the kernel receiver's ACKs with: with
    # no random loss, farlink's receiver covers two segments with nearly every in-order ACK
    # when it delays its ACKs and one when it does not; its segments carry no PSH.
    anatomy = _tool("ack_anatomy").anatomy
    shares = {}
    for delayed in (True, False):
        doc = chain(seed=1)
        doc["links"][1]["fwd"]["loss"]["p"] = 0.0
        doc["flows"][0]["tcp"]["delayed_ack"] = delayed
        pcap = write(tmp_path, f"d{delayed}.pcap", simulate(doc).pcap["S-R"])
        shares[delayed] = anatomy(str(pcap))
    assert shares[True]["acks"] > 50 and shares[False]["acks"] > 80
    assert shares[True]["two_segments"] > 0.9 and shares[True]["one_segment"] < 0.1
    assert shares[False]["one_segment"] > 0.95 and shares[False]["two_segments"] == 0.0
    assert shares[True]["data_segments_with_psh"] == 0.0


def test_truncated_capture_is_analysed_up_to_the_cut(run_ts, tmp_path):
    data = run_ts.pcap["S-R"]
    path = write(tmp_path, "t.pcap", data[: len(data) // 2 + 7])
    cap, conns = analyze_capture(path)
    assert len(cap.warnings) == 1 and "cut short" in cap.warnings[0]
    assert 0 < cap.bytes_ignored < len(data) // 2
    assert conns and conns[0].delivered_bytes > 0
    code, out, err = run_cli(tmp_path, path, "--json")
    assert code == 0
    assert err.count("\n") == 1 and "warning" in err and "ignored the last" in err
    assert json.loads(out)["bytes_ignored"] == cap.bytes_ignored


def test_corrupted_record_stops_the_reading_with_a_warning(run_ts, tmp_path):
    data = bytearray(run_ts.pcap["S-R"])
    pos = 24
    for _ in range(10):  # find the 11th record
        pos += 16 + struct.unpack_from("<I", data, pos + 8)[0]
    struct.pack_into("<I", data, pos + 8, 0x7FFFFFFF)
    cap = read_capture(write(tmp_path, "c.pcap", bytes(data)))
    assert cap.records == 10 and "corrupt" in cap.warnings[0]
    assert cap.bytes_ignored == len(data) - pos


def big_endian(data: bytes) -> bytes:
    """The same little-endian pcap with its file and record headers in big-endian order."""
    out = bytearray(struct.pack(">IHHiIII", *struct.unpack_from("<IHHiIII", data, 0)))
    pos = 24
    while pos < len(data):
        sec, frac, incl, orig = struct.unpack_from("<IIII", data, pos)
        out += struct.pack(">IIII", sec, frac, incl, orig) + data[pos + 16 : pos + 16 + incl]
        pos += 16 + incl
    return bytes(out)


def test_big_endian_nanosecond_pcap_reads_the_same(run_ts, tmp_path):
    _, (ref,) = analyze_capture(write(tmp_path, "s.pcap", run_ts.pcap["S-R"]))
    swapped = big_endian(run_ts.pcap["S-R"])
    assert swapped[:4] == bytes.fromhex("a1b23c4d")
    cap, (conn,) = analyze_capture(write(tmp_path, "be.pcap", swapped))
    assert cap.format == "pcap-ns" and not cap.warnings
    assert np.array_equal(conn.seq["time_s"], ref.seq["time_s"])
    assert conn.retransmissions == ref.retransmissions


def test_corrupted_pcapng_block_keeps_the_packets_before_it(run_ts, tmp_path):
    ng = io.BytesIO()
    writer = dpkt.pcapng.Writer(ng, linktype=101, snaplen=65535)
    for ts, b in raw_packets(run_ts)[:50]:
        writer.writepkt(b, ts=ts)
    data = bytearray(ng.getvalue())
    pos, packets = 0, 0
    while packets < 30:  # walk the blocks to the 31st enhanced packet block (type 6)
        kind, length = struct.unpack_from("<II", data, pos)
        packets += kind == 6
        pos += length
    assert struct.unpack_from("<I", data, pos)[0] == 6
    struct.pack_into("<I", data, pos + 4, 0x7FFFFFF0)  # its length: far past the end
    cap = read_capture(write(tmp_path, "c.pcapng", bytes(data)))
    assert cap.records == 30 and len(cap.warnings) == 1
    assert cap.bytes_ignored == len(data) - pos


def test_not_a_capture_is_a_one_line_error(tmp_path):
    path = write(tmp_path, "x.pcap", b"hello, this is not a capture\n")
    with pytest.raises(CaptureError, match="not a capture"):
        read_capture(path)
    code, _, err = run_cli(tmp_path, path)
    assert code == 2
    assert err.startswith(f"farlink: error: {path}: not a capture") and err.count("\n") == 1
    code, _, err = run_cli(tmp_path, tmp_path / "missing.pcap")
    assert code == 2 and "cannot read" in err and err.count("\n") == 1


def test_udp_only_capture_says_there_is_no_tcp(tmp_path):
    buf = io.BytesIO()
    writer = dpkt.pcap.Writer(buf, linktype=dpkt.pcap.DLT_RAW)
    for i in range(5):
        udp = dpkt.udp.UDP(sport=5000, dport=53, data=b"x" * 20)
        ip = dpkt.ip.IP(src=b"\x0a\0\0\1", dst=b"\x0a\0\0\2", p=dpkt.ip.IP_PROTO_UDP, data=udp)
        writer.writepkt(bytes(ip), ts=1.0 + i)
    path = write(tmp_path, "udp.pcap", buf.getvalue())
    cap, conns = analyze_capture(path)
    assert conns == [] and cap.records == 5 and cap.skipped["non_tcp"] == 5
    code, _, err = run_cli(tmp_path, path)
    assert code == 2 and err.count("\n") == 1
    assert "no TCP connection" in err and "5 non-tcp" in err


def test_pcapng_ethernet_and_microsecond_pcap_read_the_same(run_ts, tmp_path):
    packets = raw_packets(run_ts)
    _, (ref,) = analyze_capture(write(tmp_path, "s.pcap", run_ts.pcap["S-R"]))

    ng = io.BytesIO()
    writer = dpkt.pcapng.Writer(ng, linktype=101, snaplen=65535)
    for ts, b in packets:
        writer.writepkt(b, ts=ts)
    eth = io.BytesIO()
    writer = dpkt.pcap.Writer(eth, linktype=dpkt.pcap.DLT_EN10MB)
    for ts, b in packets:
        frame = dpkt.ethernet.Ethernet(src=b"\x02" * 6, dst=b"\x04" * 6, type=0x0800, data=b)
        writer.writepkt(bytes(frame), ts=ts)
    sll = io.BytesIO()
    writer = dpkt.pcap.Writer(sll, linktype=113)
    for ts, b in packets:
        writer.writepkt(b"\0\0\0\1\0\6" + b"\2" * 6 + b"\0\0" + b"\x08\x00" + b, ts=ts)

    for name, data, fmt in [
        ("s.pcapng", ng.getvalue(), "pcapng"),
        ("eth.pcap", eth.getvalue(), "pcap-us"),
        ("sll.pcap", sll.getvalue(), "pcap-us"),
    ]:
        cap, (conn,) = analyze_capture(write(tmp_path, name, data))
        assert cap.format == fmt and not cap.warnings, name
        assert conn.retransmissions == ref.retransmissions, name
        assert conn.delivered_bytes == ref.delivered_bytes, name
        assert np.allclose(conn.seq["time_s"], ref.seq["time_s"], atol=2e-6), name


def test_connections_are_told_apart_and_other_packets_counted(run_ts, run_karn, tmp_path):
    buf = io.BytesIO()
    writer = dpkt.pcap.Writer(buf, linktype=101, nano=True)
    merged = []
    for ts, b in raw_packets(run_ts):
        merged.append((ts, b))
    for ts, b in raw_packets(run_karn):
        ip = dpkt.ip.IP(b)
        if ip.data.sport == 49152:  # move the second run's sender to another port
            ip.data.sport = 49153
        else:
            ip.data.dport = 49153
        merged.append((ts + 0.5, bytes(ip)))
    udp = dpkt.ip.IP(src=b"\x0a\0\0\1", dst=b"\x0a\0\0\2", p=17, data=dpkt.udp.UDP(data=b"x"))
    merged.append((0.25, bytes(udp)))
    merged.append((0.26, b"\x60" + b"\0" * 5 + b"\x11" + b"\0" * 33))  # IPv6 carrying UDP
    merged.append((0.27, b"\0" * 40))  # not IP at all
    for ts, b in sorted(merged, key=lambda x: x[0]):
        writer.writepkt(b, ts=ts)
    cap, conns = analyze_capture(write(tmp_path, "two.pcap", buf.getvalue()))
    assert cap.skipped == {"non_ip": 1, "non_tcp": 2, "malformed": 0}
    by_port = {c.name.split("->")[0].rsplit(":", 1)[1]: c for c in conns}
    assert set(by_port) == {"49152", "49153"}
    assert by_port["49152"].retransmissions == run_ts.summary["flows"][0]["retransmissions"]
    assert by_port["49153"].retransmissions == run_karn.summary["flows"][0]["retransmissions"]
    assert by_port["49153"].seq["time_s"][0] == pytest.approx(0.5, abs=1e-6)


def test_goodput_windows_and_figures(run_ts, tmp_path):
    (sim,) = analyze_result(run_ts)
    _, (conn,) = analyze_capture(write(tmp_path, "s.pcap", run_ts.pcap["S-R"]))
    assert set(conn.goodput) == {10.0, 100.0, 1000.0}
    # Fewer than 10 s of transfer: no complete 10 s window; the summary says so.
    summary = conn.summary()
    assert summary["goodput_windows"]["10s"]["windows"] == len(conn.goodput[10.0])
    written = plot_connections([conn, sim], tmp_path / "fig", drops_s=np.array([1.0, 2.5]))
    assert [p.name for p in written] == [
        "analysis-tseq.png",
        "analysis-rtt.png",
        "analysis-outstanding.png",
        "analysis-goodput.png",
    ]
    assert all(p.stat().st_size > 1000 for p in written)


def test_cli_analyze_with_drop_log(run_ts, tmp_path):
    path = write(tmp_path, "s.pcap", run_ts.pcap["S-R"])
    log = tmp_path / "drops.csv"
    log.write_text("modem,time\nm1,1.0\nm2,2.0\nm1,3.5\n")
    code, out, err = run_cli(tmp_path, path, "--drops", str(log), "--json")
    assert code == 0, err
    payload = json.loads(out)
    (conn,) = payload["connections"]
    assert conn["retransmissions"] == run_ts.summary["flows"][0]["retransmissions"]
    assert conn["rtt_method"] == "tap-to-tap karn+timestamps"
    assert (Path(payload["out"]) / "s-tseq.png").exists()
    bad = tmp_path / "bad.csv"
    bad.write_text("nothing here\n")
    code, _, err = run_cli(tmp_path, path, "--drops", str(bad))
    assert code == 2 and err.startswith("farlink: error: --drops:") and err.count("\n") == 1
    code, _, err = run_cli(tmp_path, path, "--min-rto", "soon")
    assert code == 2 and err.startswith("farlink: error: --min-rto:") and err.count("\n") == 1


def run_cli(tmp_path: Path, capture: Path, *args: str) -> tuple[int, str, str]:
    import contextlib

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["analyze", str(capture), "--out", str(tmp_path / "out"), *args])
    return code, out.getvalue(), err.getvalue()


# The scenario of chain() as a file, without a [trace] table: `analyze --sim` switches on the
# traces it needs.
CHAIN_TOML = """
name = "capture-chain"
duration = "60s"
nodes = ["S", "R", "D"]
pcap = ["S-R"]

[[links]]
name = "S-R"
a = "S"
b = "R"
rate = "10Mbps"
delay = "1ms"

[[links]]
name = "R-D"
a = "R"
b = "D"
rate = "1Mbps"
delay = "40ms"
queue_pkts = 20
fwd = { loss = { model = "bernoulli", p = 0.03 } }

[[flows]]
name = "ftp"
from = "S"
to = "D"
app = { kind = "bulk", size = "300KB" }
tcp = { timestamps = true }
"""


def test_cli_analyze_beside_a_simulation_of_the_same_scenario(run_ts, tmp_path):
    # The same scenario and seed as the capture: the tap is upstream of every loss, so the
    # simulation's traces give the capture's retransmissions, timeouts and delivered bytes.
    path = write(tmp_path, "s.pcap", run_ts.pcap["S-R"])
    scenario = tmp_path / "chain.toml"
    scenario.write_text(CHAIN_TOML)
    args = ("--sim", str(scenario), "--seed", "7", "--link-rate", "1Mbps", "--json")
    code, out, err = run_cli(tmp_path, path, *args)
    assert code == 0, err
    payload = json.loads(out)
    (captured,) = payload["connections"]
    (simulated,) = payload["simulation"]["connections"]
    assert simulated["connection"] == "sim ftp" and payload["simulation"]["seed"] == 7
    for key in ("retransmissions", "timeouts"):
        assert captured[key] == simulated[key] == run_ts.summary["flows"][0][key], key
    assert captured["delivered_bytes"] == simulated["delivered_bytes"]  # ACKs seen at the tap
    assert payload["simulation"]["call_drop_times_s"] == []
    assert {Path(f).name for f in payload["figures"]} == {
        f"s-{name}.png" for name in ("tseq", "rtt", "outstanding", "goodput")
    }
    code, out, err = run_cli(tmp_path, path, "--sim", str(scenario), "--seed", "7")
    assert code == 0, err
    assert "sim ftp" in out and "goodput 10s mean bit/s" in out


def test_cli_analyze_goodput_normalised_to_the_link_rate(tmp_path):
    # 30 s over seed 003's 1.5 Mbps wireless hop: two or three complete 10 s windows.
    result = simulate("stpd-wireless", duration="30s", sets=['pcap=["S-R"]', "trace={}"])
    path = write(tmp_path, "w.pcap", result.pcap["S-R"])
    args = ("--sim", "stpd-wireless", "--set", 'duration="30s"', "--link-rate", "1.5Mbps")
    code, out, err = run_cli(tmp_path, path, *args, "--json")
    assert code == 0, err
    payload = json.loads(out)
    assert payload["link_rate_bps"] == 1.5e6
    summaries = payload["connections"] + payload["simulation"]["connections"]
    for summary in summaries:
        window = summary["goodput_windows"]["10s"]
        assert window["link_rate_bps"] == 1.5e6
        assert window["mean_normalized"] == pytest.approx(window["mean_bps"] / 1.5e6)
        assert sum(window["histogram_normalized"]["counts"]) == window["windows"] >= 2
        # Reno at p = 1e-2 carries about a quarter of the hop; a bits/bytes slip would be 8x off.
        assert 0.1 < window["max_normalized"] <= 1  # payload below the 1.5 Mbps of the hop
        assert summary["goodput_windows"]["100s"]["histogram_normalized"]["counts"] == [0] * 20
    code, out, _ = run_cli(tmp_path, path, *args)
    assert code == 0 and "goodput 10s mean / rate" in out


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("--set", "duration=1"), "farlink: error: --set: --set and --seed need --sim"),
        (("--sim", "no-such-preset"), "farlink: error: --sim: 'no-such-preset' is neither"),
        (("--sim", "stpd-wireless", "--set", "links[7].rate=1"), "farlink: error: --sim:"),
        (("--link-rate", "fast"), "farlink: error: --link-rate:"),
    ],
)
def test_cli_analyze_sim_bad_input_is_one_line(run_ts, tmp_path, args, fragment):
    path = write(tmp_path, "s.pcap", run_ts.pcap["S-R"])
    code, _, err = run_cli(tmp_path, path, *args)
    assert code == 2 and err.startswith(fragment) and err.count("\n") == 1, err


def test_call_drop_times_come_from_the_member_state_trace():
    result = simulate(
        "iridium-2",
        duration="30min",
        seed=2,
        sets=['links[0].bundle.call_drop_rate="1/5min"', "trace={member_state=true}"],
    )
    times = call_drop_times_s(result)
    assert len(times) == result.summary["links"][0]["bundle"]["call_drops"] > 0
    assert np.all(np.diff(times) >= 0) and 0 < times[0] and times[-1] <= 1800
