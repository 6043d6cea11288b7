"""The queue-discipline study on the seeds' far links (docs/aqm.md): what its table says holds."""

import numpy as np

from farlink.reproduce.aqm import PATHS, _run


def test_on_the_geo_hop_an_aqm_halves_the_short_transfer_and_codel_wants_its_interval_at_the_rtt():
    geo = next(p for p in PATHS if p.preset == "marchese-geo")
    tail, codel, codel_rtt = (_run(geo, d, seed=1) for d in ("droptail", "codel", "codel-rtt"))
    # Drop-tail keeps the routers' 100 packets full: the round trip nearly doubles (511 ms bare).
    assert tail["rtt_p50_ms"] > 900 and codel["rtt_p50_ms"] < 560
    assert codel["short_s"] < 0.6 * tail["short_s"]
    # CoDel's 100 ms interval drops again before a 511 ms round trip shows the first drop.
    assert codel["goodput"] < 0.6 < 0.8 < codel_rtt["goodput"]


def test_on_iridium_4s_bundle_an_aqm_empties_the_mlppp_queue_down_to_the_modems_own():
    bundle = next(p for p in PATHS if p.preset == "iridium-4")
    seeds = bundle.seeds[:5]
    mean = {
        d: {k: float(np.mean([r[k] for r in runs])) for k in runs[0]}
        for d in ("droptail", "codel", "fq_codel", "pie", "codel-rtt")
        for runs in [[_run(bundle, d, s) for s in seeds]]
    }
    tail = mean.pop("droptail")
    # Drop-tail holds the 200 KB window's standing queue in the 100-packet MLPPP queue (1.25 s
    # a packet at 4 x 2400 bit/s).
    assert tail["rtt_p50_ms"] > 60_000
    for d, aqm in mean.items():
        # An AQM leaves the members' transmit queues (12 packets, 15 s) full beside the bare
        # 6.4 s round trip, and at most about a packet (1.25 s) in the MLPPP queue.
        assert 10_000 < aqm["rtt_p50_ms"] and aqm["rtt_p95_ms"] < 23_000, (d, aqm)
        # The transmit queues keep the modems busy while the MLPPP queue is short.
        assert aqm["goodput"] > 0.93 * tail["goodput"], (d, aqm, tail)
        # The 20 kB transfer's rounds wait 15-20 s instead of 100 s.
        assert aqm["short_s"] < 0.4 * tail["short_s"], (d, aqm, tail)
