"""The simulated three-way handshake from the command line, in the pcap, and beside the
closed-form set-up latency of seed 000 section 4.2.1 (Cardwell et al.)."""

import importlib.util
import io
import json
from pathlib import Path

import numpy as np
import pytest

from farlink import simulate
from farlink.cli.app import main
from farlink.models.short import handshake_latency_s

BENCH = Path(__file__).resolve().parents[1] / "bench" / "handshake_setup.py"


def cli_json(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def test_cli_handshake_adds_the_set_up_round_trip_over_geo(capsys):
    common = ["simulate", "marchese-geo", "--size", "100KB", "--json"]
    without = cli_json(capsys, *common)["flows"][0]
    with_ = cli_json(capsys, *common, "--set", "flows[0].tcp.handshake=true")["flows"][0]
    assert "handshake" not in without
    h = with_["handshake"]
    assert (h["syn_sent"], h["syn_acks_sent"]) == (1, 1)
    # RTT 511 ms measured in seed 002; the SYN and SYN-ACK add their serialization.
    assert h["setup_time_s"] == pytest.approx(0.511, abs=0.002)
    grown = with_["transfer_time_s"] - without["transfer_time_s"]
    assert grown == pytest.approx(h["setup_time_s"], abs=0.01)
    assert with_["min_rtt_s"] == pytest.approx(h["setup_time_s"]), "the first RTT sample"


def _load_bench():
    spec = importlib.util.spec_from_file_location("handshake_setup", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# The scenario of bench/handshake_setup.py, which prints the comparison with the model, and
# the initial RTO of RFC 6298 that times the SYN and the SYN-ACK (T_s of the model).
_bench = _load_bench()
geo_short, INITIAL_RTO_S = _bench.geo_short, _bench.INITIAL_RTO_S


def test_pcap_holds_the_real_syn_exchange():
    dpkt = pytest.importorskip("dpkt")
    result = simulate(geo_short(0.0, 1, pcap=True))
    packets = [
        (float(ts), dpkt.ip.IP(buf)) for ts, buf in dpkt.pcap.Reader(io.BytesIO(result.pcap["G-D"]))
    ]
    syn, syn_ack, first = (ip.data for _, ip in packets[:3])
    assert syn.flags & dpkt.tcp.TH_SYN and not syn.flags & dpkt.tcp.TH_ACK
    assert syn_ack.flags & dpkt.tcp.TH_SYN and syn_ack.flags & dpkt.tcp.TH_ACK
    assert syn_ack.ack == (syn.seq + 1) % 2**32
    assert first.seq == (syn.seq + 1) % 2**32 and len(first.data) > 0
    assert first.ack == (syn_ack.seq + 1) % 2**32
    kinds = {kind for kind, _ in dpkt.tcp.parse_opts(syn_ack.opts)}
    assert {dpkt.tcp.TCP_OPT_MSS, dpkt.tcp.TCP_OPT_WSCALE, dpkt.tcp.TCP_OPT_SACKOK} <= kinds
    # Real times, not a synthetic exchange at one instant: the SYN-ACK crosses the GEO hop
    # back (tapped where it leaves D's queue, 255 ms after the SYN left G's).
    assert packets[1][0] - packets[0][0] == pytest.approx(0.2553, abs=0.001)
    syns = sum(bool(ip.data.flags & dpkt.tcp.TH_SYN) for _, ip in packets)
    assert syns == 2, "one SYN and one SYN-ACK, nothing synthesised beside them"


def test_set_up_time_beside_the_cardwell_set_up_latency():
    """E[L_h] = RTT + T_s((1−p)/(1−2p) · 2 − 2) with T_s the 1 s initial RTO, against the mean
    simulated set-up time over seeds; the RTT is the lossless set-up time."""
    rtt_s = simulate(geo_short(0.0, 1)).summary["flows"][0]["handshake"]["setup_time_s"]
    assert rtt_s == pytest.approx(0.5116, abs=1e-4)
    assert float(handshake_latency_s(rtt_s, INITIAL_RTO_S, 0.0)) == pytest.approx(rtt_s)
    p = 0.1
    setups = np.array(
        [
            simulate(geo_short(p, seed)).summary["flows"][0]["handshake"]["setup_time_s"]
            for seed in range(1, 301)
        ]
    )
    model = float(handshake_latency_s(rtt_s, INITIAL_RTO_S, p))
    standard_error = setups.std(ddof=1) / np.sqrt(len(setups))
    assert abs(setups.mean() - model) < 3 * standard_error, (setups.mean(), model, standard_error)
