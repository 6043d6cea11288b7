"""TCP Reno over IS-707 RLP (seed 004) from Python: the is707 preset through the command line,
and reduced versions of the bai-fig reproductions (the full ones run under `make validate`)."""

import json

import numpy as np
import pytest

from farlink.cli.app import main
from farlink.reproduce import bai


def test_simulate_is707_json_reports_the_radio_hop(capsys, tmp_path):
    code = main(
        [
            "simulate", "is707", "--json", "--duration", "600s", "--out", str(tmp_path / "run"),
            "--set", "links[1].rlp.pe=0.3", "--set", "links[1].rlp.fd_t=0.01",
            "--set", 'links[1].rlp.idle_frames="unlimited"',
        ]
    )  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    result = json.loads(out)
    flow = result["flows"][0]
    assert flow["delivered_bytes"] > 0
    goodput = flow["delivered_bytes"] * 8 / result["sim_time_s"] / 7600
    assert 0 < goodput < 0.7  # bounded by 1 - P_e (seed 004 sec. III)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    radio = summary["links"][1]
    assert radio["rlp"]["idle_frames"] == "unlimited" and radio["rlp"]["nak_rounds"] == 3
    fwd = radio["rlp"]["fwd"]
    assert fwd["idle_frames_sent"] > 0 and fwd["missing_by_idle"] > 0
    # Every packet given up by RLP is a drop with cause arq_give_up; nothing else drops.
    drops = result["drops"]
    assert drops["arq_give_up"] == sum(radio["rlp"][d]["packets_given_up"] for d in ("fwd", "rev"))
    assert drops["arq_give_up"] == sum(radio[d]["drops"]["arq_give_up"] for d in ("fwd", "rev"))
    assert sum(v for k, v in drops.items() if k != "arq_give_up") == 0


def test_bad_rlp_field_is_one_line_naming_the_path(capsys):
    code = main(["simulate", "is707", "--set", 'links[1].rlp.idle_frames="often"'])
    _, err = capsys.readouterr()
    assert code == 2
    assert "links[1].rlp.idle_frames" in err and "unlimited" in err


def test_reduced_fig_4_bound_and_idle_frame_gain():
    pes = (0.05, 0.3)
    means, outcomes = bai.long_time_goodput(
        pes, (0.01,), ("none", "unlimited"), 4_000.0, (1, 2), workers=1
    )
    for (pe, _fd, _idle), g in means.items():
        assert 0 < g <= 1 - pe
    # Correlated high-FER regime: idle frames help (seed 004 Figures 3 and 4).
    assert means[(0.3, 0.01, "unlimited")] > means[(0.3, 0.01, "none")]
    rows, notes = bai.fer_findings(means, outcomes, "unlimited", fd_ts=(0.01,), pes=pes)
    assert len(rows) == 2 and "Bound holds" in notes[0]
    assert "simulated seconds per wall second" in notes[-1]


def test_window_goodputs_cut_runs_into_equal_windows():
    # Two runs of 40 s on a 10-s grid, 950 bytes/s (7600 bit/s) in the first, half in the second.
    full = np.arange(5) * 9500
    half = np.arange(5) * 4750
    g = bai.window_goodputs([full, half], 10, 6)
    assert g.tolist() == [1.0] * 3 + [0.5] * 3
    g = bai.window_goodputs([full, half], 20, 2)
    assert g.tolist() == [1.0, 0.5]


def test_reduced_histograms_run_in_two_processes():
    grids, outcomes = bai.histogram_outcomes((1.0,), 4_000.0, 2, workers=2)
    rows, notes, figures = bai.histogram_findings(grids, outcomes, 200, None)
    by_label = {r.label: r for r in rows}
    means = [by_label[f"f_d T 1.0, {w} s windows: mean"].ours for w in bai.WINDOWS_S[:2]]
    assert all(0 < m < 0.7 for m in means)
    # Longer windows average more: their spread is smaller.
    sd = [by_label[f"f_d T 1.0, {w} s windows: standard deviation"].ours for w in (10, 100)]
    assert sd[1] < sd[0]
    most = by_label["most segments in a 10-s window"]
    assert most.published == 17.0 and most.ours >= 1
    assert "windows above 16 segments" in notes[0]
    assert "simulated seconds per wall second" in notes[-1]
    assert figures == []


@pytest.mark.parametrize("fd_t", [0.01, 1.0])
def test_same_seed_same_goodput(fd_t):
    p = bai.Point(0.3, fd_t, "5", 1_000.0, 4)
    assert bai.simulate_point(p).goodput == bai.simulate_point(p).goodput


def test_reduced_fig_9_reports_the_share_of_the_gain():
    means, outcomes = bai.long_time_goodput(
        (0.3,), (1.0,), ("0", "1", "5", "unlimited"), 3_000.0, (1,), workers=1
    )
    rows, notes = bai.idle_count_findings(means, outcomes, (0, 1, 5), fd_ts=(1.0,))
    assert [r.label for r in rows] == [
        "f_d T 1.0, 0 idle frames",
        "f_d T 1.0, 1 idle frames",
        "f_d T 1.0, 5 idle frames",
        "f_d T 1.0, unlimited idle frames",
    ]
    assert all(0 < r.ours < 0.7 for r in rows)
    # On the nearly independent channel one idle frame already helps.
    assert rows[1].ours > rows[0].ours
    assert "of the gain of unlimited idle frames at f_d T 1.0" in notes[0]
