"""Competing traffic (issue 30, docs/traffic.md): the draws of a short-flow class against their
distributions (Kolmogorov-Smirnov at 1 %), a size CDF read from a file, and the traffic figures
in the result document and its schema."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import numpy as np
import pytest
from scipy import stats

from farlink import _core
from farlink.cli.app import main
from farlink.scenario import to_core_json

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = json.loads((ROOT / "docs" / "result.schema.json").read_text(encoding="utf-8"))
ALPHA = 0.01


def path_with(app: dict, duration: str = "2000s", seed: int = 3) -> dict:
    return {
        "duration": duration,
        "seed": seed,
        "nodes": ["S", "D"],
        "links": [{"a": "S", "b": "D", "rate": "10Mbps", "delay": "20ms"}],
        "flows": [{"name": "web", "from": "S", "to": "D", "app": app}],
    }


def plan(app: dict, **kw) -> tuple[np.ndarray, np.ndarray]:
    rows = _core.short_flow_plan(to_core_json(path_with(app, **kw)), 0)
    at = np.array([r[0] for r in rows])
    sizes = np.array([r[1] for r in rows], dtype=float)
    return at, sizes


def test_arrivals_are_a_poisson_process_of_the_rate_given():
    at, _ = plan({"kind": "flows_poisson", "rate": 5, "size": {"mean": "10kB"}})
    gaps = np.diff(np.concatenate([[0.0], at]))
    assert len(gaps) == pytest.approx(10_000, rel=0.05)
    assert stats.kstest(gaps, "expon", args=(0, 1 / 5)).pvalue > ALPHA
    # The same process at twice the rate is not accepted as this one: the test can fail.
    assert stats.kstest(gaps, "expon", args=(0, 1 / 10)).pvalue < ALPHA


def test_a_load_sets_the_rate_from_the_bottleneck_and_the_mean_size():
    # 0.5 x 10 Mbit/s over 8 x 50 kB: 12.5 connections a second.
    at, _ = plan({"kind": "flows_poisson", "load": 0.5, "size": {"mean": "50kB"}}, duration="800s")
    gaps = np.diff(np.concatenate([[0.0], at]))
    assert stats.kstest(gaps, "expon", args=(0, 1 / 12.5)).pvalue > ALPHA


@pytest.mark.parametrize(
    ("size", "dist"),
    [
        ({"distribution": "exponential", "mean": "50kB"}, stats.expon(scale=50_000)),
        # Pareto with mean 50 kB and shape 1.5: scale 50 kB x 0.5 / 1.5.
        (
            {"distribution": "pareto", "mean": "50kB", "shape": 1.5},
            stats.pareto(b=1.5, scale=50_000 / 3),
        ),
        # Lognormal with mean 50 kB, sigma 1: mu = ln(50 kB) - 1/2.
        (
            {"distribution": "lognormal", "mean": "50kB", "sigma": 1.0},
            stats.lognorm(s=1.0, scale=np.exp(np.log(50_000) - 0.5)),
        ),
    ],
)
def test_sizes_follow_their_distribution(size, dist):
    _, sizes = plan({"kind": "flows_poisson", "rate": 5, "size": size})
    assert stats.kstest(sizes, dist.cdf).pvalue > ALPHA
    # And not another of the same mean.
    other = stats.expon(scale=25_000)
    assert stats.kstest(sizes, other.cdf).pvalue < ALPHA


def cdf_of(points):
    xs, ps = zip(*points, strict=True)
    return lambda x: np.interp(x, xs, ps, left=0.0, right=1.0)


def test_sizes_from_a_cdf_file(tmp_path):
    points = [(1_000, 0.0), (10_000, 0.5), (100_000, 0.9), (1_000_000, 1.0)]
    (tmp_path / "sizes.txt").write_text(
        "# size_bytes cumulative_probability\n" + "".join(f"{s} {p}\n" for s, p in points)
    )
    scenario = tmp_path / "web.toml"
    scenario.write_text(
        'duration = "2000s"\nnodes = ["S", "D"]\n'
        '[[links]]\na = "S"\nb = "D"\nrate = "10Mbps"\ndelay = "20ms"\n'
        '[[flows]]\nfrom = "S"\nto = "D"\n'
        '[flows.app]\nkind = "flows_poisson"\nrate = 5\nsize = { cdf = "sizes.txt" }\n'
    )
    from farlink.scenario import load_scenario

    doc = load_scenario(scenario)
    assert doc["flows"][0]["app"]["size"]["cdf"] == [[float(s), p] for s, p in points]
    rows = _core.short_flow_plan(to_core_json(doc), 0)
    sizes = np.array([r[1] for r in rows], dtype=float)
    assert stats.kstest(sizes, cdf_of(points)).pvalue > ALPHA


def test_an_unreadable_cdf_file_is_one_line_naming_the_field(tmp_path, capsys):
    scenario = tmp_path / "web.toml"
    scenario.write_text(
        'duration = "10s"\nnodes = ["S", "D"]\n'
        '[[links]]\na = "S"\nb = "D"\nrate = "10Mbps"\ndelay = "20ms"\n'
        '[[flows]]\nfrom = "S"\nto = "D"\n'
        '[flows.app]\nkind = "flows_poisson"\nrate = 5\nsize = { cdf = "missing.txt" }\n'
    )
    code = main(["simulate", str(scenario), "--json"])
    err = capsys.readouterr().err
    assert code == 2
    assert "flows[0].app.size.cdf: cannot read" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_udp_and_short_flows_in_the_result_document():
    udp = {"kind": "udp_onoff", "rate": "1Mbps", "packet_bytes": 500, "on": "1s", "off": "1s"}
    doc = path_with({"kind": "flows_poisson", "load": 0.3, "size": {"mean": "20kB"}}, "30s")
    doc["flows"].append({"name": "voice", "from": "S", "to": "D", "app": udp})
    doc["flows"].append(
        {"name": "bulk", "from": "S", "to": "D", "app": {"kind": "unbounded"}, "start": "10s"}
    )
    doc["flows"].append({"name": "bulk2", "from": "S", "to": "D", "app": {"kind": "unbounded"}})
    rr = {"kind": "request_response", "request": "200B", "response": "5kB", "think": "1s"}
    doc["flows"].append({"name": "rr", "from": "S", "to": "D", "app": rr})
    from farlink.sim import simulate

    result = simulate(doc, duration="30s")
    jsonschema.Draft202012Validator(SCHEMA).validate(result.summary)
    web, voice = result.summary["flows"][0], result.summary["flows"][1]
    assert web["app"] == "flows_poisson" and web["flows_arrived"] > 0
    assert set(web["fct_s"]) == {"p50", "p90", "p99", "mean", "by_size"}
    assert voice["app"] == "udp_onoff" and 0 <= voice["loss_rate"] <= 1
    assert voice["jitter_s"]["p99"] >= voice["jitter_s"]["p50"] >= 0
    assert 0 < result.summary["jain_index"] <= 1
    rr = result.summary["flows"][4]
    assert rr["app"] == "request_response" and rr["exchanges_completed"] > 0
    assert rr["response_time_s"]["p50"] > 0.04  # at least the path's round trip


def test_simulate_prints_the_traffic_tables(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")  # rich wraps headings to the terminal's width
    code = main(["simulate", "iridium-4-mixed", "--duration", "3min", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0
    # The UDP telemetry's and the request/response flow's tables, by their headings and rows.
    assert "UDP flow" in out and "telemetry" in out
    assert "request/response" in out and "exchanges" in out
    code = main(["simulate", "geo-web", "--duration", "30s", "--out", str(tmp_path / "g")])
    out = capsys.readouterr().out
    assert code == 0 and "short flows" in out and "slowdown p50" in out
