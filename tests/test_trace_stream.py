"""Traces streamed to disk as the run records them: bounded memory, the same files as the
in-memory path, and ``Result.trace`` reading them back (docs/traces.md, "Long runs")."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from farlink import _core
from farlink.results.result import DiskCaptures, columns_equal, write_pcaps
from farlink.scenario import load_scenario, resolve
from farlink.sim import estimate, simulate

ALL = ["trace.all=true"]


def test_streamed_traces_are_the_in_memory_traces_chunk_by_chunk(tmp_path):
    # 300 s of stpd-wired: the queue trace passes 65,536 rows, so it is handed over in chunks.
    held = simulate("stpd-wired", duration="300s", sets=ALL)
    held.to_parquet(tmp_path / "held")
    streamed = simulate("stpd-wired", duration="300s", sets=ALL, trace_dir=tmp_path / "streamed")

    assert streamed.recorded_traces() == held.recorded_traces()
    assert len(held.recorded_traces()) == 10
    row_groups = {}
    for name in held.recorded_traces():
        a = pq.read_table(tmp_path / "held" / f"{name}.parquet")
        b = pq.read_table(tmp_path / "streamed" / f"{name}.parquet")
        assert a.equals(b), name  # same columns, types and rows, in order
        meta_a, meta_b = a.schema.metadata, b.schema.metadata
        assert meta_a.keys() == meta_b.keys(), name
        for key in (b"farlink.scenario", b"farlink.engine", b"farlink.schema_version"):
            assert meta_a[key] == meta_b[key], (name, key)
        summary_a, summary_b = (json.loads(m[b"farlink.summary"]) for m in (meta_a, meta_b))
        summary_a.pop("wall_time_s")
        summary_b.pop("wall_time_s")
        assert summary_a == summary_b, name
        # Result.trace reads the streamed table back: the same arrays, the same types.
        got, want = streamed.trace(name), held.trace(name)
        assert columns_equal(got, want), name
        assert [c.dtype for c in got.values()] == [c.dtype for c in want.values()], name
        row_groups[name] = pq.ParquetFile(tmp_path / "streamed" / f"{name}.parquet").num_row_groups
    assert len(held.trace("queue")["time_ns"]) > 65_536
    assert row_groups["queue"] >= 2, row_groups
    # The files the in-memory path would write are there already: writing adds the summary.
    written = streamed.to_parquet(tmp_path / "streamed")
    assert sorted(p.name for p in written) == sorted(
        [f"{n}.parquet" for n in held.recorded_traces()] + ["summary.json"]
    )
    assert pq.read_table(tmp_path / "streamed" / "queue.parquet").equals(
        pq.read_table(tmp_path / "held" / "queue.parquet")
    )


def test_a_trace_with_no_rows_and_one_switched_off(tmp_path):
    # stpd-wired has no bundle (member_state, capacity: no rows); rto is switched off.
    streamed = simulate(
        "stpd-wired", duration="20s", sets=[*ALL, "trace.rto=false"], trace_dir=tmp_path
    )
    assert len(streamed.trace("capacity")["time_ns"]) == 0
    assert streamed.trace("capacity")["capacity_bps"].dtype == np.uint64
    assert pq.read_table(tmp_path / "capacity.parquet").num_rows == 0
    assert not (tmp_path / "rto.parquet").exists()
    with pytest.raises(KeyError, match=r"trace\.rto=true"):
        streamed.trace("rto")


def test_a_run_refused_by_its_budget_creates_nothing(tmp_path):
    with pytest.raises(_core.BudgetError) as caught:
        simulate("stpd-wired", duration="1e6s", sets=ALL, trace_dir=tmp_path / "out")
    err = caught.value
    assert err.disk_bytes > err.max_disk_bytes == 16 << 30
    assert err.memory_bytes < 2 << 30  # a buffer per trace, not the rows
    assert "of disk for its traces and captures (budget 16.0 GiB)" in str(err)
    assert not (tmp_path / "out").exists()


def test_a_failing_writer_stops_the_run_and_removes_what_it_began(tmp_path, monkeypatch):
    # The disk fills on the writer thread's third row group: the error reaches the core at its
    # next chunk, the run stops, the error is raised and every file begun is removed.
    import pyarrow.parquet as pq

    written = []
    write_table = pq.ParquetWriter.write_table

    def filling(self, table, *args, **kwargs):
        written.append(table.num_rows)
        if len(written) > 2:
            raise OSError(28, "No space left on device")
        return write_table(self, table, *args, **kwargs)

    monkeypatch.setattr(pq.ParquetWriter, "write_table", filling)
    with pytest.raises(OSError, match="No space left"):
        simulate("stpd-wired", duration="300s", sets=ALL, trace_dir=tmp_path)
    assert len(written) == 3
    assert list(tmp_path.iterdir()) == []


def test_the_engine_runs_on_while_the_writer_writes(tmp_path, monkeypatch):
    # A slow disk: every row group is written on the writer's thread, and the core hands over
    # chunks meanwhile, so they wait in the queue (written on the engine's thread, none would);
    # every row arrives, in order.
    import threading
    import time

    import pyarrow.parquet as pq

    from farlink.results.result import TraceStream

    held = simulate("stpd-wired", duration="300s", sets=ALL)
    depth, threads = [], set()
    write_table = pq.ParquetWriter.write_table
    streams: list[TraceStream] = []
    real_init = TraceStream.__init__

    def keep(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        streams.append(self)

    def slow(self, table, *args, **kwargs):
        threads.add(threading.current_thread().name)
        depth.append(streams[0]._queue.qsize())
        time.sleep(0.005)
        return write_table(self, table, *args, **kwargs)

    monkeypatch.setattr(pq.ParquetWriter, "write_table", slow)
    monkeypatch.setattr(TraceStream, "__init__", keep)
    streamed = simulate("stpd-wired", duration="300s", sets=ALL, trace_dir=tmp_path)
    assert threads == {"farlink-traces"}
    assert max(depth) >= 1, "chunks were handed over while the writer wrote"
    for name in held.recorded_traces():
        for column, values in held.trace(name).items():
            assert np.array_equal(streamed.trace(name)[column], values), (name, column)


def test_streamed_captures_are_byte_for_byte_the_in_memory_ones(tmp_path):
    # A link tap, a link end and a node (whose records interleave directions), a flow that
    # starts late and one with a simulated handshake.
    doc = load_scenario("stpd-wired")
    doc["duration"] = "60s"
    doc["flows"].append(
        {"name": "late", "from": doc["nodes"][-1], "to": doc["nodes"][0], "start": "7s",
         "tcp": {"handshake": True}, "app": {"kind": "bulk", "size": "300KB"}}
    )  # fmt: skip
    links = [link["name"] for link in resolve(doc)["links"]]
    doc["pcap"] = [links[0], {"link": links[-1], "at": "b"}, {"node": doc["nodes"][1]}]
    held = simulate(doc)
    write_pcaps(held, tmp_path / "held")
    streamed = simulate(doc, trace_dir=tmp_path / "streamed", stream_pcap=True)
    assert isinstance(streamed.pcap, DiskCaptures) and not isinstance(held.pcap, DiskCaptures)
    assert sorted(streamed.pcap) == sorted(held.pcap) and len(held.pcap) == 3
    write_pcaps(streamed, tmp_path / "streamed")
    for tap in held.pcap:
        assert len(held.pcap[tap]) > 1_000_000, tap
        assert streamed.pcap[tap] == held.pcap[tap], tap
        assert streamed.pcap_addresses[tap] == held.pcap_addresses[tap], tap
    held_files = sorted(p.name for p in (tmp_path / "held").iterdir())
    assert held_files == sorted(
        p.name for p in (tmp_path / "streamed").iterdir() if p.suffix in (".pcap", ".json")
    )
    for name in held_files:
        assert (tmp_path / "held" / name).read_bytes() == (
            tmp_path / "streamed" / name
        ).read_bytes(), name
    assert not list((tmp_path / "streamed").glob("*.spool")), "the spools are removed"


def test_a_sweep_point_records_no_trace_and_its_row_is_the_same():
    from farlink.sweeps.point import run_point

    doc = load_scenario("stpd-wired")
    doc["duration"] = "2000s"
    traced = {**doc, "trace": {"all": True, "goodput_interval": "10ms"}}
    untraced = {**doc, "trace": {}}
    # Held in memory, the traces of 2000 s would be over 64 MiB.
    assert estimate(traced)["memory_bytes"] > 64 << 20
    rows = [run_point(json.dumps(d), budget=(None, 64 << 20)) for d in (traced, untraced)]
    assert rows[0]["error"] is None, rows[0]["error"]
    for row in rows:
        row.pop("wall_time_s")
    assert rows[0] == rows[1]
    # The trace table is still the core's to check.
    bad = {**doc, "trace": {"goodput_interval": "1ns"}}
    assert run_point(json.dumps(bad))["error"].startswith("ScenarioError: trace.goodput_interval")


PROBE = """
import sys
from pathlib import Path
import pyarrow.parquet  # loaded before the baseline: the run loads it
from farlink.cli.app import main

