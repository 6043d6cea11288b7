"""Split connections (seed 002's relay entity) and the GEO testbed presets, from Python."""

import json

import numpy as np
import pytest

from farlink import _core, simulate
from farlink.reproduce.marchese import BER, packet_error_rate
from farlink.scenario import load_scenario
from support import run


def test_cli_simulate_split_json(capsys, tmp_path):
    code, out, err = run(
        capsys, "simulate", "marchese-geo-stp", "--seed", "1", "--json", "--out", str(tmp_path)
    )
    assert code == 0, err
    result = json.loads(out)
    assert result["delivered_bytes"] == 2_800_100
    (flow,) = result["flows"]
    assert [s["name"] for s in flow["segments"]] == ["ftp#0", "ftp#1", "ftp#2"]
    assert [(s["from"], s["to"]) for s in flow["segments"]] == [
        ("S", "R1"),
        ("R1", "R2"),
        ("R2", "D"),
    ]
    assert [r["node"] for r in flow["relays"]] == ["R1", "R2"]
    assert all(r["relayed_bytes"] == 2_800_100 for r in flow["relays"])
    assert all(s["delivered_bytes"] == 2_800_100 for s in flow["segments"])
    assert flow["transfer_time_s"] == result["transfer_time_s"]
    assert flow["finish_s"] == flow["segments"][-1]["finish_s"]


def test_connections_in_the_traces():
    result = simulate("marchese-geo-stp", sets=["trace={goodput=true}"])
    assert result.names["flows"] == ["ftp#0", "ftp#1", "ftp#2"]
    assert result.names["connections"][1] == [0, 1, "R1", "R2"]
    assert result.connections_of("ftp") == [0, 1, 2]
    good = result.trace("goodput")
    for c in (0, 1, 2):
        curve = good["delivered_bytes"][good["flow"] == c]
        assert len(curve) > 100 and np.all(np.diff(curve.astype(np.int64)) >= 0)
    # Downstream never ahead of upstream at a grid point.
    t0, t2 = (good["time_ns"][good["flow"] == c] for c in (0, 2))
    d0, d2 = (good["delivered_bytes"][good["flow"] == c] for c in (0, 2))
    common = np.intersect1d(t0, t2)
    assert np.all(d2[np.isin(t2, common)] <= d0[np.isin(t0, common)])
    # Unsplit: one connection, the flow itself.
    plain = simulate("marchese-geo", sets=["trace={}"])
    assert plain.connections_of(0) == [0]
    assert plain.summary["flows"][0]["segments"] == []


def test_the_split_beats_the_reference_over_the_geo_hop():
    reference = simulate("marchese-geo", sets=["trace={}"]).summary["flows"][0]
    split = simulate("marchese-geo-stp", sets=["trace={}"]).summary["flows"][0]
    assert split["transfer_time_s"] < 0.6 * reference["transfer_time_s"]


def test_presets_carry_the_packet_error_rates_of_ber_1e_8():
    for name in ("marchese-geo", "marchese-geo-stp"):
        link = load_scenario(name)["links"][1]
        assert link["fwd"]["loss"]["p"] == pytest.approx(packet_error_rate(BER, 1500), rel=1e-12)
        assert link["rev"]["loss"]["p"] == pytest.approx(packet_error_rate(BER, 52), rel=1e-12)
    # A frame of n bytes survives with probability (1 - BER)^(8n).
    assert packet_error_rate(1e-8, 1500) == pytest.approx(1 - (1 - 1e-8) ** (8 * 1507))


@pytest.mark.parametrize(
    ("sets", "path"),
    [
        (['flows[0].relays=["X"]'], "flows[0].relays[0]"),
        (["flows[0].segments=[{}]"], "flows[0].segments"),
        (['flows[0].segments[1].tcp.cc="warp"'], "flows[0].segments[1].tcp.cc"),
        (['flows[0].relay_buffer="10B"'], "flows[0].relay_buffer"),
    ],
)
def test_split_errors_name_their_field(sets, path):
    with pytest.raises(_core.ScenarioError) as info:
        simulate("marchese-geo-stp", sets=sets)
    assert info.value.path == path


def test_send_buffer_limits_the_reference_tcp():
    small = simulate("marchese-geo", sets=['flows[0].tcp.send_buffer="16KiB"', "trace={}"])
    flow = small.summary["flows"][0]
    assert flow["goodput_bps"] < 16384 * 8 / flow["min_rtt_s"]
    assert np.isfinite(flow["transfer_time_s"])
