"""Competing traffic in the emulator, in real time (docs/traffic.md, issue 30): a UDP
constant-bit-rate source beside the bulk transfer on stpd-wireless, and a class of short TCP
flows whose emulated completion times match the simulator's for the same seed. These make
network namespaces and TUN devices; without CAP_NET_ADMIN or /dev/net/tun they are skipped,
saying which."""

import pytest

from farlink import simulate
from farlink.emulate import emulate
from farlink.scenario import ScenarioError, load_scenario
from support import REAL_TIME, needs_namespaces

pytestmark = [REAL_TIME, needs_namespaces("emulator")]


def test_a_cbr_flow_beside_the_bulk_transfer_gets_its_rate_and_the_links_loss():
    # 240 kbit/s of 500-byte datagrams (60 a second) for 15 s beside stpd-wireless's unbounded
    # Reno flow: the source sends on the core's schedule (one every 1/60 s from 0), the links
    # drop 1 % at random on R-D plus what the Reno flow's full 30-packet queue turns away.
    doc = load_scenario("stpd-wireless")
    doc["duration"] = "15s"
    doc["trace"] = {}
    doc["flows"].append(
        {
            "name": "telemetry",
            "from": "S",
            "to": "D",
            "app": {"kind": "udp_cbr", "rate": "240kbps", "packet_bytes": 500},
        }
    )
    flows = emulate(doc, sender="kernel").summary["flows"]
    udp = flows[1]
    assert flows[0]["delivered_bytes"] > 500_000, "the bulk transfer ran beside it"
    # The UDP flow's default [flows.tcp] leaves the TCP flow its 1000-byte packets.
    assert "TUN MTU 1000:" in flows[0]["kernel_settings"]["applied"]["mss_bytes"]
    # Datagram k leaves at k/60 s, k = 0 .. 899, the run's last instant being 15 s.
    assert udp["packets_sent"] in (900, 901)
    lost = sum(udp["drops"].values())
    assert udp["packets_received"] + lost <= udp["packets_sent"]
    # Nothing else loses a datagram: those unaccounted for were in flight at the end, at most
    # a one-way delay's worth (0.26 s below: 16 datagrams).
    assert udp["packets_sent"] - udp["packets_received"] - lost <= 16
    assert udp["loss_rate"] == pytest.approx(lost / (lost + udp["packets_received"]))
    # The random loss is 1 % of about 890 datagrams (9, sd 3): between 1 and 24 (5 sd); the
    # queue adds its share.
    assert 1 <= udp["drops"]["corruption"] <= 24
    assert 0.001 <= udp["loss_rate"] <= 0.15
    sent_bps = 240e3 * udp["packets_sent"] / 900
    assert udp["goodput_bps"] == pytest.approx(sent_bps * (1 - udp["loss_rate"]), rel=0.02)
    # One-way delay: 80.1 ms of propagation and 3.2 ms of serialisation (528 bytes on both
    # links) at least; at most that, the 100-packet queue at S (80 ms of 1000-byte packets at
    # 10 Mbit/s: the kernel's bursts fill it) and the 30-packet one at R (165 ms at 1.5 Mbit/s
    # with the packet in service), and the driver's lateness.
    delay = udp["one_way_delay_s"]
    assert 0.0832 <= delay["p50"] <= delay["p99"] < 0.34
    assert delay["p50"] < 0.2, "the median datagram does not wait behind a full queue"
    assert 0 < udp["jitter_s"]["p50"] < 0.05


def test_emulated_and_simulated_short_flow_medians_agree_on_stpd_wireless():
    # Poisson arrivals of Reno connections of exponential size (mean 20 kB) at 30 % of R-D's
    # 1.5 Mbit/s: 2.8 a second for 20 s, about 56 connections, enough for a median within a
    # few percent; each takes about 0.5 to 1 s (a handshake and a few rounds of 160 ms), and
    # 10 s after the last arrival drains them, so the run ends before 30 s.
    doc = load_scenario("stpd-wireless")
    doc["duration"] = "30s"
    doc["trace"] = {}
    flow = doc["flows"][0]
    flow["app"] = {
        "kind": "flows_poisson",
        "load": 0.3,
        "size": {"distribution": "exponential", "mean": "20kB"},
    }
    flow["stop"] = "20s"
    sim = simulate(doc).summary["flows"][0]
    emu = emulate(doc, sender="kernel").summary["flows"][0]
    assert emu["flows_arrived"] == sim["flows_arrived"] > 40
    assert emu["flows_finished"] == emu["flows_arrived"]
    assert emu["fct_s"]["p50"] == pytest.approx(sim["fct_s"]["p50"], rel=0.15)
    # Slowdowns against the same closed-form unloaded times.
    assert emu["slowdown"]["p50"] >= 1.0


