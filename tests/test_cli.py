"""The farlink command: JSON outputs, one-line errors with exit status 2."""

import json

import numpy as np
import pytest

from support import run


def test_calldrop_example_of_the_issue(capsys):
    code, out, err = run(
        capsys,
        "predict", "calldrop", "--size", "20.6MB", "--links", "8", "--rtt", "19s",
        "--loss", "5e-4", "--drop-rate", "1/50min", "--t0", "60s", "--mss", "1448",
        "--wmax", "47.9KB", "--json",
    )  # fmt: skip
    assert code == 0, err
    result = json.loads(out)
    assert result["transfer_time_s"] / 60 == pytest.approx(187, rel=0.01)  # Table 6.1
    assert result["throughput_bps"] == pytest.approx(result["throughput_pkts_per_s"] * 1448 * 8)
    assert result["window_limited"] is True


SHORT_KEYS = ["transfer_time_s", "cardwell_latency_s", "sikdar_latency_s"]
PFTK_KEYS = ["throughput_bps", "approx_throughput_pkts_per_s", "mathis_throughput_pkts_per_s"]


@pytest.mark.parametrize(
    ("model", "args", "keys"),
    [
        ("pftk", ["--rtt", "200ms", "--loss", "0.01"], PFTK_KEYS),
        ("mathis", ["--rtt", "200ms", "--loss", "0.01"], ["throughput_pkts_per_s"]),
        ("iridium-rtt", ["--arq-time", "1.5s"], ["rtt_s"]),
        ("short", ["--size", "50KB", "--rtt", "600ms", "--loss", "0.01"], SHORT_KEYS),
        ("drop-loss", ["--detect", "10s", "--segment", "1.5KB"], ["packets_lost"]),
    ],
)  # fmt: skip
def test_each_model_prints_one_json_object(capsys, model, args, keys):
    code, out, err = run(capsys, "predict", model, *args, "--json")
    assert code == 0, err
    result = json.loads(out)
    for key in keys:
        assert np.isfinite(result[key])


def test_iridium_rtt_worked_example(capsys):
    _, out, _ = run(capsys, "predict", "iridium-rtt", "--arq-time", "1.5s", "--json")
    assert json.loads(out)["rtt_s"] == pytest.approx(19.5)


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["predict", "calldrop", "--size", "0MB"], "--size: size '0MB' must be positive"),
        (["predict", "calldrop", "--size", "-1MB"], "--size"),
        (["predict", "calldrop", "--size", "1MB", "--loss", "1.5"], "--loss: probability"),
        (["predict", "calldrop", "--size", "1MB", "--loss", "0"], "--loss"),
        (["predict", "calldrop", "--size", "1MB", "--rtt", "3 parsecs"], "--rtt: unknown"),
        (["predict", "calldrop", "--size", "1MB", "--drop-rate", "often"], "--drop-rate"),
        (["predict", "calldrop", "--size", "1MB", "--links", "0"], "--links"),
        (["predict", "calldrop"], "--size: missing: give --size, or a scenario"),
        (["predict", "pftk", "--rtt", "1s", "--loss", "0.1", "--bogus"], "No such option: --bogus"),
        (["predict", "iridium-rtt", "--frame-size", "100B"], "--frame-size"),
        (["predict", "short", "--size", "1KB", "--rtt", "1s", "--loss", "0.6"], "short: p must"),
        (["reproduce", "no-such-table"], "unknown reproduction 'no-such-table'"),
        (["fit-drops", "/nonexistent/drops.csv"], "/nonexistent/drops.csv: cannot read"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line_and_exit_2(capsys, argv, fragment):
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1, err
    assert err.startswith("farlink: error: ")
    assert fragment in err
    assert "Traceback" not in err


def test_fit_drops_from_a_csv_log(capsys, tmp_path):
    rng = np.random.default_rng(2004)
    beta = 1 / 3000
    lines = ["modem,time"]
    for modem in ["Kansas", "Nebraska", "Iowa", "Texas"]:
        times = np.cumsum(rng.exponential(1 / beta, 60))
        lines += [f"{modem},{t:.3f}" for t in times]
    log = tmp_path / "drops.csv"
    log.write_text("\n".join(lines) + "\n")
    code, out, err = run(capsys, "fit-drops", str(log), "--json")
    assert code == 0, err
    fit = json.loads(out)
    assert fit["ci_low_per_s"] <= beta <= fit["ci_high_per_s"]
    assert fit["verdict"] == "exponential not rejected"
    assert fit["modems"] == ["Kansas", "Nebraska", "Iowa", "Texas"]


def test_fit_drops_names_the_bad_line(capsys, tmp_path):
    log = tmp_path / "drops.csv"
    log.write_text("modem,time\nKansas,10\nKansas,yesterday\n")
    code, _, err = run(capsys, "fit-drops", str(log))
    assert code == 2
    assert "line 3" in err


def test_reproduce_json_and_files(capsys, tmp_path):
    code, out, err = run(
        capsys, "reproduce", "zaghloul-table-6.1", "--out", str(tmp_path), "--json"
    )
    assert code == 0, err
    result = json.loads(out)
    assert result["id"] == "zaghloul-table-6.1"
    assert {"label", "unit", "published", "ours"} <= set(result["rows"][0])
    assert json.loads((tmp_path / "reproduce" / "zaghloul-table-6.1.json").read_text()) == result


def test_reproduce_list_names_every_entry(capsys):
    code, out, _ = run(capsys, "reproduce", "--list")
    assert code == 0
    for name in [
        "zaghloul-table-6.1",
        "zaghloul-table-6.2",
        "zaghloul-fig-6.5",
        "zaghloul-fig-6.6",
    ]:
        assert name in out


def test_help_says_which_units(capsys):
    code, out, _ = run(capsys, "predict", "calldrop", "--help")
    assert code == 0
    assert "20.6MB" in out
    assert "1/50min" in out


def test_predict_stpd_gives_the_published_poles(capsys):
    code, out, err = run(capsys, "predict", "stpd", "--json")
    assert code == 0, err
    result = json.loads(out)
    poles = sorted((re, im) for re, im in result["poles"])
    published = sorted([(-0.5023, 0.0), (0.8031, -0.4155), (0.8031, 0.4155), (0.8961, 0.0)])
    assert np.allclose(poles, published, atol=1e-3)
    assert result["stable"] is True
    assert 0 < result["normalized_throughput"] < 1
    code, _, err = run(capsys, "predict", "stpd", "--reading", "sideways")
    assert code == 2 and "--reading" in err
