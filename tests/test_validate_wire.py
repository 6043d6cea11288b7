"""bench/validate_wire.py's fidelity table (docs/wire.md): farlink's sender beside the kernel's
with Linux's settings from farlink.linux_tcp, and what it reads from the tcp_info traces. The
emulator is replaced by a recorder here; `make validate-wire` runs the real thing."""

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from farlink.linux_tcp import linux_cc_name, linux_sets

BENCH = Path(__file__).resolve().parents[1] / "bench" / "validate_wire.py"


def _load_bench():
    spec = importlib.util.spec_from_file_location("validate_wire", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


validate_wire = _load_bench()


class FakeRun:
    """What the table reads of an emulation: one flow and its tcp_info trace."""

    def __init__(self, sender: str):
        goodput = 0.5 if sender == "kernel" else 0.4
        self.summary = {
            "sim_time_s": 10.0,
            "flows": [
                {
                    "verified": True,
                    "transfer_time_s": 10.0,
                    "normalized_goodput": goodput,
                    "retransmissions": 100 if sender == "kernel" else 150,
                    "timeouts": 0,
                    "error": None,
                    **({"wire": {"dsack_blocks": 7}} if sender == "farlink" else {}),
                }
            ],
        }

    def trace(self, name: str) -> dict:
        assert name == "tcp_info"
        seg = validate_wire.SEGMENT_BYTES
        return {
            "time_s": np.array([0.0, 4.0, 6.0, 8.0]),
            "cwnd_bytes": np.array([10 * seg, 20 * seg, 10 * seg, 10 * seg]),
            "ssthresh_bytes": np.array([2**40, 10 * seg, 15 * seg, 15 * seg]),
            "rtt_us": np.array([0, 170_000, 190_000, 180_000]),
            "rto_us": np.array([1_000_000, 400_000, 900_000, 400_000]),
            "retransmissions": np.array([0, 5, 9, 12]),
        }


def test_the_fidelity_table_runs_both_senders_with_linuxs_settings(monkeypatch, tmp_path):
    calls = []

    def fake_emulate(preset, **kw):
        calls.append((preset, kw))
        return FakeRun(kw["sender"])

    monkeypatch.setattr(validate_wire, "emulate", fake_emulate)
    validate_wire.fidelity_table("1MB", [1, 2], write_doc=False, trace_dir=tmp_path)
    # The kernel runs its module by name, farlink's sender the model of it (cubic-linux).
    wanted = {
        (cc if sender == "kernel" else linux_cc_name(cc), sender, loss, seed)
        for cc in ("reno", "cubic", "bbr")
        for sender in ("kernel", "farlink")
        for loss in (0.01, 0.0)
        for seed in (1, 2)
    }
    assert {(kw["tcp"], kw["sender"], kw["loss"], kw["seed"]) for _, kw in calls} == wanted
    assert len(calls) == len(wanted)
    for preset, kw in calls:
        assert preset == "stpd-wireless"
        assert kw["size"] == "1MB"
        assert list(kw["sets"]) == linux_sets(0, kw["tcp"])
    assert 'flows[0].tcp.growth="byte-counting"' in linux_sets(0, "reno"), "Linux's Reno growth"
    assert len(list(tmp_path.glob("*.npz"))) == len(list(tmp_path.glob("*.json"))) == len(wanted)
    kept = np.load(tmp_path / "reno-p0.01-seed1-farlink.npz")
    assert list(kept["rtt_us"]) == [0, 170_000, 190_000, 180_000]


def test_the_table_is_written_again_from_the_runs_kept(monkeypatch, tmp_path):
    monkeypatch.setattr(validate_wire, "emulate", lambda preset, **kw: FakeRun(kw["sender"]))
    validate_wire.fidelity_table("1MB", [1], write_doc=False, trace_dir=tmp_path)

    def no_emulation(*args, **kw):
        raise AssertionError("a replay emulates nothing")

    monkeypatch.setattr(validate_wire, "emulate", no_emulation)
    printed = []
    monkeypatch.setattr("builtins.print", lambda line, **kw: printed.append(line))
    validate_wire.fidelity_table("1MB", [1], write_doc=False, trace_dir=tmp_path, replay=True)
    assert len(printed) == 12
    assert all("| True | 10.00 |" in line for line in printed)


def test_reuse_emulates_only_the_runs_not_kept(monkeypatch, tmp_path):
    monkeypatch.setattr(validate_wire, "emulate", lambda preset, **kw: FakeRun(kw["sender"]))
    validate_wire.fidelity_table("1MB", [1], write_doc=False, trace_dir=tmp_path)
    for kept in tmp_path.glob("cubic-*-farlink.*"):
        kept.unlink()
    emulated = []

    def record(preset, **kw):
        emulated.append((kw["tcp"], kw["sender"], kw["loss"]))
        return FakeRun(kw["sender"])

    monkeypatch.setattr(validate_wire, "emulate", record)
    validate_wire.fidelity_table("1MB", [1], write_doc=False, trace_dir=tmp_path, reuse=True)
    assert sorted(emulated) == [("cubic-linux", "farlink", 0.0), ("cubic-linux", "farlink", 0.01)]
    assert len(list(tmp_path.glob("*.json"))) == 12


def test_trace_figures_weigh_cwnd_by_time_and_count_ssthresh_changes():
    seg = validate_wire.SEGMENT_BYTES
    info = FakeRun("kernel").trace("tcp_info")
    got = validate_wire.trace_figures(info, end_s=10.0)
    # 10 segments for 4 s, 20 for 2 s, 10 for 4 s.
    assert got["cwnd"] == pytest.approx((10 * 4 + 20 * 2 + 10 * 4) / 10)
    assert got["srtt_ms"] == pytest.approx(180.0), "samples before the first RTT are left out"
    assert got["reductions"] == 2, "the first ssthresh, then one above it"
    assert got["retransmissions_from_startup_end"] == 12 - 9, "from the first sample after 5 s"
    assert got["backoffs_s"] == [6.0], "the RTO doubled at 6 s; the initial 1 s falls"
    assert info["cwnd_bytes"][1] == 20 * seg


def test_the_farlink_row_gives_goodput_and_retransmissions_against_the_kernels():
    kernel = FakeRun("kernel").summary["flows"][0]
    ours = FakeRun("farlink").summary["flows"][0]
    figures = validate_wire.trace_figures(FakeRun("farlink").trace("tcp_info"), 10.0)
    row = validate_wire.fidelity_row("reno", 0.01, 1, "farlink", ours, figures, kernel)
    cells = [c.strip() for c in row.strip("|").split("|")]
    first_line = validate_wire.FIDELITY_HEADER.splitlines()[0]
    header = [c.strip() for c in first_line.strip("|").split("|")]
    assert len(cells) == len(header)
    at = dict(zip(header, cells, strict=True))
    assert at["goodput vs kernel"] == "-20%"
    assert at["retransmissions vs kernel"] == "+50%"
    assert at["D-SACK blocks"] == "7"
    kernel_row = validate_wire.fidelity_row("reno", 0.01, 1, "kernel", kernel, figures, None)
    assert "| kernel | True | 10.00 | 0.500 | 100 | 0 | - | - | - | 3 | 6.0 | 12.0 |" in kernel_row


def test_the_iridium_table_reads_runs_made_outside_and_says_which_did_not_finish(
    monkeypatch, tmp_path
):
    flow = {
        "sender": "farlink",
        "verified": True,
        "transfer_time_s": 9300.0,
        "normalized_goodput": 0.9,
        "retransmissions": 60,
        "timeouts": 9,
        "delivered_bytes": 10_000_000,
        "error": None,
    }
    (tmp_path / "reno.json").write_text(json.dumps({"interrupted": False, "flows": [flow]}))
    stopped = {**flow, "verified": False, "transfer_time_s": None, "delivered_bytes": 6_055_536}
    (tmp_path / "cubic.json").write_text(json.dumps({"interrupted": True, "flows": [stopped]}))
    (tmp_path / "bbr.json").write_text("")
    sims = []

    def simulation(preset, cc, loss, size, duration="3600s"):
        sims.append((preset, cc, size, duration))
        return {"transfer_time_s": 9474.07, "retransmissions": 109}

    written = []
    monkeypatch.setattr(validate_wire, "one_simulation", simulation)
    monkeypatch.setattr(validate_wire, "write", lambda lines, markers: written.append(lines))
    validate_wire.iridium_table(tmp_path, "10MB", ["reno", "cubic", "bbr"], write_doc=True)
    (lines,) = written
    rows = lines[3:]
    assert rows[0].startswith("| reno | farlink | True | 9300.00 |")
    assert "| 9474.07 | 109 |" in rows[0]
    assert "| False | - |" in rows[1] and "stopped at 6,055,536 bytes" in rows[1]
    assert "no result in" in rows[2]
    assert sims == [("iridium-4", "reno", "10MB", "5h"), ("iridium-4", "cubic", "10MB", "5h")]
