"""Reproductions of seed 000 against the published numbers."""

import numpy as np
import pytest

from farlink.reproduce import entries, run
from farlink.reproduce.doc import FAST_SIM


@pytest.fixture(scope="module")
def out_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("reproduce")


def test_table_6_1_within_one_percent(out_dir):
    rep = run("zaghloul-table-6.1", out_dir)
    assert len(rep.rows) == 4
    for row in rep.rows:
        assert row.published is not None
        assert abs(row.ours / row.published - 1) <= 0.01, row


def test_table_6_2_within_five_percent(out_dir):
    rep = run("zaghloul-table-6.2", out_dir)
    assert len(rep.rows) == 6
    assert rep.to_dict()["all_within_tolerance"] is True
    assert max(abs(r.relative_error) for r in rep.rows) <= 0.05


def test_worked_examples_are_exact(out_dir):
    for id in ("zaghloul-sec-4.1.6", "zaghloul-sec-5.2"):
        for row in run(id, out_dir).rows:
            assert row.ours == pytest.approx(row.published), row


def test_figure_6_5_rises_with_loss_and_reports_the_gap(out_dir):
    rep = run("zaghloul-fig-6.5", out_dir)
    plotted = [r.ours for r in rep.rows if r.published is None]
    assert np.all(np.diff(plotted) > 0)
    gap = next(r for r in rep.rows if r.published is not None)
    assert gap.published == 25.0
    assert any("not reproduced" in n for n in rep.notes)
    assert rep.figures[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_figure_6_6_timeout_matters_more_at_higher_drop_rates(out_dir):
    rep = run("zaghloul-fig-6.6", out_dir)
    by_beta = {}
    for row in rep.rows:
        _, beta = row.label.split(", ")
        by_beta.setdefault(beta, []).append(row.ours)
    slopes = [curve[-1] - curve[0] for curve in by_beta.values()]
    assert len(slopes) == 3
    assert slopes == sorted(slopes) and slopes[0] > 0
    assert rep.figures[0].exists()


# Reproductions that simulate hours of Iridium transfers over eight seeds take tens of seconds
# each; they run under `make validate` (marker `slow`), the rest (the closed-form ones and the
# quick simulations, `farlink.reproduce.doc.FAST_SIM`) in every `make test`.
ENTRY_PARAMS = [
    pytest.param(
        e.id,
        marks=[pytest.mark.slow] if e.engine == "sim" and e.id not in FAST_SIM else [],
        id=e.id,
    )
    for e in entries()
]


@pytest.mark.parametrize("entry_id", ENTRY_PARAMS)
def test_every_entry_runs_and_is_well_formed(out_dir, entry_id):
    rep = run(entry_id, out_dir)
    assert rep.rows, entry_id
    document = rep.to_dict()
    assert document["id"] == entry_id
    for row in document["rows"]:
        assert isinstance(row["label"], str) and row["unit"]
        assert row["published"] is None or isinstance(row["published"], float)
    assert (out_dir / f"{entry_id}.json").exists()


@pytest.mark.slow
@pytest.mark.parametrize(
    "entry_id", ["zaghloul-table-6.1-sim", "zaghloul-table-6.2-sim", "field-throughput"]
)
def test_simulated_field_transfers_within_twenty_percent(out_dir, entry_id):
    # The engine reproduces the field measurements of seed 000 Tables 6.1 and 6.2 (mean of
    # eight seeds) within 20 %.
    rep = run(entry_id, out_dir)
    assert all(row.within_tolerance for row in rep.rows), [r.to_dict() for r in rep.rows]


def test_reproductions_are_deterministic(tmp_path):
    first = run("zaghloul-fig-6.5", tmp_path / "a")
    second = run("zaghloul-fig-6.5", tmp_path / "b")
    assert first.to_dict()["rows"] == second.to_dict()["rows"]
    assert first.figures[0].read_bytes() == second.figures[0].read_bytes()


def test_stpd_fig_4_8_against_the_text_of_section_4_4_1_1(out_dir):
    rep = run("stpd-fig-4.8", out_dir)
    curves = {}
    for row in rep.rows:
        curves.setdefault(row.label.split(",")[0], []).append(row)
    for variant in ("tahoe", "reno", "vegas"):
        values = [r.ours for r in curves[variant]]
        assert len(values) == 6
        assert np.all(np.diff(values) < 0), values  # throughput falls with the error rate
        assert values[-1] < 0.1  # "well below 10 percent" at p = 0.1
    assert curves["vegas"][3].ours < 0.5  # "below 50 percent" at 1e-2
    for variant in ("tahoe", "reno"):
        assert curves[variant][3].within_tolerance  # "around 30 percent" at 1e-2
    stpd_1e2, stpd_1e1 = curves["stpd"][3], curves["stpd"][5]
    assert stpd_1e2.within_tolerance  # 94 % published
    assert stpd_1e2.ours > 2 * curves["reno"][3].ours  # the thesis's claim: far above Reno
    # At 0.1 ST-PD stays far below the published 0.40 (documented departure, not tuned away).
    assert stpd_1e1.within_tolerance is False
    assert any("0.40" in note for note in rep.notes)


def test_fig_5_1_call_drops_and_timeouts_go_together(out_dir):
    # Seed 000 section 5.2: "a strong correlation between call drops and timeouts", "timeouts
    # due to link errors were negligible"; Figure 5.1 draws the drops on the time-sequence.
    rep = run("zaghloul-fig-5.1", out_dir)
    rows = {r.label: r.ours for r in rep.rows}
    assert rows["seed 1: call drops in 33 min"] >= 1
    assert rows["seeds 1-8: call drops followed by a timeout"] >= 80
    assert rows["seeds 1-8: timeouts following no call drop within 120 s"] <= 10
    (figure,) = rep.figures
    assert figure.name == "zaghloul-fig-5.1-tseq.png"
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_field_uptime_is_registered_under_the_issue_id():
    ids = {e.id: e for e in entries()}
    assert "field-uptime" in ids and "kumics-uptime" not in ids
    assert ids["field-uptime"].engine == "sim"  # hours of simulated time: a slow entry
