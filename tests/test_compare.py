"""``farlink compare``: model, sim and emulate side by side. The model column is checked against
``farlink predict`` of the same scenario; the full run really emulates where the host can
(CI runs as root) and is skipped, saying why, where it cannot; the path without the emulator
runs everywhere with the emulator made unavailable."""

import json

import pytest

from farlink import _core
from farlink import compare as compare_module
from farlink.cli.app import main
from farlink.compare import compare, model_column
from farlink.scenario import apply_overrides, load_scenario, resolve
from support import REAL_TIME, needs_namespaces

pytestmark = REAL_TIME

RUN = ["stpd-wireless", "--size", "100KB", "--duration", "20s"]


def resolved(name: str, **overrides) -> dict:
    return resolve(apply_overrides(load_scenario(name), **overrides))


def predicted(capsys, *args: str) -> dict:
    assert main(["predict", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_loss_based_controller_gets_pftk_as_predict_gives_it(capsys):
    doc = model_column(resolved("stpd-wireless", size="100KB"), scenario="stpd-wireless")
    assert doc["engine"] == "model"
    assert doc["model"] == "pftk"
    assert "PFTK" in doc["why"]
    pftk = predicted(capsys, "pftk", "stpd-wireless")
    assert doc["goodput_bps"] == pytest.approx(pftk["throughput_bps"], rel=1e-12)
    assert doc["transfer_time_s"] == pytest.approx(100_000 * 8 / doc["goodput_bps"])
    assert 0 < doc["normalized_goodput"] < 1
    assert doc["retransmissions"] is None and doc["timeouts"] is None and doc["drops"] is None


def test_a_bundle_with_call_drops_gets_eq_36_as_predict_gives_it(capsys):
    doc = model_column(resolved("iridium-4", size="200KB"), scenario="iridium-4")
    assert doc["model"] == "calldrop"
    assert "eq. 36" in doc["why"] and "call drops" in doc["why"]
    calldrop = predicted(capsys, "calldrop", "iridium-4", "--size", "200KB")
    assert doc["goodput_bps"] == pytest.approx(calldrop["throughput_bps"], rel=1e-12)
    assert doc["transfer_time_s"] == pytest.approx(calldrop["transfer_time_s"], rel=1e-12)


def test_bbr_has_no_closed_form_model_and_says_why():
    doc = model_column(resolved("stpd-wireless", tcp="bbr"), scenario="stpd-wireless")
    assert doc["model"] is None
    assert "BBR" in doc["why"]
    assert doc["goodput_bps"] is None and doc["transfer_time_s"] is None


def test_a_lossless_path_gets_the_window_limit_bounded_by_capacity():
    doc = model_column(resolved("stpd-wireless", loss=0.0), scenario="stpd-wireless")
    assert doc["model"] == "window"
    assert doc["capacity_binds"] == (doc["model_throughput_bps"] > doc["capacity_bps"])
    assert doc["goodput_bps"] == min(doc["model_throughput_bps"], doc["capacity_bps"])


def unavailable(*args, **kwargs):
    err = _core.EmulatorError("emulate needs CAP_NET_ADMIN (run as root)")
    err.kind = "unsupported"
    raise err


def test_without_the_emulator_the_rest_is_printed_with_one_warning(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(compare_module, "emulate", unavailable)
    assert main(["compare", *RUN, "--out", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    warnings = [line for line in captured.err.splitlines() if line]
    assert warnings == [
        "farlink: warning: emulate left out: emulate needs CAP_NET_ADMIN (run as root)"
    ]
    assert "model: pftk:" in captured.out
    for label in ("goodput (bit/s)", "normalized goodput", "transfer time (s)", "timeouts"):
        assert label in captured.out
    assert "skipped" in captured.out
    assert (tmp_path / "compare.png").stat().st_size > 10_000
    assert (tmp_path / "sim" / "summary.json").exists()
    assert not (tmp_path / "emulate").exists()


def test_json_without_the_emulator_has_model_and_sim_documents(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(compare_module, "emulate", unavailable)
    assert main(["compare", *RUN, "--json", "--out", str(tmp_path)]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["model"]["engine"] == "model"
    assert payload["sim"]["engine"] == "sim"
    assert payload["sim"]["delivered_bytes"] == 100_000
    assert payload["emulate"] is None
    assert "CAP_NET_ADMIN" in payload["skipped"]


def test_an_emulator_failure_that_is_not_missing_capability_is_an_error(monkeypatch, capsys):
    def refused(*args, **kwargs):
        err = _core.EmulatorError("--tcp vegass: unknown congestion control")
        err.kind = "usage"
        raise err

    monkeypatch.setattr(compare_module, "emulate", refused)
    assert main(["compare", *RUN]) == 2
    assert capsys.readouterr().err == ("farlink: error: --tcp vegass: unknown congestion control\n")


def test_bad_options_are_one_line_errors(capsys):
    assert main(["compare", "stpd-wireless", "--loss", "2"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("farlink: error: --loss:") and err.count("\n") == 1
    assert main(["compare", "no-such-scenario"]) == 2
    assert capsys.readouterr().err.count("\n") == 1


@needs_namespaces("emulator")
def test_all_three_engines_side_by_side(tmp_path, capsys):
    assert main(["compare", *RUN, "--tcp", "reno", "--json", "--out", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert "warning" not in captured.err
    payload = json.loads(captured.out)
    assert [payload[e]["engine"] for e in ("model", "sim", "emulate")] == [
        "model",
        "sim",
        "emulate",
    ]
    assert payload["skipped"] is None
    for engine in ("sim", "emulate"):
        assert payload[engine]["delivered_bytes"] == 100_000
    # The two packet engines carry one short transfer over one path: their goodputs agree to
    # within half. The model is a steady state (no slow start), so it is only checked present.
    sim_bps, emulate_bps = payload["sim"]["goodput_bps"], payload["emulate"]["goodput_bps"]
    assert max(sim_bps, emulate_bps) < 1.5 * min(sim_bps, emulate_bps)
    assert payload["model"]["model"] == "pftk" and payload["model"]["goodput_bps"] > 0
    assert (tmp_path / "emulate" / "summary.json").exists()


@needs_namespaces("emulator")
def test_the_figure_holds_both_cwnd_traces(tmp_path):
    result = compare("stpd-wireless", size="100KB", duration="20s", tcp="reno")
    assert len(result.sim.traces["cwnd"]["time_ns"]) > 10
    assert len(result.emulate.traces["tcp_info"]["time_s"]) > 10
    path = compare_module.figure(result, tmp_path / "compare.png")
    assert path.stat().st_size > 20_000