def test_a_datagram_too_small_for_its_stamp_is_one_line_naming_the_field():
    # The emulator's datagrams carry their number and send instant in 16 bytes.
    doc = {
        "duration": "1s",
        "nodes": ["S", "D"],
        "links": [{"a": "S", "b": "D", "rate": "1Mbps", "delay": "10ms"}],
        "flows": [
            {"from": "S", "to": "D", "app": {"kind": "udp_cbr", "rate": "8kbps", "packet_bytes": 8}}
        ],
    }
    with pytest.raises(ScenarioError, match=r"flows\[0\]\.app\.packet_bytes.*at least 16"):
        emulate(doc)


def test_an_on_off_source_sends_the_simulators_datagrams_and_the_run_waits_for_them():
    # The same seed draws the same on and off periods in both engines (the core's source,
    # driven by the wall clock), so the same datagrams leave; with a stop the flow finishes
    # once each of them arrived or was dropped, and the run does not end before.
    doc = load_scenario("stpd-wireless")
    doc["duration"] = "8s"
    doc["trace"] = {}
    doc["flows"][0]["app"] = {"kind": "bulk", "size": "50KB"}
    doc["flows"].append(
        {
            "name": "voice",
            "from": "S",
            "to": "D",
            "stop": "5s",
            "app": {
                "kind": "udp_onoff",
                "rate": "64kbps",
                "packet_bytes": 160,
                "on": "0.5s",
                "off": "0.5s",
            },
        }
    )
    sim = simulate(doc).summary
    emu = emulate(doc, sender="kernel").summary
    s, e = sim["flows"][1], emu["flows"][1]
    assert e["packets_sent"] == s["packets_sent"] > 50
    assert e["finished"] and emu["all_finished"]
    assert e["packets_received"] + sum(e["drops"].values()) == e["packets_sent"]
    # It ends with its last datagram's arrival, not at the run's duration.
    assert emu["sim_time_s"] < 6.5


def test_a_datagram_larger_than_the_tcp_flows_packets_is_refused_naming_the_field():
    # stpd-wireless's TCP flow sets a 1000-byte MTU; the kernel would fragment a 1028-byte
    # datagram, which the simulator carries whole.
    doc = load_scenario("stpd-wireless")
    doc["flows"].append(
        {
            "from": "S",
            "to": "D",
            "app": {"kind": "udp_cbr", "rate": "64kbps", "packet_bytes": 1000},
        }
    )
    with pytest.raises(ScenarioError, match=r"flows\[1\]\.app\.packet_bytes.*at most 972"):
        emulate(doc)


@pytest.mark.slow  # 20 s of exchanges: with make validate, to keep make test within its time
def test_request_response_exchanges_the_simulators_sizes_and_answers_as_fast():
    # A 200-byte request, an exponential answer of mean 8 kB, 0.5 s of thinking, for 20 s on
    # stpd-wireless: about 30 exchanges of a round trip (160 ms) and the answer's
    # serialisation at 1.5 Mbit/s (40 ms for 8 kB) each. The same seed draws the same sizes
    # and think times in both engines; the response times differ by what the kernel's TCP and
    # the links' losses of different packets make of them (a retransmission timeout costs a
    # second), and with them how many exchanges fit before the stop.
    doc = load_scenario("stpd-wireless")
    doc["duration"] = "25s"
    doc["trace"] = {}
    flow = doc["flows"][0]
    flow["app"] = {
        "kind": "request_response",
        "request": "200B",
        "response": {"distribution": "exponential", "mean": "8kB"},
        "think": "0.5s",
    }
    flow["stop"] = "20s"
    sim = simulate(doc).summary["flows"][0]
    emu = emulate(doc, sender="kernel").summary["flows"][0]
    assert emu["finished"] and emu["exchanges"] == emu["exchanges_completed"]
    assert sim["exchanges"] > 20
    assert emu["exchanges"] == pytest.approx(sim["exchanges"], rel=0.25)
    assert emu["response_time_s"]["p50"] == pytest.approx(sim["response_time_s"]["p50"], rel=0.15)
