"""Queue disciplines on far links' own queues. A bundle's MLPPP queue: CoDel on iridium-4 cuts
the standing queue a large window builds there (drop-tail holds it to the 100-packet bound, a
minute of delay at 4 x 2400 bit/s). The preset's own 22 KB window builds almost none there: its
18 s round trip sits in the members' three-packet transmit queues (`txqueue_pkts`), which no
discipline runs. A radio hop's queue: CoDel on is707's IS-707 hop, whose packets wait whole
before they are framed.
"""

import numpy as np

from farlink import simulate

#: Enough window to fill the MLPPP queue's 100 packets.
LARGE_WINDOW = 'flows[0].tcp.receive_buffer="200KB"'


def rtt_s(result):
    rtt = np.asarray(result.traces["rtt"]["rtt_ns"]) / 1e9
    return float(np.median(rtt)), float(np.percentile(rtt, 95))


def test_codel_on_iridium_4s_bundle_queue_cuts_the_standing_queue():
    tail = simulate("iridium-4", sets=[LARGE_WINDOW])
    codel = simulate("iridium-4", sets=[LARGE_WINDOW, 'links[0].queue_discipline="codel"'])
    (tail_med, tail_p95), (codel_med, codel_p95) = rtt_s(tail), rtt_s(codel)
    tail_fwd, codel_fwd = tail.summary["links"][0]["fwd"], codel.summary["links"][0]["fwd"]
    tail_flow, codel_flow = tail.summary["flows"][0], codel.summary["flows"][0]
    print(
        f"iridium-4, 200 KB window: drop-tail RTT median {tail_med:.1f} s p95 {tail_p95:.1f} s, "
        f"max queue {tail_fwd['max_queue_pkts']}, {tail_flow['transfer_time_s']:.0f} s; "
        f"CoDel median {codel_med:.1f} s p95 {codel_p95:.1f} s, max queue "
        f"{codel_fwd['max_queue_pkts']}, {codel_flow['transfer_time_s']:.0f} s, "
        f"drops {codel_fwd['drops']}"
    )
    assert tail_fwd["max_queue_pkts"] >= 50
    assert codel_fwd["max_queue_pkts"] <= 10
    assert codel_med < 0.5 * tail_med
    assert codel_p95 < 0.5 * tail_p95
    assert codel_fwd["drops"]["aqm"] > 0 and tail_fwd["drops"]["aqm"] == 0
    # The transfer still completes, at most 15 % slower: the members' transmit queues keep
    # the modems busy while CoDel drains the MLPPP queue.
    assert codel_flow["finished"]
    assert codel_flow["transfer_time_s"] < 1.15 * tail_flow["transfer_time_s"]


def test_the_bundle_queue_marks_ecn_capable_packets():
    ecn = simulate(
        "iridium-4",
        sets=[LARGE_WINDOW, 'links[0].queue_discipline="codel"', "flows[0].tcp.ecn=true"],
    )
    fwd = ecn.summary["links"][0]["fwd"]
    assert fwd["ce_marked"] > 0
    assert fwd["drops"]["aqm"] == 0
    # The receiver saw the marks (a marked packet may still be lost on a member after).
    assert 0 < ecn.summary["flows"][0]["ce_marked"] <= fwd["ce_marked"]


def test_codel_on_is707s_radio_hop_cuts_the_standing_queue():
    # A 100-segment window (the preset's is 20, which never fills the queue), 600 s.
    sets = [
        "flows[0].tcp.receive_buffer_bytes=53600",
        "flows[0].tcp.window_scaling=true",
        'duration="600s"',
        "trace={rtt=true}",
    ]
    tail = simulate("is707", sets=sets)
    codel = simulate("is707", sets=[*sets, 'links[1].queue_discipline="codel"'])
    (tail_med, tail_p95), (codel_med, codel_p95) = rtt_s(tail), rtt_s(codel)
    tail_fwd, codel_fwd = tail.summary["links"][1]["fwd"], codel.summary["links"][1]["fwd"]
    tail_bps = tail.summary["flows"][0]["goodput_bps"]
    codel_bps = codel.summary["flows"][0]["goodput_bps"]
    print(
        f"is707, 100-segment window: drop-tail RTT median {tail_med:.2f} s p95 {tail_p95:.2f} s, "
        f"max queue {tail_fwd['max_queue_pkts']}, {tail_bps:.0f} bit/s; CoDel median "
        f"{codel_med:.2f} s p95 {codel_p95:.2f} s, max queue {codel_fwd['max_queue_pkts']}, "
        f"{codel_bps:.0f} bit/s, drops {codel_fwd['drops']}"
    )
    assert codel_med < 0.25 * tail_med
    assert codel_fwd["drops"]["aqm"] > 0 and tail_fwd["drops"]["aqm"] == 0
    assert codel_fwd["max_queue_pkts"] < tail_fwd["max_queue_pkts"]
    # CoDel's 5 ms target is far below one packet's 0.6 s on the air: it drops more than the
    # hop needs and costs goodput, but the flow keeps most of it.
    assert codel_bps > 0.7 * tail_bps
