"""`farlink predict MODEL [SCENARIO]`: inputs from the resolved scenario, bounded by capacity."""

import json

import pytest

from farlink.scenario import apply_overrides, load_scenario, resolve
from farlink.sweeps.model import pftk_inputs
from support import run


def test_one_modem_is_not_predicted_above_its_rate(capsys):
    code, out, err = run(capsys, "predict", "calldrop", "--size", "5MB", "--links", "1", "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["throughput_bps"] <= 2400
    assert result["model_throughput_bps"] > 2400 and result["capacity_binds"] is True
    # Whole segments at the capacity, as the model counts them (eq. 36: ceil(f_s / MSS)).
    segments_bits = result["segments"] * result["inputs"]["mss_bytes"] * 8
    assert result["transfer_time_s"] == pytest.approx(segments_bits / result["throughput_bps"])
    # RTT, W_max and T0 are the 8-modem bundle's: said on one line of stderr.
    assert err.startswith("farlink: warning: --rtt 19s, --wmax 47.9KB, --t0 60s")
    assert err.count("\n") == 1


def test_the_bound_is_said_in_the_text(capsys):
    code, out, _ = run(capsys, "predict", "calldrop", "--size", "5MB", "--links", "1")
    assert code == 0
    assert "bounded by the path's capacity: 2,317 bit/s of payload" in out


def test_eight_modems_keep_the_published_prediction(capsys):
    code, out, err = run(capsys, "predict", "calldrop", "--size", "20.6MB", "--json")
    assert code == 0 and err == ""
    result = json.loads(out)
    assert result["capacity_binds"] is False
    assert result["transfer_time_s"] / 60 == pytest.approx(187, rel=0.01)  # Table 6.1


def test_one_transfer_time_where_the_capacity_does_not_bind(capsys):
    # Seed 000 Table 6.1's 1.38 MB row: the model's time is the transfer time (it was 748.6 s
    # beside the model's 749.3 s, the file counted in bytes in one and in segments in the other).
    code, out, err = run(capsys, "predict", "calldrop", "--size", "1.38MB", "--json")
    assert code == 0 and err == ""
    result = json.loads(out)
    assert result["capacity_binds"] is False
    assert result["transfer_time_s"] == result["model_transfer_time_s"]
    assert result["transfer_time_s"] == pytest.approx(749.32, abs=0.01)


def test_calldrop_reads_a_scenario(capsys):
    code, out, err = run(capsys, "predict", "calldrop", "iridium-3", "--json")
    assert code == 0, err
    result = json.loads(out)
    resolved = resolve(load_scenario("iridium-3"))
    flow = resolved["flows"][0]
    members = resolved["links"][0]["bundle"]["members"]
    inputs = result["inputs"]
    assert inputs["n_links"] == len(members) == 3
    assert inputs["rtt_s"] == pytest.approx(flow["base_rtt_s"])
    assert inputs["size_bytes"] == flow["app"]["size_bytes"]
    assert inputs["mss_bytes"] == flow["tcp"]["payload_bytes"]
    assert inputs["beta_per_s"] == pytest.approx(members[0]["call_drop_rate_per_s"])
    capacity = 3 * 2400 * flow["tcp"]["payload_bytes"] / flow["tcp"]["data_packet_bytes"]
    assert result["capacity_bps"] == pytest.approx(capacity)
    assert result["throughput_bps"] <= capacity


def test_pftk_reads_the_same_inputs_as_the_sweep(capsys):
    code, out, err = run(capsys, "predict", "pftk", "stpd-wireless", "--json")
    assert code == 0, err
    result = json.loads(out)
    x = pftk_inputs(apply_overrides(load_scenario("stpd-wireless"), loss=0.01))
    assert x is not None
    assert result["inputs"]["rtt_s"] == pytest.approx(x.rtt_s)
    assert result["inputs"]["p"] == pytest.approx(x.p)
    assert result["inputs"]["t0_s"] == x.t0_s and result["wmax_pkts"] == pytest.approx(x.wmax_pkts)
    # An option replaces the scenario's value.
    code, out, _ = run(capsys, "predict", "pftk", "stpd-wireless", "--rtt", "1s", "--json")
    assert json.loads(out)["inputs"]["rtt_s"] == 1.0


def test_two_lossy_hops_are_one_p_for_predict_and_the_sweep():
    # The first hop loses too: predict combined both hops while the sweep's model column read
    # the lossy_link's alone, so the two disagreed on one scenario.
    from farlink.predict import path_inputs

    doc = apply_overrides(
        load_scenario("stpd-wireless"),
        loss=0.01,
        sets=['links[0].fwd.loss={model="bernoulli", p=0.02}'],
    )
    x = pftk_inputs(doc)
    assert x is not None
    assert x.p == pytest.approx(1 - 0.98 * 0.99)
    assert path_inputs(resolve(doc)).p == x.p


@pytest.mark.parametrize("model", ["pftk", "mathis"])
def test_every_model_is_bounded(capsys, model):
    argv = ["--rtt", "10ms", "--loss", "1e-6", "--link-rate", "1Mbps", "--json"]
    code, out, err = run(capsys, "predict", model, *argv)
    assert code == 0, err
    result = json.loads(out)
    assert result["capacity_binds"] is True
    assert result["throughput_bps"] == pytest.approx(1e6 * 1448 / 1500)


def test_without_rtt_or_scenario_the_error_says_what_to_give(capsys):
    code, _, err = run(capsys, "predict", "pftk", "--loss", "0.01")
    assert code == 2
    assert err == "farlink: error: --rtt: missing: give --rtt or a scenario to read it from\n"