def kib(field):
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])

# The peak RSS a process inherits through fork and exec is its parent's: reset it (Linux's
# clear_refs, 5 resets VmHWM) and take the RSS now as the baseline.
Path("/proc/self/clear_refs").write_text("5")
before = kib("VmRSS")
code = main(sys.argv[1:])
print(code, before, kib("VmHWM"), file=sys.stderr)
"""

needs_proc = pytest.mark.skipif(
    not Path("/proc/self/clear_refs").exists(), reason="peak RSS is read from Linux's /proc"
)

BUDGET_MEMORY = 128 << 20


@needs_proc
def test_a_run_whose_rows_exceed_the_memory_budget_streams_in_bounded_memory(tmp_path):
    """8000 s of stpd-wired with every trace: about 8 million rows, over 200 MiB held in
    memory. Held, the run is refused by a memory budget of 128 MiB; streamed into --out, it
    completes, and the process's peak RSS grows by less than that budget over its RSS before
    the run (measured: about 85 MiB, the same for 1000 s as for 8000 s)."""
    args = ["stpd-wired", "--duration", "8000s", "--set", "trace.all=true"]
    with pytest.raises(_core.BudgetError):
        simulate("stpd-wired", duration="8000s", sets=ALL, budget_memory_bytes=BUDGET_MEMORY)
    assert estimate("stpd-wired", duration="8000s", sets=ALL)["memory_bytes"] > BUDGET_MEMORY

    out = tmp_path / "out"
    probe = subprocess.run(
        [sys.executable, "-c", PROBE, "simulate", *args, "--out", str(out),
         "--budget-memory", str(BUDGET_MEMORY), "--json"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    code, before_kib, peak_kib = (int(x) for x in probe.stderr.split()[-3:])
    assert code == 0, probe.stderr
    assert "partial" not in json.loads(probe.stdout)
    rows, rows_bytes, file_bytes = 0, 0, 0
    for path in out.glob("*.parquet"):
        table = pq.read_table(path)
        rows, rows_bytes = rows + table.num_rows, rows_bytes + table.nbytes
        file_bytes += path.stat().st_size
    print(
        f"\n{rows} rows, {rows_bytes / 2**20:.0f} MiB of columns, {file_bytes / 2**20:.0f} MiB "
        f"of Parquet; peak RSS {(peak_kib - before_kib) / 1024:.0f} MiB over the "
        f"{before_kib / 1024:.0f} MiB before the run"
    )
    assert rows_bytes > BUDGET_MEMORY * 3 // 2, rows_bytes
    assert (peak_kib - before_kib) * 1024 < BUDGET_MEMORY, (before_kib, peak_kib)


@needs_proc
def test_a_capture_larger_than_the_memory_budget_streams_in_bounded_memory(tmp_path):
    """1000 s of stpd-wired captured on one link: about 200 MB of pcap, which a run holding
    its captures in memory may not take within 128 MiB. With --pcap --out the capture goes to
    its file as the run goes, and the peak RSS grows by less than the budget."""
    pcap = ["--set", 'pcap=["R-D"]', "--set", "trace.all=false"]
    with pytest.raises(_core.BudgetError):
        simulate("stpd-wired", duration="1000s", sets=pcap[1::2],
                 budget_memory_bytes=BUDGET_MEMORY)  # fmt: skip
    out = tmp_path / "out"
    probe = subprocess.run(
        [sys.executable, "-c", PROBE, "simulate", "stpd-wired", "--duration", "1000s", *pcap,
         "--pcap", "--out", str(out), "--budget-memory", str(BUDGET_MEMORY), "--json"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    code, before_kib, peak_kib = (int(x) for x in probe.stderr.split()[-3:])
    assert code == 0, probe.stderr
    size = (out / "R-D.pcap").stat().st_size
    print(
        f"\n{size / 2**20:.0f} MiB of pcap; peak RSS {(peak_kib - before_kib) / 1024:.0f} MiB "
        f"over the {before_kib / 1024:.0f} MiB before the run"
    )
    assert size > BUDGET_MEMORY, size
    assert (peak_kib - before_kib) * 1024 < BUDGET_MEMORY, (before_kib, peak_kib)
    assert not list(out.glob("*.spool"))
