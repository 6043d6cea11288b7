"""Bounded work and memory: physical ranges, the run budget, progress and Ctrl-C."""

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from farlink import _core
from farlink.sim import ProgressLine, simulate
from support import run


def one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("farlink: error: "), err
    return lines[0]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["stpd-wired", "--duration", "1e8s"], "the run would take about 1.5e11 events"),
        (
            ["stpd-wired", "--duration", "1e8s", "--set", "links[1].rate=10Gbps",
             "--set", "trace.all=false"],
            "events (budget 1.0e9)",
        ),
        (["stpd-wired", "--set", "trace.goodput_interval=1ns"], "trace.goodput_interval: expected"),
        (["is707", "--set", "links[1].rlp.fd_t=1e12"], "links[1].rlp.fd_t: expected"),
        (
            ["stpd-telnet", "--set", "flows[1].app.mean_interval=1ns"],
            "flows[1].app.mean_interval: expected at least 1us, got 1ns",
        ),
        (
            ["stpd-wired", "--set", "flows[0].tcp.min_rto=1ns",
             "--set", "flows[0].tcp.max_rto=1ns"],
            "flows[0].tcp.min_rto: expected at least 1ms, got 1ns",
        ),
        (
            ["iridium-8", "--set", "links[0].bundle.txqueue_pkts=4294967295"],
            "links[0].bundle.txqueue_pkts: expected at most 1000000 packets",
        ),
    ],
)  # fmt: skip
def test_unbounded_work_is_refused_up_front_in_one_line(capsys, tmp_path, args, expected):
    started = time.perf_counter()
    code, _, err = run(capsys, "simulate", *args, "--out", str(tmp_path / "out"))
    assert code == 2
    assert expected in one_error_line(err)
    assert time.perf_counter() - started < 10
    assert not (tmp_path / "out").exists()


def test_a_refusal_names_the_options_that_raise_the_budget(capsys, tmp_path):
    code, _, err = run(capsys, "simulate", "stpd-wired", "--duration", "1e6s", "--out",
                       str(tmp_path))  # fmt: skip
    line = one_error_line(err)
    assert code == 2
    # The command line streams the traces into its folder: their rows are disk, not memory.
    assert "--budget-events 2e9 --budget-disk 90GiB" in line, line
    assert "88.3 GiB of disk for its traces and captures (budget 16.0 GiB)" in line, line
    # Only the bound passed is named.
    code, _, err = run(capsys, "simulate", "stpd-wired", "--duration", "1e6s", "--set",
                       "trace.all=false", "--out", str(tmp_path))  # fmt: skip
    line = one_error_line(err)
    assert code == 2
    assert line.endswith("raise the budget (--budget-events 2e9)"), line


def test_a_raised_budget_admits_the_run(capsys, tmp_path):
    args = ["simulate", "stpd-wired", "--duration", "20s", "--json", "--out", str(tmp_path)]
    code, _, err = run(capsys, *args, "--budget-events", "100")
    assert code == 2 and "events (budget 100)" in one_error_line(err)
    code, out, err = run(capsys, *args, "--budget-events", "1e7", "--budget-memory", "1GiB")
    assert code == 0, err
    assert "partial" not in json.loads(out)


@pytest.mark.parametrize(
    ("option", "value"), [("--budget-events", "0"), ("--budget-events", "1.5"),
                          ("--budget-memory", "lots")],
)  # fmt: skip
def test_a_bad_budget_option_is_one_line(capsys, option, value):
    code, _, err = run(capsys, "simulate", "stpd-wired", option, value)
    assert code == 2
    assert one_error_line(err).startswith(f"farlink: error: {option}: ")


def test_the_api_refuses_with_the_estimate():
    with pytest.raises(_core.BudgetError) as caught:
        simulate("stpd-wired", duration="100s", budget_events=1000)
    err = caught.value
    assert err.max_events == 1000
    assert err.events > 1000
    assert err.memory_bytes > 0


def test_a_long_run_reports_progress_and_a_raising_callback_stops_it():
    calls = []

    def progress(simulated_s, duration_s, events):
        calls.append((simulated_s, duration_s, events))
        if len(calls) == 2:
            raise RuntimeError("enough")

    with pytest.raises(RuntimeError, match="enough"):
        simulate("stpd-wired", duration="1e5s", sets=["trace.all=false"], progress=progress)
    assert len(calls) == 2
    assert calls[0][1] == pytest.approx(1e5)
    assert 0 < calls[0][0] < calls[1][0] < 1e5
    assert calls[0][2] < calls[1][2]


