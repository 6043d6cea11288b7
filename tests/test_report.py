"""`farlink report` (HTML report of a sweep) and `farlink reproduce --all` (Markdown document)."""

import re

import matplotlib.pyplot as plt
import numpy as np
import pytest

from farlink.cli.app import main
from farlink.reports.html import fmt, plotted_metrics
from farlink.reproduce import entries
from farlink.reproduce.doc import is_fast
from farlink.sweeps import dataset, executors
from farlink.sweeps import sweep as sw
from farlink.sweeps.run import run_sweep
from support import run


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("sweep") / "s"
    code = main([
        "sweep", "stpd-wireless", "--grid", "loss=0.001,0.01", "--grid", "tcp=reno,sack",
        "--seeds", "2", "--duration", "5s", "--out", str(out), "--no-progress",
    ])  # fmt: skip
    assert code == 0
    return out


def test_report_is_self_contained_with_figures_and_tables(capsys, sweep_dir, tmp_path):
    target = tmp_path / "r" / "report.html"
    code, out, err = run(capsys, "report", str(sweep_dir), "--out", str(target))
    assert code == 0, err
    assert str(target) in out
    page = target.read_text()
    # Nothing fetched from elsewhere: every src and href is inline data or a fragment.
    links = re.findall(r'(?:src|href)\s*=\s*["\']?([^"\'\s>]+)', page)
    assert links and not [u for u in links if re.match(r"(?i)https?:|//", u)]
    assert "<script" not in page and "<link" not in page
    summary = dataset.summarize(sweep_dir)
    images = re.findall(r'<img [^>]*src="data:image/png;base64,', page)
    assert len(images) == len(plotted_metrics(summary)) * len(summary.axes) == 4 * 2
    for point in summary.points:
        for metric in summary.metrics:
            stats = point["metrics"][metric]
            for key in ("mean", "ci_low", "ci_high"):
                assert f"<td>{fmt(stats[key])}</td>" in page
    assert "stpd-wireless" in page and "definition_sha256" in page
    assert "Failed runs" in page


def test_report_traces_a_chosen_run(capsys, sweep_dir, tmp_path):
    point = dataset.summarize(sweep_dir).points[0]["point_id"]
    target = tmp_path / "t.html"
    code, _, err = run(capsys, "report", str(sweep_dir), "--out", str(target), "--trace", point[:6])
    assert code == 0, err
    page = target.read_text()
    assert "Traces of chosen runs" in page and f"point {point}, replicate 0" in page
    assert len(re.findall("<img ", page)) == 4 * 2 + 1
    # The re-run with its recorded seed gives the recorded numbers again.
    table = page[page.index("re-run with tracing") :]
    rows = re.findall(r"<tr><td>(\w+)</td><td>([^<]*)</td><td>([^<]*)</td></tr>", table)
    assert {name for name, _, _ in rows} == {"normalized_goodput", "retransmissions", "timeouts"}
    assert all(recorded == rerun for _, recorded, rerun in rows)
    code, _, err = run(capsys, "report", str(sweep_dir), "--trace", "zzzz")
    assert code == 2 and err.startswith("farlink: error: --trace: 'zzzz': no run or point")


def test_report_default_path_and_failures(capsys, tmp_path):
    # `farlink sweep` refuses this grid before running it (every point is checked first); the
    # library runs it, so that one point's runs fail in the core and are recorded as failed.
    out = tmp_path / "bad"
    definition = sw.sweep_from_options(
        "stpd-wireless", grid=["links[1].fwd.loss.p=0.01,2"], fixed={"duration": "2s"}
    )
    report = run_sweep(definition, out, executor=executors.ProcessPool(1), progress=False)
    assert report.failed
    code, _, err = run(capsys, "report", str(out))
    assert code == 0, err
    page = (out / "report.html").read_text()
    assert "ScenarioError" in page


def test_report_of_a_folder_that_is_not_a_sweep(capsys, tmp_path):
    code, _, err = run(capsys, "report", str(tmp_path))
    assert code == 2
    assert err.startswith(f"farlink: error: {tmp_path}: ") and "not a sweep directory" in err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "report.html").exists()


def test_reproduce_all_writes_the_document(capsys, tmp_path):
    doc = tmp_path / "reproductions.md"
    code, _, err = run(
        capsys, "reproduce", "--all", "--out", str(tmp_path / "figs"), "--doc", str(doc)
    )
    assert code == 0, err
    text = doc.read_text()
    fast = [e for e in entries() if is_fast(e)]
    assert fast and len(fast) < len(entries())
    for entry in entries():
        assert (f"## {entry.id}\n" in text) == is_fast(entry)
        assert (tmp_path / "figs" / f"{entry.id}.json").exists() == is_fast(entry)
    header = "| label | unit | published | ours | difference | within tolerance |"
    assert text.count(header) == len(fast)
    # Rows of the per-reproduction tables: the lines after each header and its rule.
    blocks = text.split(header + "\n|---|---|---:|---:|---:|---|\n")[1:]
    rows = sum(len(re.match(r"(\|[^\n]*\n)*", block).group(0).splitlines()) for block in blocks)
    from farlink.reproduce import run as run_one

    expected = sum(len(run_one(e.id, tmp_path / "again").rows) for e in fast)
    assert rows == expected
    for png in (tmp_path / "figs").glob("*.png"):
        assert f"(figs/{png.name})" in text


