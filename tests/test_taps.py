"""Where a simulated capture is taken (a link, a link end, a node) and the address map written
beside it, read back with dpkt and by ``farlink analyze``."""

import io
import json
import socket
from typing import Any

import dpkt
import pytest

from farlink import simulate
from farlink.captures.analysis import analyze_capture
from farlink.cli.app import main
from farlink.results.result import write_pcaps


def chain(pcap: list[Any]) -> dict[str, Any]:
    """S - R - D, 3 % loss on R -> D; flow "ftp" S -> D and flow "back" D -> S."""
    return {
        "name": "taps",
        "seed": 5,
        "duration": "30s",
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
            {"name": "ftp", "from": "S", "to": "D", "app": {"kind": "bulk", "size": "200KB"}},
            {"name": "back", "from": "D", "to": "S", "app": {"kind": "bulk", "size": "30KB"}},
        ],
        "pcap": pcap,
    }


@pytest.fixture(scope="module")
def result():
    return simulate(chain([{"node": "R"}, {"link": "R-D", "at": "a"}, {"link": "R-D", "at": "b"}]))


def packets(data: bytes) -> list[dpkt.ip.IP]:
    return [dpkt.ip.IP(buf) for _, buf in dpkt.pcap.Reader(io.BytesIO(data))]


def test_each_tap_gets_its_capture_and_address_map(result, tmp_path):
    written = write_pcaps(result, tmp_path)
    assert sorted(p.name for p in written) == sorted(
        f"{tap}{suffix}"
        for tap in ["node-R", "R-D@a", "R-D@b"]
        for suffix in [".pcap", ".addresses.json"]
    )
    doc = json.loads((tmp_path / "R-D@b.addresses.json").read_text())
    assert doc["capture"] == "R-D@b.pcap"
    assert doc["tap"]["link"] == "R-D" and doc["tap"]["at"] == "b"
    assert sorted(doc["addresses"].values()) == ["D", "R", "S"]
    assert [(f["name"], f["direction"]) for f in doc["flows"]] == [
        ("ftp", "S -> D"),
        ("back", "D -> S"),
    ]


def test_the_address_map_names_every_address_and_4_tuple_in_the_capture(result):
    for tap, data in result.pcap.items():
        doc = json.loads(result.pcap_addresses[tap])
        tuples = {}
        for f in doc["flows"]:
            s, r = f["sender"], f["receiver"]
            tuples[(s["address"], s["port"], r["address"], r["port"])] = f["name"]
            tuples[(r["address"], r["port"], s["address"], s["port"])] = f["name"]
        seen = set()
        for ip in packets(data):
            src, dst = socket.inet_ntoa(ip.src), socket.inet_ntoa(ip.dst)
            assert src in doc["addresses"] and dst in doc["addresses"], tap
            seen.add(tuples[(src, ip.data.sport, dst, ip.data.dport)])
        assert seen == {"ftp", "back"}, tap


def test_a_node_tap_sees_both_directions(result):
    doc = json.loads(result.pcap_addresses["node-R"])
    by_node = {node: address for address, node in doc["addresses"].items()}
    pairs = {
        (socket.inet_ntoa(ip.src), socket.inet_ntoa(ip.dst), len(ip.data.data) > 0)
        for ip in packets(result.pcap["node-R"])
    }
    s, d = by_node["S"], by_node["D"]
    # Data and ACKs of both flows, each way through R.
    assert {(s, d, True), (d, s, False), (d, s, True), (s, d, False)} <= pairs


def test_the_far_end_of_a_lossy_link_sees_fewer_data_packets(result):
    def data_to_d(tap: str) -> int:
        doc = json.loads(result.pcap_addresses[tap])
        d = next(a for a, n in doc["addresses"].items() if n == "D")
        return sum(
            1
            for ip in packets(result.pcap[tap])
            if socket.inet_ntoa(ip.dst) == d and len(ip.data.data) > 0
        )

    assert 0 < data_to_d("R-D@b") < data_to_d("R-D@a")


def test_analyze_names_connections_after_their_flows(result, tmp_path):
    write_pcaps(result, tmp_path)
    _, connections = analyze_capture(tmp_path / "R-D@a.pcap")
    assert sorted(c.name for c in connections) == ["back", "ftp"]
    bare = tmp_path / "bare.pcap"
    bare.write_bytes(result.pcap["R-D@a"])
    _, connections = analyze_capture(bare)
    assert all("->" in c.name for c in connections)


def test_resolved_scenario_carries_the_taps():
    from farlink.scenario import resolve

    doc = resolve(chain(["R-D", {"link": "R-D", "at": "b"}, {"node": "S"}]))
    assert doc["pcap"] == ["R-D", {"link": "R-D", "at": "b"}, {"node": "S"}]


def test_a_bad_tap_is_one_line_naming_its_path(capsys, tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(
        'duration = "2s"\nnodes = ["S", "D"]\n'
        '[[links]]\na = "S"\nb = "D"\nrate = "1Mbps"\ndelay = "10ms"\n'
        '[[pcap]]\nlink = "S-D"\nat = "c"\n',
        encoding="utf-8",
    )
    code = main(["scenario", "check", str(path)])
    _, err = capsys.readouterr()
    assert code == 2
    assert err.count("\n") == 1, err
    assert err.startswith("farlink: error: ")
    assert 'pcap[0].at: unknown end "c"; expected "a" (S) or "b" (D)' in err
