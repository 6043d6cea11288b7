"""Sweeps: grids, seed trees, executors, resuming, failures, the dataset and its queries."""

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from scipy import stats

from farlink import simulate
from farlink.models import pftk_full_throughput
from farlink.sweeps.dataset import load_results, query
from farlink.sweeps.executors import DaskCluster, ProcessPool
from farlink.sweeps.model import model_normalized_goodput
from farlink.sweeps.run import plan, run_sweep
from farlink.sweeps.sweep import (
    METRICS,
    MODEL_COLUMN,
    SWEEP_SCHEMA_VERSION,
    SweepError,
    load_sweep,
    parse_grid_option,
    point_doc,
    point_seeds,
    sweep_from_options,
)
from support import run

# Columns whose values legitimately differ between two runs of the same sweep.
UNSTABLE = {"wall_time_s", "finished_at", "host"}

SWEEP_TOML = """
name = "loss-buffer"
scenario = "stpd-wireless"
seeds = 3
seed = 7
metrics = ["normalized_goodput", "timeouts", "flows[0].min_rtt_s"]

[fixed]
duration = "20s"
tcp = "sack"

[grid]
loss = [0.001, 0.02]
"links[1].queue_pkts" = [4, 30]
"""


def rows_by_key(out):
    table = load_results(out)
    return {row["run_key"]: row for row in table.to_pylist()}


@pytest.fixture(scope="module")
def pool_sweep(tmp_path_factory):
    """The sweep of SWEEP_TOML run once on the process pool (2 workers)."""
    folder = tmp_path_factory.mktemp("sweep")
    path = folder / "sweep.toml"
    path.write_text(SWEEP_TOML)
    report = run_sweep(load_sweep(path), folder / "out", executor=ProcessPool(2))
    return path, folder / "out", report


def test_grid_is_the_product_of_the_axes_in_order():
    sweep = sweep_from_options(
        "stpd-wireless",
        grid=["tcp=reno,sack", "loss=0,1e-3,0.01", "links[1].queue_pkts=4,30"],
        fixed={"duration": "10s"},
        sets=["flows[0].tcp.sack=true"],
        seeds=2,
    )
    points = sweep.points()
    assert len(points) == 12
    assert points[0].params == {"tcp": "reno", "loss": 0.0, "links[1].queue_pkts": 4}
    assert points[1].params == {"tcp": "reno", "loss": 0.0, "links[1].queue_pkts": 30}
    assert points[-1].params == {"tcp": "sack", "loss": 0.01, "links[1].queue_pkts": 30}
    assert len({p.point_id for p in points}) == 12
    tasks = plan(sweep)
    assert len(tasks) == 24 and len({t.run_key for t in tasks}) == 24
    doc = point_doc(sweep, points[-1].params, seed=5)
    assert doc["links"][1]["queue_pkts"] == 30
    assert doc["links"][1]["fwd"]["loss"] == {"model": "bernoulli", "p": 0.01}
    assert doc["flows"][0]["tcp"]["recovery"] == "sack"
    assert doc["flows"][0]["tcp"]["sack"] is True
    assert doc["duration"] == "10s" and doc["seed"] == 5 and doc["trace"] == {}
    # Values with commas inside brackets or quotes stay whole.
    assert parse_grid_option('extra.x=[1,2],"a,b",{k=1}') == ("extra.x", [[1, 2], "a,b", {"k": 1}])


def test_seeds_are_keyed_by_point_not_by_order():
    forward = sweep_from_options("stpd-wireless", grid=["loss=0.01,0.02", "tcp=reno,sack"], seeds=3)
    backward = sweep_from_options(
        "stpd-wireless", grid=["tcp=sack,reno", "loss=0.02,0.01"], seeds=5
    )
    seeds_forward = {(t.point_id, t.replicate): t.seed.seed for t in plan(forward)}
    seeds_backward = {(t.point_id, t.replicate): t.seed.seed for t in plan(backward)}
    # Same point and replication → same seed, whatever the order of axes and values or the
    # number of replications; the keys (and so the files) are the same too.
    assert all(seeds_backward[key] == seed for key, seed in seeds_forward.items())
    assert {t.run_key for t in plan(forward)} <= {t.run_key for t in plan(backward)}
    # Different points or replications → different seeds.
    assert len(set(seeds_backward.values())) == len(seeds_backward)
    # The seed is the SeedSequence child's first u64, as recorded.
    info = point_seeds(7, {"loss": 0.01, "tcp": "reno"}, 2)[1]
    child = np.random.SeedSequence(info.entropy, spawn_key=info.spawn_key)
    assert info.seed == int(child.generate_state(1, np.uint64)[0])
    assert info.entropy == 7 and info.spawn_key[-1] == 1 and len(info.spawn_key) == 5
    assert point_seeds(8, {"loss": 0.01, "tcp": "reno"}, 2)[1].seed != info.seed