def test_reproduce_all_refuses_an_id_too(capsys):
    code, _, err = run(capsys, "reproduce", "zaghloul-sec-5.2", "--all")
    assert code == 2 and err.startswith("farlink: error: --all:")


@pytest.fixture(scope="module")
def controllers_dir(tmp_path_factory):
    # Two seeds over three controllers and a lossy range: bands of two runs reach past zero
    # and past the whole link, and only Reno is what the PFTK model describes.
    out = tmp_path_factory.mktemp("sweep") / "cc"
    code = main([
        "sweep", "stpd-wireless", "--grid", "loss=0.001,0.01,0.1", "--grid", "tcp=reno,cubic,bbr",
        "--seeds", "2", "--duration", "10s", "--out", str(out), "--no-progress",
    ])  # fmt: skip
    assert code == 0
    return out


@pytest.fixture()
def figures(monkeypatch):
    """The report's figures as matplotlib objects, by their title's first words."""
    from farlink.reports import html as report_html

    drawn = {}

    def keep(fig):
        ax = fig.axes[0]
        drawn[ax.get_title().split(" (")[0]] = fig
        return ""

    monkeypatch.setattr(report_html, "_png", keep)
    yield drawn
    for fig in drawn.values():
        plt.close(fig)


def test_the_reno_model_is_drawn_for_reno_only(controllers_dir, figures, tmp_path):
    from farlink.reports.html import write_report

    page = write_report(controllers_dir, tmp_path / "r.html").read_text()
    ax = figures["normalized_goodput against loss"].axes[0]
    model = [line.get_label() for line in ax.get_lines() if "PFTK" in line.get_label()]
    assert model == ["PFTK model (Reno only), tcp=reno"]
    assert "it is not drawn for points running bbr, cubic" in page
    # The table leaves the model's column empty where it does not apply.
    summary = dataset.summarize(controllers_dir)
    cubic = next(p for p in summary.points if p["params"]["tcp"] == "cubic")
    assert cubic["metrics"][sw.MODEL_COLUMN]["mean"] is not None  # the sweep computed one


def test_a_categorical_axis_is_drawn_as_points_not_lines(controllers_dir, figures, tmp_path):
    from farlink.reports.html import write_report

    write_report(controllers_dir, tmp_path / "r.html")
    ax = figures["normalized_goodput against tcp"].axes[0]
    data = [line for line in ax.get_lines() if len(line.get_xdata()) > 1]
    assert data, "the points are drawn"
    assert all(line.get_linestyle() == "None" for line in data)
    assert sorted(t.get_text() for t in ax.get_xticklabels()) == ["bbr", "cubic", "reno"]
    numeric = figures["normalized_goodput against loss"].axes[0]
    assert any(line.get_linestyle() == "-" for line in numeric.get_lines())


def test_bands_stay_in_the_physical_range_and_few_seeds_are_flagged(
    controllers_dir, figures, tmp_path
):
    from farlink.reports.html import write_report

    page = write_report(controllers_dir, tmp_path / "r.html").read_text()
    summary = dataset.summarize(controllers_dir)
    crossing = [
        p for p in summary.points
        if p["metrics"]["normalized_goodput"]["ci_low"] < 0
        or p["metrics"]["normalized_goodput"]["ci_high"] > 1
    ]  # fmt: skip
    assert crossing, "two seeds give Student-t intervals past what a run can reach"
    for title in ("normalized_goodput against loss", "normalized_goodput against tcp"):
        ax = figures[title].axes[0]
        ys = [
            y
            for artist in [*ax.collections, *ax.get_lines()]
            for y in (
                artist.get_ydata() if hasattr(artist, "get_ydata")
                else np.concatenate([p.vertices[:, 1] for p in artist.get_paths()] or [[]])
            )
        ]  # fmt: skip
        assert min(ys) >= 0 and max(ys) <= 1, title
        caption = " ".join(t.get_text() for t in figures[title].texts)
        assert "band clipped to [0, 1]" in caption and "too few seeds" in caption
    assert "clipped to what a run can reach ([0, 1])" in page
    assert "Bands from 2 runs per point are too wide to read" in page
    retransmissions = figures["retransmissions against loss"].axes[0]
    low = min(p.vertices[:, 1].min() for c in retransmissions.collections for p in c.get_paths())
    assert low >= 0
