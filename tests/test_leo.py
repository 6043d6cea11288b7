"""farlink leo: the orbit model against sgp4, the schedule's CSV and its slots, the RTT range."""

from __future__ import annotations

import csv
from datetime import UTC, datetime

import numpy as np
import pytest

from farlink.cli.app import main
from farlink.leo import COLUMNS, Capacity, build_schedule, config_of_preset, format_tle
from farlink.leo.tle import sgp4_gap_km

EPOCH = datetime(2024, 1, 1, tzinfo=UTC)
C_M_S = 299_792_458.0


@pytest.mark.parametrize("preset", ["starlink-like", "iridium-leo"])
def test_walker_satellites_agree_with_sgp4_on_their_tle(preset):
    """A TLE written from a Walker satellite's elements, read back by sgp4 (the reference
    SGP4), stays within 1 km of the built-in propagator over 10 minutes."""
    shell = config_of_preset(preset).shell
    total = shell.planes * shell.per_plane
    gaps = sgp4_gap_km(shell, EPOCH, [0, 7, total // 2, total - 1], duration_s=600.0)
    assert len(gaps) == 4 and max(gaps.values()) < 1.0, gaps


def _rows(path):
    with open(path, newline="") as f:
        reader = csv.reader(f)
        header = next(reader)
        return header, list(reader)


def test_starlink_like_csv_changes_satellite_only_at_15s_slots(tmp_path, capsys):
    out = tmp_path / "sl.csv"
    assert main(["leo", "--preset", "starlink-like", "--duration", "120s", "--out", str(out)]) == 0
    header, rows = _rows(out)
    assert tuple(header) == COLUMNS
    at = np.array([float(r[0]) for r in rows])
    assert at[0] == 0 and at[-1] == 120 and np.all(np.diff(at) > 0)
    sats = [r[4] for r in rows]
    changes = [at[k] for k in range(1, len(rows)) if sats[k] != sats[k - 1]]
    assert changes, "120 s of a 550 km shell with 15 s slots hands off at least once"
    assert all(x % 15 == 0 for x in changes), changes
    assert {r[3] for r in rows} == {"1"}
    # Same command, same bytes.
    again = tmp_path / "again.csv"
    main(["leo", "--preset", "starlink-like", "--duration", "120s", "--out", str(again)])
    assert again.read_bytes() == out.read_bytes()


def test_starlink_like_rtts_fall_in_the_propagation_range():
    """RTT = 2 x one-way bent-pipe delay, nothing else (no queue, no processing, no ground
    segment). It lies between a satellite overhead of both ends (4 x 550 km / c = 7.3 ms) and
    both ends at 25 degrees elevation (2 x 7.5 ms, the propagation figures Huston gives for a
    550 km shell, docs/leo.md), below the ~20-30 ms least RTTs measured to Starlink's PoP."""
    s = build_schedule(config_of_preset("starlink-like", duration_s=600.0))
    rtt = 2 * np.array([r[1] for r in s.rows if r[3] == 1])
    assert rtt.min() >= 4 * 550e3 / C_M_S
    assert rtt.max() <= 2 * 7.5e-3
    assert s.summary["rtt_max_s"] == pytest.approx(rtt.max())


def test_handoff_outage_takes_the_link_down_for_its_length():
    s = build_schedule(config_of_preset("starlink-like", duration_s=120.0, outage_s=2.0))
    rows = s.rows
    changes = [rows[k][0] for k in range(1, len(rows)) if rows[k][4] != rows[k - 1][4]]
    assert changes
    for at, _d, _r, up, _s in rows:
        in_outage = any(c <= at < c + 2.0 for c in changes)
        assert up == (0 if in_outage else 1), at
    assert s.summary["outage_s"] == pytest.approx(2.0 * len(changes))


def test_capacity_draws_are_per_slot_and_deterministic_for_a_seed():
    cap = Capacity("lognormal", 100e6, 0.5)
    a = build_schedule(config_of_preset("starlink-like", duration_s=60.0, capacity=cap, seed=3))
    b = build_schedule(config_of_preset("starlink-like", duration_s=60.0, capacity=cap, seed=3))
    c = build_schedule(config_of_preset("starlink-like", duration_s=60.0, capacity=cap, seed=4))
    assert a.to_csv() == b.to_csv() != c.to_csv()
    steps = [a.rows[k][0] for k in range(1, len(a.rows)) if a.rows[k][2] != a.rows[k - 1][2]]
    assert steps == [15.0, 30.0, 45.0, 60.0]  # a draw per slot, held through it


def test_iridium_leo_joins_greenland_and_kansas_through_two_satellites():
    s = build_schedule(config_of_preset("iridium-leo", duration_s=600.0))
    served = [r for r in s.rows if r[3] == 1]
    assert served and all(">" in r[4] for r in served)  # a satellite over each end, ISLs between
    rtt = 2 * np.array([r[1] for r in served])
    assert rtt.min() > 2 * 2 * 780e3 / C_M_S  # at least up and down at both ends


def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    out = tmp_path / "x.csv"
    for argv in (
        ["leo", "--duration", "12x"],
        ["leo", "--preset", "geo"],
        ["leo", "--terminal", "95,3"],
        ["leo", "--capacity", "uniform:5Mbit/s"],
        ["leo", "--policy", "random"],
        ["leo", "--seed", "-1"],
        ["leo", "--min-elevation", "nan"],
        ["leo", "--ground", "1,2,inf"],
        ["leo", "--step", "1e-9s"],
    ):
        assert main([*argv, "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert err.startswith("farlink: error:") and err.count("\n") == 1, err


def test_a_file_farlink_did_not_write_is_not_replaced(tmp_path, capsys):
    out = tmp_path / "mine.csv"
    out.write_text("keep me\n")
    assert main(["leo", "--duration", "30s", "--out", str(out)]) == 2
    assert out.read_text() == "keep me\n"
    assert main(["leo", "--duration", "30s", "--out", str(out), "--force"]) == 0
    assert out.read_text().startswith(",".join(COLUMNS))


def test_policies_on_two_crossing_satellites():
    """Satellite 0 sets while satellite 1 rises: `highest` hands off where they cross,
    `sticky` only when satellite 0 goes below the minimum elevation."""
    from farlink.leo.schedule import _highest, _sticky

    elev = np.array([[50, 10], [40, 20], [30, 30.5], [20, 40], [5, 50]], dtype=float)
    visible = elev >= 10
    assert _highest(elev, visible).tolist() == [0, 0, 1, 1, 1]
    assert _sticky(elev, visible).tolist() == [0, 0, 0, 0, 1]
    assert _highest(elev, elev >= 60).tolist() == [-1] * 5


def test_a_tle_file_of_the_shell_gives_the_same_schedule(tmp_path):
    """The starlink-like shell written as a TLE file (three-line sets named by satellite) and
    replayed with --tle through sgp4 serves the same satellites with the same delays (within
    a microsecond: the orbits agree within tens of metres)."""
    el = config_of_preset("starlink-like").shell.elements()
    sets = [format_tle(el, i, EPOCH, i + 1) for i in range(len(el.ids))]
    tles = tmp_path / "shell.tle"
    tles.write_text("".join(f"{n}\n{a}\n{b}\n" for n, a, b in sets))
    ours, theirs = tmp_path / "walker.csv", tmp_path / "tle.csv"
    common = ["leo", "--preset", "starlink-like", "--duration", "120s"]
    assert main([*common, "--out", str(ours)]) == 0
    assert main([*common, "--tle", str(tles), "--out", str(theirs)]) == 0
    _, a = _rows(ours)
    _, b = _rows(theirs)
    assert [r[4] for r in a] == [r[4] for r in b]
    gap_s = np.abs(np.array([float(r[1]) for r in a]) - np.array([float(r[1]) for r in b]))
    assert gap_s.max() < 1e-6


def test_a_bad_tle_file_is_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.tle"
    bad.write_text("SAT\n1 00001U 00000A   24001.00000000\n")
    assert main(["leo", "--tle", str(bad), "--out", str(tmp_path / "x.csv")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("farlink: error: --tle:") and err.count("\n") == 1, err
