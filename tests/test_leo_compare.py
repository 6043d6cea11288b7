"""docs/leo.md's comparison (tools/leo_compare.py, `make leo-compare`) on 20 s schedules: a row
of its table per schedule, engine and controller, each carrying most of its link. The emulator's
four runs are real time (20 s each, about 100 s in all); without namespaces and TUN the module
skips, saying why."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from support import REAL_TIME, needs_namespaces

SCRIPT = Path(__file__).resolve().parents[1] / "tools" / "leo_compare.py"

# About 90 s of emulation (four 20 s runs): with `make validate`, beside `make leo-compare`
# itself, not in `make test`.
pytestmark = [REAL_TIME, pytest.mark.slow, needs_namespaces("leo-compare emulates kernel TCP")]


@pytest.fixture(scope="module")
def tool():
    spec = importlib.util.spec_from_file_location("leo_compare", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    # Its dataclasses resolve their annotations through sys.modules.
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_a_row_per_schedule_engine_and_controller_with_goodput(tool, tmp_path):
    figure = tmp_path / "leo-compare.png"
    results = tool.run_all("20s", tmp_path / "work", {"simulate", "emulate"})
    lines = tool.table(results)
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in lines[2:]]
    seen = {(r[0], r[1], r[2]) for r in rows}
    expected = {
        (preset.name, engine, f"{'farlink' if engine == 'simulate' else 'kernel'} {cc}")
        for preset in tool.PRESETS
        for engine, cc in tool.RUNS
    }
    assert seen == expected and len(rows) == len(expected)
    for r in rows:
        # Goodput of the link's rate: payload below what the link carries, and most of it
        # (a schedule not replayed, or a flow that stalled, falls outside).
        assert 0.5 < float(r[4]) <= 1.0, r
    for block in results.values():
        for run in block["runs"].values():
            assert len(run["goodput_per_second_bps"]) == 20
            assert sum(run["goodput_per_second_bps"]) > 0
    tool.figure(results, figure)
    assert figure.stat().st_size > 10_000
    # Kept runs are read back, not run again: the same table.
    assert tool.table(tool.run_all("20s", tmp_path / "work", {"simulate", "emulate"})) == lines
