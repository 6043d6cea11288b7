"""The queue-discipline study on the seeds' far links (docs/aqm.md): what its table says holds."""

from farlink.reproduce.aqm import PATHS, _run


def test_on_the_geo_hop_an_aqm_halves_the_short_transfer_and_codel_wants_its_interval_at_the_rtt():
    geo = next(p for p in PATHS if p.preset == "marchese-geo")
    tail, codel, codel_rtt = (_run(geo, d, seed=1) for d in ("droptail", "codel", "codel-rtt"))
    # Drop-tail keeps the routers' 100 packets full: the round trip nearly doubles (511 ms bare).
    assert tail["rtt_p50_ms"] > 900 and codel["rtt_p50_ms"] < 560
    assert codel["short_s"] < 0.6 * tail["short_s"]
    # CoDel's 100 ms interval drops again before a 511 ms round trip shows the first drop.
    assert codel["goodput"] < 0.6 < 0.8 < codel_rtt["goodput"]