def test_the_progress_line_rewrites_itself_and_erases_at_the_end():
    stream = io.StringIO()
    line = ProgressLine(stream)
    line(12.5, 100.0, 5_000_000)
    line.close()
    text = stream.getvalue()
    assert text.startswith("\rfarlink: simulated 12.5 s of 100 s (12%), ")
    assert "M events/s" in text
    assert text.endswith("\r")


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child")
def _cpu_seconds(pid: int) -> float:
    """User and system CPU time of process ``pid`` so far (Linux's /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_ctrl_c_stops_the_run_and_keeps_a_partial_result(tmp_path):
    out = tmp_path / "out"
    child = subprocess.Popen(
        [sys.executable, "-c", "import sys; from farlink.cli.app import main; sys.exit(main())",
         "simulate", "stpd-wired", "--duration", "1e5s",
         "--set", "trace.all=false", "--out", str(out), "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        # A shell's background job inherits SIGINT ignored, and Python then installs no
        # KeyboardInterrupt handler: give the child the terminal's Ctrl-C whatever ran the tests.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    # Interrupt the run, not the imports before it: wait for 2 s of the child's CPU time (its
    # start-up takes about half a second of it), however loaded the machine is.
    deadline = time.monotonic() + 60
    while _cpu_seconds(child.pid) < 2.0 and time.monotonic() < deadline:
        assert child.poll() is None, child.communicate()
        time.sleep(0.1)
    child.send_signal(signal.SIGINT)
    stdout, stderr = child.communicate(timeout=60)
    assert child.returncode == 130, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("farlink: warning: run interrupted at "), stderr
    printed = json.loads(stdout)
    assert printed["partial"].startswith("interrupted at ")
    summary = json.loads((out / "summary.json").read_text())
    assert summary["partial"] == printed["partial"]
    assert 0 < summary["sim_time_s"] < 1e5
    assert summary["delivered_bytes"] > 0


def test_a_sweep_point_over_the_budget_is_a_failed_row():
    from farlink.scenario import load_scenario
    from farlink.sweeps.point import run_point

    doc = load_scenario("stpd-wired")
    doc["duration"] = "1e8s"
    row = run_point(json.dumps(doc))
    assert row["error"].startswith("BudgetError: the run would take about 1.5e11 events")


def test_a_run_that_outgrows_its_budget_stops_in_one_line_and_keeps_its_result(capsys, tmp_path):
    # Nothing gets through, so the goodput grid of the whole 10^6 s (10^9 rows) would be
    # written at the end, where the estimate expected a transfer of about a minute. The
    # command line streams the rows to disk, so the disk budget stops it.
    code, out, err = run(
        capsys, "simulate", "stpd-wireless", "--loss", "0.99999", "--size", "10KB",
        "--duration", "1e6s", "--set", 'trace={goodput=true, goodput_interval="1ms"}',
        "--budget-disk", "64MiB", "--out", str(tmp_path), "--json",
    )  # fmt: skip
    assert code == 2
    line = one_error_line(err)
    assert line.startswith("farlink: error: run stopped: disk budget of 64.0 MiB reached")
    assert "--budget-disk" in line
    assert json.loads(out)["partial"].startswith("disk budget of 64.0 MiB reached")
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["partial"].startswith("disk budget")
    assert (tmp_path / "goodput.parquet").stat().st_size < 64 << 20
    # Held in memory (a library run without a folder), the memory budget stops it.
    result = simulate(
        "stpd-wireless", loss=0.99999, size="10KB", duration="1e6s",
        sets=['trace={goodput=true, goodput_interval="1ms"}'], budget_memory_bytes=64 << 20,
    )  # fmt: skip
    assert result.summary["partial"].startswith("memory budget of 64.0 MiB reached")


def test_a_sweep_holds_each_run_to_the_budget_given(capsys, tmp_path):
    args = ["sweep", "stpd-wired", "--duration", "5s", "--set", "trace={}", "--grid",
            "tcp=reno,sack", "--workers", "1", "--no-progress", "--json"]  # fmt: skip
    code, out, err = run(capsys, *args, "--out", str(tmp_path / "a"), "--budget-events", "100")
    assert code == 1, err
    report = json.loads(out)
    assert report["failed"] == 2
    assert all(f["error"].startswith("BudgetError: ") for f in report["failures"])
    code, out, err = run(capsys, *args, "--out", str(tmp_path / "b"), "--budget-events", "1e8")
    assert code == 0, err
    assert json.loads(out)["failed"] == 0