def test_process_pool_writes_one_row_per_point_and_seed(pool_sweep):
    _, out, report = pool_sweep
    assert (report.points, report.runs, report.computed, report.reused) == (4, 12, 12, 0)
    assert report.failed == 0
    table = load_results(out)
    assert table.num_rows == 12
    columns = set(table.column_names)
    assert {"loss", "links[1].queue_pkts", "flows[0].min_rtt_s", MODEL_COLUMN} <= columns
    assert set(METRICS) <= columns
    provenance = {"seed", "seed_entropy", "seed_spawn_key", "farlink_version", "git_revision"}
    assert provenance | {"host", "python_version", "schema_version", "error"} <= columns
    assert str(table.schema.field("links[1].queue_pkts").type) == "int64"
    assert str(table.schema.field("seed").type) == "uint64"
    rows = table.to_pylist()
    assert all(r["error"] is None and r["schema_version"] == SWEEP_SCHEMA_VERSION for r in rows)
    assert {(r["loss"], r["links[1].queue_pkts"]) for r in rows} == {
        (0.001, 4), (0.001, 30), (0.02, 4), (0.02, 30)
    }  # fmt: skip
    assert sorted(r["replicate"] for r in rows) == [0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2]
    assert all(r["flows[0].min_rtt_s"] > 0.16 for r in rows)
    # A row is reproduced by `simulate` with the row's seed.
    row = rows[-1]
    again = simulate(
        "stpd-wireless", tcp="sack", loss=row["loss"], duration="20s", seed=row["seed"],
        sets=[f"links[1].queue_pkts={row['links[1].queue_pkts']}"],
    )  # fmt: skip
    assert again.summary["delivered_bytes"] == row["delivered_bytes"]
    assert again.summary["events"] == row["events"]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["axes"] == ["loss", "links[1].queue_pkts"] and manifest["runs"] == 12


def test_dask_local_cluster_gives_identical_rows(pool_sweep, tmp_path):
    path, out, _ = pool_sweep
    report = run_sweep(load_sweep(path), tmp_path / "dask", executor=DaskCluster(local_workers=2))
    assert report.computed == 12 and report.failed == 0
    assert report.executor.startswith("Dask LocalCluster")
    pool_rows, dask_rows = rows_by_key(out), rows_by_key(tmp_path / "dask")
    assert pool_rows.keys() == dask_rows.keys()
    for key, row in pool_rows.items():
        stable = {k: v for k, v in row.items() if k not in UNSTABLE}
        assert stable == {k: v for k, v in dask_rows[key].items() if k not in UNSTABLE}


def test_dask_scheduler_address_and_options_added_to_a_sweep_file(pool_sweep, tmp_path):
    from distributed import Client, LocalCluster

    path, _, _ = pool_sweep
    # The file's axes and fixed options, one more axis and fewer seeds from the command line.
    sweep = sweep_from_options(str(path), grid=["flows[0].tcp.delayed_ack=true,false"], seeds=1)
    assert sweep.axes == ["loss", "links[1].queue_pkts", "flows[0].tcp.delayed_ack"]
    assert sweep.fixed == {"duration": "20s", "tcp": "sack"} and sweep.seeds == 1
    with pytest.raises(SweepError, match=r"--grid tcp: already a fixed option \(fixed.tcp\)"):
        sweep_from_options(str(path), grid=["tcp=reno,sack"])
    with (
        LocalCluster(n_workers=1, processes=False, dashboard_address=None) as cluster,
        Client(cluster),
    ):
        executor = DaskCluster(address=cluster.scheduler_address)
        report = run_sweep(sweep, tmp_path / "dask", executor=executor)
    assert (report.computed, report.failed) == (8, 0)
    assert report.executor.startswith("Dask scheduler")
    table = load_results(tmp_path / "dask")
    assert str(table.schema.field("flows[0].tcp.delayed_ack").type) == "bool"
    # Without delayed ACKs the model's b is 1, so it predicts more.
    model = {(r["loss"], r["flows[0].tcp.delayed_ack"]): r[MODEL_COLUMN] for r in table.to_pylist()}
    assert model[(0.02, False)] > model[(0.02, True)]


