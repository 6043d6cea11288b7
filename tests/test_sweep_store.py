"""The sweep results store: datasets written by earlier versions stay readable.

``tests/data/sweep-schema-1`` is a dataset of schema version 1, written by

    farlink sweep stpd-wireless --grid loss=0.01,0.05 --grid tcp=reno,sack,westwood-x --seeds 2 \
        --seed 5 --duration 5s --metric 'flows[0].min_rtt_s' --workers 1 \
        --out tests/data/sweep-schema-1

(``westwood-x`` is no congestion controller: its four runs are recorded as failed). It is never
regenerated: a later schema must keep reading it, through ``results query``, ``results summary``
and ``report``. The files are only read here.
"""

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from farlink.cli.app import main
from farlink.reports.html import write_report
from farlink.sweeps import dataset
from farlink.sweeps import sweep as sw

STORE_V1 = Path(__file__).parent / "data" / "sweep-schema-1"


def test_the_version_1_dataset_reads_with_every_standard_column():
    columns, _ = dataset.query(STORE_V1, "SELECT * FROM results LIMIT 0")
    for field in [
        *dataset._identity_fields(),
        *dataset._metric_fields(),
        *dataset._provenance_fields(),
    ]:
        assert field.name in columns, field.name
    # (finished_at, a time zone aware timestamp, needs pytz in DuckDB's Python conversion)
    columns, rows = dataset.query(STORE_V1, "SELECT * EXCLUDE (finished_at) FROM results")
    assert len(rows) == 12
    records = [dict(zip(columns, row, strict=True)) for row in rows]
    assert {r["run_key"] for r in records} == {p.stem for p in (STORE_V1 / "points").iterdir()}
    assert {r["schema_version"] for r in records} == {1}
    good = [r for r in records if r["error"] is None]
    failed = [r for r in records if r["error"] is not None]
    assert len(good) == 8 and len(failed) == 4
    assert {r["tcp"] for r in failed} == {"westwood-x"}
    for r in good:
        assert 0 < r["normalized_goodput"] < 1
        assert r["flows[0].min_rtt_s"] == pytest.approx(0.166, abs=0.01)
        assert r["drops_corruption"] >= 0 and r["seed_entropy"] == 5
    assert all(r["normalized_goodput"] is None for r in failed)


def test_summary_and_report_of_the_version_1_dataset(tmp_path):
    summary = dataset.summarize(STORE_V1, metrics=["normalized_goodput", "timeouts"])
    assert summary.axes == ["loss", "tcp"]
    assert len(summary.points) == 6 and len(summary.failures) == 4
    _, rows = dataset.query(
        STORE_V1,
        "SELECT loss, tcp, avg(normalized_goodput) FROM results WHERE error IS NULL GROUP BY ALL",
    )
    means = {(loss, tcp): mean for loss, tcp, mean in rows}
    for point in summary.points:
        metric = point["metrics"]["normalized_goodput"]
        key = (point["params"]["loss"], point["params"]["tcp"])
        if key[1] == "westwood-x":
            assert point["failed"] == 2 and metric["n"] == 0
        else:
            assert metric["n"] == 2 and metric["mean"] == pytest.approx(means[key])
    page = write_report(STORE_V1, tmp_path / "report.html")
    assert "westwood-x" in page.read_text(encoding="utf-8")


def test_results_commands_read_the_version_1_dataset(capsys):
    assert main(["results", "summary", str(STORE_V1), "--metric", "goodput_bps", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert len(printed["points"]) == 6
    sql = "SELECT count(*) AS n FROM results WHERE error IS NULL"
    assert main(["results", "query", str(STORE_V1), sql, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == [{"n": 8}]


def test_a_standard_column_added_later_reads_as_nulls_in_old_files(monkeypatch):
    # A later version adds a metric to every row; the version 1 files do not have it.
    # The dataset's columns come from the metrics the dataset module reads.
    monkeypatch.setattr(dataset, "METRICS", (*sw.METRICS, "drops_future_cause"))
    monkeypatch.setattr(dataset, "_INT_METRICS", {*sw._INT_METRICS, "drops_future_cause"})
    sql = "SELECT count(*), count(drops_future_cause), typeof(any_value(drops_future_cause))"
    _, rows = dataset.query(STORE_V1, f"{sql} FROM results")
    assert rows == [(12, 0, "BIGINT")]
    summary = dataset.summarize(STORE_V1, metrics=["drops_future_cause"])
    assert all(p["metrics"]["drops_future_cause"]["n"] == 0 for p in summary.points)


def test_old_and_new_files_in_one_dataset(tmp_path):
    # A sweep resumed by a later version: its new files carry a column the old ones lack.
    store = tmp_path / "store"
    shutil.copytree(STORE_V1, store)
    old = sorted((store / "points").glob("*.parquet"))[0]
    table = pq.read_table(old)
    newer = table.append_column("queue_peak_pkts", pa.array([17], pa.int64()))
    pq.write_table(
        newer.set_column(0, "run_key", pa.array(["f" * 24])), store / "points" / "f.parquet"
    )
    _, rows = dataset.query(store, "SELECT run_key, queue_peak_pkts FROM results ORDER BY run_key")
    assert len(rows) == 13
    assert [q for key, q in rows if key == "f" * 24] == [17]
    assert all(q is None for key, q in rows if key != "f" * 24)
