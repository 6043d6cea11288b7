"""The stall after each call drop (`farlink compare-bonding`, docs/multipath.md), read the same
way from the simulator's goodput trace and from the emulator's record of the receiving
application's reads: the emulator's reads are put on the simulator's 1 s grid first."""

import dataclasses

import numpy as np
import pytest

from farlink._core import MEMBER_STATE_NAMES
from farlink.bonding import (
    BONDINGS,
    GRID,
    _run,
    delivered_on_grid,
    stalls_after_drops,
    stalls_in,
)
from farlink.results.result import Result
from farlink.scenario import load_scenario
from farlink.sim import simulate

LOST = MEMBER_STATE_NAMES.index("call_lost")


def test_a_stall_is_the_longest_gap_between_moves_from_the_drop_to_the_next():
    times_s = np.arange(0.0, 11.0)
    # Moves at 0 to 3, nothing at 4 to 6, moves again from 7 on.
    delivered = np.array([0, 10, 20, 30, 30, 30, 30, 40, 50, 60, 70])
    # The gap under way at 2.5 counts from the drop (0.5 s); 3 to 7 is the longest.
    assert stalls_in(times_s, delivered, [2.5], 10.0) == [4.0]
    # A second drop at 8: the first one's gaps are those that begin before it.
    assert stalls_in(times_s, delivered, [2.5, 8.0], 10.0) == [4.0, 1.0]
    # Nothing delivered after the drop: the stall runs to the end of the transfer.
    assert stalls_in(times_s[:4], delivered[:4], [3.5], 9.0) == [5.5]
    assert stalls_in(times_s, delivered, [], 10.0) == []


def emulated(reads_s, totals, drops_s, finish_s, end_s) -> Result:
    """An emulator's result as `farlink.emulate` returns it: one flow, its reads and a
    bundle's member states (each drop a `call_lost` of member 1)."""
    ns = np.asarray(np.round(np.asarray(reads_s) * 1e9), dtype=np.uint64)
    drops_ns = np.asarray([round(t * 1e9) for t in drops_s], dtype=np.uint64)
    return Result(
        summary={
            "flows": [{"name": "f", "start_s": 0.0, "finish_s": finish_s}],
            "sim_time_s": end_s,
        },
        traces={
            "goodput": {
                "time_ns": ns,
                "flow": np.zeros(len(ns), dtype=np.uint32),
                "delivered_bytes": np.asarray(totals, dtype=np.uint64),
            },
            "member_state": {
                "time_ns": drops_ns,
                "link": np.zeros(len(drops_ns), dtype=np.uint32),
                "member": np.ones(len(drops_ns), dtype=np.uint32),
                "state": np.full(len(drops_ns), LOST, dtype=np.uint8),
            },
        },
        engine="emulate",
    )


def test_the_emulators_reads_are_put_on_the_simulators_grid():
    # A read every 10 ms from 0.01 s, none between 12.1 s and 15.56 s, the last at 20 s; a
    # call drop at 12.3 s.
    reads_s = [round(0.01 * k, 2) for k in range(1, 2001)]
    reads_s = [t for t in reads_s if t <= 12.1 or t >= 15.56]
    totals = [1000 * (k + 1) for k in range(len(reads_s))]
    result = emulated(reads_s, totals, [12.3], finish_s=20.0, end_s=20.5)
    times_s, delivered = delivered_on_grid(result)
    # The grid from the flow's start to the end of the run, each point what had been read.
    assert times_s.tolist() == [float(k) for k in range(21)]
    assert delivered[0] == 0 and delivered[12] == totals[reads_s.index(12.0)]
    assert delivered[13] == delivered[14] == delivered[15] == totals[reads_s.index(12.1)]
    assert delivered[20] == totals[-1]
    # Delivered moved at 13 s (the reads up to 12.1 s), then not until 16 s: 3 s on the grid,
    # as the simulator's trace would say of the same reads (the reads' own gap: 3.46 s).
    assert stalls_after_drops(result) == [pytest.approx(3.0)]


def test_no_reads_no_drops_and_a_drop_after_the_transfer():
    nothing = emulated([], [], [4.2], finish_s=None, end_s=6.0)
    assert delivered_on_grid(nothing)[1].tolist() == [0] * 7
    # Unfinished: the stall runs from the drop to the end of the run.
    assert stalls_after_drops(nothing) == [pytest.approx(1.8)]
    after = emulated([0.5, 1.5], [10, 20], [3.0], finish_s=1.5, end_s=3.5)
    assert stalls_after_drops(after) == []


@pytest.mark.parametrize("bonding", list(BONDINGS))
def test_a_simulated_runs_deliveries_as_reads_give_the_simulators_stalls(bonding):
    """The simulator's deliveries every 10 ms, kept only where they moved (as a sink's reads
    are), read as the emulator's record give the stalls of the simulator's own 1 s trace."""
    doc = load_scenario("iridium-4")
    sets = ['links[0].bundle.call_drop_rate="1/5min"']
    transport = BONDINGS[bonding]
    _, row = _run(doc, transport, 1, "300KB", sets)
    assert row["call_drops"] > 0, "the seed meets no call drop: pick one that does"
    fine_sets = [*sets, 'trace={goodput=true,member_state=true,goodput_interval="10ms"}']
    fine = simulate(doc, size="300KB", seed=1, transport=transport, sets=fine_sets)
    g = fine.trace("goodput")
    moved = np.concatenate([[True], np.diff(g["delivered_bytes"]) > 0])
    reads = {name: column[moved] for name, column in g.items()}
    as_emulated = dataclasses.replace(
        fine, engine="emulate", traces={**fine.traces, "goodput": reads}
    )
    assert GRID == "1s"
    assert stalls_after_drops(as_emulated) == row["stall_after_drop_s"]
    # Read at 10 ms the same run's stalls differ: the grid is what makes the two the same.
    assert stalls_after_drops(fine) != row["stall_after_drop_s"]
