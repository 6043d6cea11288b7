"""The AQM diagnosis's bookkeeping (bench/aqm_cells_diag.py, bench/aqm_scenario.py's stagger and
bench/ns3/aqm.py's diagnostic options), without ns-3 and without running a cell: the table's
scenarios are left as they were, episodes and fast convergence are counted by the rules the
notes quote, and bad diagnostic options are refused before ns-3 is imported."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"


def load(name: str, path: Path):
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))  # aqm_cells_diag imports aqm_scenario by name
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_stagger_only_moves_the_later_flows_starts():
    sc = load("aqm_scenario", BENCH / "aqm_scenario.py")
    plain = sc.scenario("codel", 4, False)
    assert all("start" not in f for f in plain["flows"])  # the table's cells: every flow at 0
    staggered = sc.scenario("codel", 4, False, stagger_s=0.005)
    assert [f.get("start") for f in staggered["flows"]] == [None, "5ms", "10ms", "15ms"]
    for a, b in zip(plain["flows"], staggered["flows"], strict=True):
        assert {k: v for k, v in b.items() if k != "start"} == a


def test_episodes_split_at_the_gap():
    d = load("aqm_cells_diag", BENCH / "aqm_cells_diag.py")
    gap = d.EPISODE_GAP_S
    times = np.array([10.0, 10.0 + gap / 2, 10.0 + gap, 10.0 + 2.6 * gap])
    eps = d.episodes(times, np.array([0, 1, 1, 2]))
    assert [(e["drops"], sorted(e["flows"])) for e in eps] == [(3, [0, 1]), (1, [2])]


def test_fast_convergence_counts_by_each_sides_rule():
    d = load("aqm_cells_diag", BENCH / "aqm_cells_diag.py")
    # a loss at exactly W_max is not below it (ns-3's whole segments on the plateau) ...
    assert d.below_w_max([97.0, 97.0, 98.0], integer=True) == [False, False]
    # ... a loss just under it is, and then W_max is (1 + beta)/2 of that window
    assert d.below_w_max([97.0, 96.6, 83.0, 82.0], integer=False) == [True, False, True]
    # ns-3 truncates W_max to whole segments: 0.85 * 95 = 80.75 -> 80, and 80 is not below it
    assert d.below_w_max([100.0, 95.0, 80.0], integer=True) == [True, False]
    assert d.below_w_max([100.0, 95.0, 80.5], integer=False) == [True, True]


def test_window_at_adds_up_the_flows():
    d = load("aqm_cells_diag", BENCH / "aqm_cells_diag.py")
    cwnd = [(np.array([0.0, 1.0]), np.array([10.0, 20.0])), (np.array([0.5]), np.array([5.0]))]
    assert d.window_at(cwnd, 0.2) == 10.0  # the second flow has not started
    assert d.window_at(cwnd, 1.0) == 25.0


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--set", "TcpCubic::Beta=0.7"], "--set: expected ns3::Type::Attribute=VALUE"),
        (["--flows", "4", "--stagger-ms", "4000"], "--stagger-ms: every flow must start"),
    ],
)
def test_ns3_script_refuses_bad_diagnostic_options(argv, message, capsys):
    aqm = load("ns3_aqm", BENCH / "ns3" / "aqm.py")
    with pytest.raises(SystemExit) as e:
        aqm.parse_args(argv)
    assert e.value.code == 2
    assert message in capsys.readouterr().err
