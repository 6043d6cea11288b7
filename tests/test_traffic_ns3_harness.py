"""The competing-traffic comparison's bookkeeping (bench/ns3/traffic.py and
bench/validate_traffic_ns3.py), without ns-3: that farlink is given ns-3's path and packets, that
percentiles and size buckets are farlink's, and that the section it writes leaves the others of
docs/validation.md alone."""

from __future__ import annotations

import importlib.util
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench"


def load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def ns3():
    return load("ns3_traffic", BENCH / "ns3" / "traffic.py")


def validator():
    return load("validate_traffic_ns3", BENCH / "validate_traffic_ns3.py")


GRID = {"onoff_duration_s": 2.0, "poisson_arrivals_s": 2.0, "poisson_drain_s": 1.0}


def test_farlink_runs_ns3s_path_and_packets():
    n, v = ns3(), validator()
    sc = v.scenario("poisson", 1, GRID, 0.5)
    links = {x["name"]: x for x in sc["links"]}
    for name, (rate, delay, queue) in (("S-R", n.ACCESS), ("R-D", n.BOTTLENECK)):
        assert (links[name]["rate"], links[name]["delay"], links[name]["queue_pkts"]) == (
            rate,
            delay,
            queue,
        )
    # ns-3's SegmentSize is the payload; farlink's MSS option less the 12 timestamp bytes
    assert v.TCP["mss_bytes"] - 12 == n.SEGMENT_BYTES
    assert n.ALIGNED["ns3::TcpSocket::SegmentSize"] == str(n.SEGMENT_BYTES)
    assert v.TCP["receive_buffer_bytes"] == v.TCP["send_buffer_bytes"] == n.SOCKET_BUFFER_BYTES
    assert v.UDP_ONOFF["packet_bytes"] == n.UDP_PAYLOAD_BYTES
    assert v.UDP_ONOFF["rate"] == n.UDP_RATE


def test_a_short_run_of_each_case_reads_back_under_ns3s_names():
    v = validator()
    onoff = v.farlink_run("onoff", 1, GRID)
    assert onoff["bulk"]["goodput_bps"] > 0
    assert onoff["udp"]["packets_sent"] > 0
    web = v.farlink_run("poisson", 1, GRID, 0.5)
    sf = web["short_flows"]
    assert sf["flows_arrived"] >= sf["flows_finished"] > 0
    assert set(sf["by_size"]) <= {str(b) for b in v.SIZE_BUCKET_BYTES}
    assert web["tcp_counters"]["syn_retransmissions"] >= 0


def test_percentiles_are_farlinks_nearest_rank():
    n, v = ns3(), validator()
    values = [float(x) for x in range(100, 0, -1)]
    assert v.nearest_rank(values) == {"p50": 50.0, "p90": 90.0, "p99": 99.0}
    assert n.percentiles(values) == {"p50": 50.0, "p90": 90.0, "p99": 99.0, "mean": 50.5}


def test_ns3_flows_fall_in_farlinks_size_buckets():
    v = validator()
    rec = {"short_flows": {"flows": [[9_999, 1_000], [10_000, 2_000], [150_000, 3_000], [5, None]]}}
    by = v.ns3_by_size(rec)
    assert by["0"]["p50"] == 0.001
    assert by["10000"]["p99"] == 0.002
    assert by["100000"]["p90"] == 0.003
    assert set(by) == {"0", "10000", "100000"}, "an unfinished flow has no time"


def test_the_section_replaces_itself_and_keeps_the_others(tmp_path):
    v = validator()
    doc = tmp_path / "validation.md"
    before = "# head\n\n<!-- validate-emu: begin -->\nemu\n<!-- validate-emu: end -->\n"
    doc.write_text(before)
    v.write_section(doc, [v.BEGIN, "one", v.END])
    v.write_section(doc, [v.BEGIN, "two", v.END])
    text = doc.read_text()
    assert text.count(v.BEGIN) == 1 and "two" in text and "one" not in text
    assert text.startswith(before)
