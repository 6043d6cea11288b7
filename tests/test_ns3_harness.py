"""The ns-3 sweep's bookkeeping (bench/ns3/sweep.py), without ns-3: grids, cells, tables."""

from __future__ import annotations

import importlib.util
from pathlib import Path

SWEEP = Path(__file__).resolve().parents[1] / "bench" / "ns3" / "sweep.py"


def load_sweep():
    spec = importlib.util.spec_from_file_location("ns3_sweep", SWEEP)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def record(scenario, variant, loss, run, goodput):
    return {
        "inputs": {"scenario": scenario, "variant": variant, "sack": True, "loss": loss},
        "run": run,
        "normalized_goodput": goodput,
        "retransmissions": 10,
        "retransmissions_minus_drops": 1,
        "timeouts": run,
        "fast_recoveries": 2,
        "cwnd_mean_segments": 20.0,
        "queue_r_mean_packets": 3.0,
        "hybla_rho": {"changes": run - 1},
        "events_per_wall_s": 1e5,
        "delivered_packets_per_wall_s": 1e4,
    }


def test_controllers_grid_cells_are_kept_apart_by_scenario():
    sweep = load_sweep()
    grid = sweep.GRIDS["controllers"]
    keys = list(sweep.cell_keys(grid))
    assert len(keys) == 2 * 5 * 3
    records = [
        record("stpd-wireless", "cubic", 0.01, 1, 0.4),
        record("stpd-wireless", "cubic", 0.01, 2, 0.6),
        record("stpd-geo-t1", "cubic", 0.01, 1, 0.2),
    ]
    cells = {(c["scenario"], c["variant"], c["loss"]): c for c in sweep.summarize(records, grid)}
    assert set(cells) == {("stpd-wireless", "cubic", 0.01), ("stpd-geo-t1", "cubic", 0.01)}
    wireless = cells[("stpd-wireless", "cubic", 0.01)]
    assert wireless["n"] == 2
    assert abs(wireless["normalized_goodput_mean"] - 0.5) < 1e-9
    assert wireless["timeouts_mean"] == 1.5
    assert wireless["hybla_rho_changes_max"] == 1
    assert cells[("stpd-geo-t1", "cubic", 0.01)]["n"] == 1
    text = sweep.table(sweep.summarize(records, grid), grid)
    assert "stpd-geo-t1: mean normalised goodput" in text
    assert "0.500 (0.141)" in text


def test_only_the_controllers_grid_runs_the_lossless_cells_once():
    sweep = load_sweep()
    assert sweep.GRIDS["controllers"]["lossless_once"]
    assert not sweep.GRIDS["reno"]["lossless_once"]
    assert 0.0 in sweep.GRIDS["reno"]["losses"]