def test_rerun_reuses_everything(pool_sweep):
    path, out, _ = pool_sweep
    before = {p.name: p.stat().st_mtime_ns for p in (out / "points").iterdir()}
    report = run_sweep(load_sweep(path), out, executor=ProcessPool(2))
    assert (report.reused, report.computed) == (12, 0)
    assert {p.name: p.stat().st_mtime_ns for p in (out / "points").iterdir()} == before


def test_killed_sweep_resumes_without_recomputing(tmp_path):
    path = tmp_path / "long.toml"
    path.write_text(
        'scenario = "stpd-wireless"\nseeds = 3\n[fixed]\nduration = "1000s"\n'
        "[grid]\nloss = [1e-4, 2e-4, 3e-4, 4e-4, 5e-4, 6e-4, 7e-4, 8e-4, 9e-4, 1e-3]\n"
    )
    out = tmp_path / "out"
    points = out / "points"
    code = "import sys; from farlink.cli.app import main; sys.exit(main(sys.argv[1:]))"
    argv = [sys.executable, "-c", code, "sweep", str(path), "--out", str(out), "--workers", "1"]
    process = subprocess.Popen(
        [*argv, "--no-progress"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # its own process group: the pool's workers die with it
    )
    try:
        deadline = time.monotonic() + 60
        while len(list(points.glob("*.parquet"))) < 4 and time.monotonic() < deadline:
            assert process.poll() is None, "the sweep ended before it could be killed"
            time.sleep(0.02)
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    written = {p.name: (p.stat().st_mtime_ns, p.stat().st_ino) for p in points.glob("*.parquet")}
    assert 4 <= len(written) < 30

    report = run_sweep(load_sweep(path), out, executor=ProcessPool(2))
    assert report.reused == len(written) and report.computed == 30 - len(written)
    assert not list(points.glob(".*.tmp"))
    for name, stamp in written.items():
        path_now = points / name
        assert (path_now.stat().st_mtime_ns, path_now.stat().st_ino) == stamp
    _, rows = query(
        out, "SELECT count(*), count(DISTINCT run_key), count(DISTINCT (point_id, replicate)) "
        "FROM results"
    )  # fmt: skip
    assert rows == [(30, 30, 30)]


def test_failing_point_is_recorded_and_the_others_complete(capsys, tmp_path):
    out = tmp_path / "out"
    options = dict(
        grid=["links[1].fwd.loss.p=0.01,2", "tcp=reno,sack"],
        fixed={"loss": 0.01, "duration": "10s"},
        seeds=2,
    )
    # `farlink sweep` checks every point before running and refuses this grid (exit 2, nothing
    # run); the library runs it and records the failures.
    argv = ["sweep", "stpd-wireless", "--loss", "0.01", "--duration", "10s",
            "--grid", "links[1].fwd.loss.p=0.01,2", "--grid", "tcp=reno,sack",
            "--seeds", "2", "--out", str(out), "--json", "--no-progress"]  # fmt: skip
    code, stdout, err = run(capsys, *argv)
    assert (code, stdout) == (2, "") and "links[1].fwd.loss.p=2" in err
    assert not out.exists()
    sweep = sweep_from_options("stpd-wireless", **options)
    report = run_sweep(sweep, out, executor=ProcessPool(2), progress=False)
    assert (report.runs, report.computed, report.failed) == (8, 8, 4)
    assert {f["links[1].fwd.loss.p"] for f in report.failures} == {2}
    assert all("links[1].fwd.loss.p" in f["error"] for f in report.failures)
    _, rows = query(out, "SELECT count(*) FROM results WHERE error IS NULL AND events > 0")
    assert rows == [(4,)]
    code, stdout, err = run(capsys, "results", "summary", out, "--metric", "timeouts")
    assert code == 0, err
    assert stdout.count("failed: links[1].fwd.loss.p=2") == 4
    # Failed runs are kept on a rerun, and run again with retry_failed.
    again = run_sweep(sweep, out, executor=ProcessPool(2), progress=False)
    assert again.failed == 4 and again.computed == 0
    retried = run_sweep(sweep, out, executor=ProcessPool(2), progress=False, retry_failed=True)
    assert retried.failed == 4 and retried.computed == 4


def test_results_query_and_summary(capsys, pool_sweep):
    _, out, _ = pool_sweep
    code, stdout, err = run(
        capsys, "results", "query", out,
        'SELECT loss, "links[1].queue_pkts" AS q, count(*) AS n FROM results '
        "GROUP BY ALL ORDER BY loss, q", "--json",
    )  # fmt: skip
    assert code == 0, err
    assert json.loads(stdout) == [
        {"loss": 0.001, "q": 4, "n": 3}, {"loss": 0.001, "q": 30, "n": 3},
        {"loss": 0.02, "q": 4, "n": 3}, {"loss": 0.02, "q": 30, "n": 3},
    ]  # fmt: skip
    code, stdout, err = run(capsys, "results", "query", out, "SELECT count(*) FROM results")
    assert code == 0 and "12" in stdout

    code, stdout, err = run(capsys, "results", "summary", out, "--json")
    assert code == 0, err
    summary = json.loads(stdout)
    # The sweep file's metrics, then the model's column.
    assert summary["metrics"] == [
        "normalized_goodput", "timeouts", "flows[0].min_rtt_s", MODEL_COLUMN
    ]  # fmt: skip
    assert len(summary["points"]) == 4 and summary["failures"] == []
    point = summary["points"][-1]
    assert point["params"] == {"loss": 0.02, "links[1].queue_pkts": 30}
    values = [
        r["normalized_goodput"]
        for r in load_results(out).to_pylist()
        if r["loss"] == 0.02 and r["links[1].queue_pkts"] == 30
    ]
    stat = point["metrics"]["normalized_goodput"]
    half = stats.t.ppf(0.975, 2) * np.std(values, ddof=1) / np.sqrt(3)
    assert stat["n"] == 3
    assert stat["mean"] == pytest.approx(np.mean(values))
    assert stat["ci_high"] - stat["mean"] == pytest.approx(half)
    code, stdout, _ = run(capsys, "results", "summary", out)
    assert code == 0 and "normalized_goodput" in stdout and "±" in stdout


def test_model_column_is_the_full_pftk_model_in_one_call(monkeypatch):
    calls = []

    def counted(*args, **kwargs):
        calls.append(args)
        return pftk_full_throughput(*args, **kwargs)

    monkeypatch.setattr("farlink.models.pftk_full_throughput", counted)
    sweep = sweep_from_options("stpd-wireless", grid=["loss=0,0.01,0.05", "tcp=reno,sack"])
    tasks = plan(sweep)
    assert len(calls) == 1 and len(calls[0][0]) == 6
    # stpd-wireless: S-R 10 Mbps 0.1 ms, R-D 1.5 Mbps 80 ms, MSS 960 with timestamps (948 bytes
    # of payload, 1000 on the wire), delayed ACKs (b = 2), min RTO 1 s, 128 KiB receive buffer;
    # the base RTT carries one full segment out and its 52-byte ACK (with timestamps) back.
    rtt = 2 * (0.0001 + 0.08) + (8000 + 416) / 10e6 + (8000 + 416) / 1.5e6
    rate = pftk_full_throughput(0.01, rtt, 1.0, 2, 131072 / 948)
    expected = min(rate * 948, 1.5e6 / 8 * 0.948) / (1.5e6 / 8)
    by_loss = {t.params["loss"]: t.model for t in tasks}
    assert by_loss[0.01] == pytest.approx(expected)
    assert by_loss[0.0] == pytest.approx(0.948)  # lossless: the payload share of a full link
    assert by_loss[0.05] < by_loss[0.01] < by_loss[0.0]
    # No lossy_link (stpd-wired) or two flows: the model does not apply.
    wired = sweep_from_options("stpd-wired", grid=["tcp=reno,sack"])
    assert all(t.model is None for t in plan(wired))
    doc = point_doc(sweep, {"loss": 0.01, "tcp": "reno"})
    doc["flows"].append(dict(doc["flows"][0], name="second"))
    assert np.isnan(model_normalized_goodput([doc])[0])


def test_changed_sweep_is_refused_unless_forced(capsys, tmp_path):
    out = tmp_path / "out"
    base = ["sweep", "stpd-wired", "--duration", "5s", "--out", out, "--json", "--no-progress"]
    code, _, err = run(capsys, *base, "--grid", "tcp=reno,sack", "--seeds", "2")
    assert code == 0, err
    code, _, err = run(capsys, *base, "--grid", "tcp=reno,sack,tahoe", "--seeds", "2")
    assert code == 2
    assert err.count("\n") == 1 and "holds a different sweep (changed: grid)" in err
    code, stdout, err = run(capsys, *base, "--grid", "tcp=reno,tahoe", "--seeds", "2", "--force")
    assert code == 0, err
    report = json.loads(stdout)
    assert (report["reused"], report["computed"]) == (2, 2)  # reno's runs are the same runs
    superseded = list((out / "superseded").glob("*/points/*.parquet"))
    assert len(superseded) == 2  # sack's runs moved aside, not deleted
    assert len(list((out / "points").glob("*.parquet"))) == 4


W = 'scenario = "stpd-wireless"\n'


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        (W + "[grid]\nloss = [0.01, 1.5]\n", "grid.loss[1]: expected a packet error rate"),
        (W + "seeds = 0\n", "seeds: expected an integer"),
        (W + "seed_count = 3\n", "unknown field 'seed_count'"),
        ('scenario = "no-such-preset"\n', "scenario: 'no-such-preset' is neither"),
        ("[grid]\nloss = [0.1]\n", "scenario: missing"),
        (W + '[grid]\ntcp = "reno"\n', "grid.tcp: expected a non-empty list"),
        (W + '[grid]\n"links[x" = [1]\n', 'grid."links[x"'),
        (W + "[grid]\nseed = [1, 2]\n", "grid.seed: the seed is not an axis"),
        (W + 'metrics = ["goodput"]\n', "metrics[0]: unknown metric 'goodput'"),
        (W + '[grid]\n"links[9].queue_pkts" = [4]\n', 'queue_pkts": no list element 9'),
        (W + '[fixed]\nduration = "10 parsecs"\n', "fixed.duration"),
        (W + "[grid]\nloss = [0.1, 0.1]\n", "grid.loss[1]: 0.1 appears twice"),
        (W + "[fixed]\ntcp = 3\n", "fixed.tcp: expected a TCP name"),
        ('scenario = "stpd-wired"\n[grid]\nloss = [0.1]\n', "grid.loss: the scenario names no"),
        (W + "grid = 3\n", "grid: expected a table"),
        ("scenario = \n", "bad.toml:1:12: Invalid value"),
    ],
)
def test_bad_sweep_files_get_one_line_errors(capsys, tmp_path, text, fragment):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    code, _, err = run(capsys, "sweep", path, "--out", tmp_path / "out", "--no-progress")
    assert code == 2
    assert err.startswith("farlink: error: ") and err.count("\n") == 1, err
    assert fragment in err, err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["--grid", "loss"], "--grid 'loss': expected AXIS=v1,v2"),
        (["--grid", "links[1=4,5"], "neither a simulate option"),
        (["--grid", "loss=0.1", "--loss", "0.2"], "--loss: 'loss' is an axis"),
        (["--grid", "tcp=reno", "--workers", "1", "--dask-local", "2"], "give one of"),
        (["--grid", "tcp=reno", "--seeds", "0"], "--seeds: expected an integer"),
        (["--grid", "tcp=reno", "--metric", "nope"], "--metric[0]: unknown metric"),
    ],
)  # fmt: skip
def test_bad_sweep_options_get_one_line_errors(capsys, tmp_path, argv, fragment):
    code, _, err = run(capsys, "sweep", "stpd-wireless", "--out", tmp_path / "o", *argv)
    assert code == 2
    assert err.count("\n") == 1 and fragment in err, err


def test_results_commands_name_bad_directories_and_sql(capsys, pool_sweep, tmp_path):
    _, out, _ = pool_sweep
    code, _, err = run(capsys, "results", "summary", tmp_path)
    assert code == 2 and "not a sweep directory" in err
    code, _, err = run(capsys, "results", "query", out, "SELECT nope FROM results")
    assert code == 2 and err.startswith("farlink: error: SQL: ") and err.count("\n") == 1
    code, _, err = run(capsys, "results", "summary", out, "--metric", "nope")
    assert code == 2 and "--metric nope: no such column" in err
    with pytest.raises(SweepError, match="schema version 99"):
        manifest = json.loads((out / "manifest.json").read_text())
        (tmp_path / "manifest.json").write_text(json.dumps({**manifest, "schema_version": 99}))
        query(tmp_path, "SELECT 1")
