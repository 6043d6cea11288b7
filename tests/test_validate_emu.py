"""The Linux comparison's bookkeeping (bench/validate_emu.py) without its long runs: both engines
get the same settings, Linux's from farlink.linux_tcp; slow-start exits; the section's far-link
table kept by a run that skips it."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from farlink import simulate
from farlink.linux_tcp import linux_sets
from support import REAL_TIME, needs_namespaces

pytestmark = REAL_TIME

SCRIPT = Path(__file__).resolve().parents[1] / "bench" / "validate_emu.py"


@pytest.fixture
def validate_emu():
    spec = importlib.util.spec_from_file_location("validate_emu", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class FakeRun:
    """What run_cell reads of a result, with traces that leave slow start at 1 s."""

    def __init__(self, engine: str):
        self.engine = engine
        flow = {"normalized_goodput": 0.5, "retransmissions": 3, "timeouts": 0, "drops": {}}
        self.summary = {**flow, "drops": {}}
        if engine == "emulate":
            flow |= {"error": None, "kernel_settings": {"not_applied": {"rto": "own"}}}
            self.summary = {
                "flows": [flow],
                "emulator": {"departure_error_us": {"p99": 50.0}},
            }

    def trace(self, name: str) -> dict[str, np.ndarray]:
        cwnd = np.array([9480, 18960, 9480])
        ssthresh = np.array([2**64 - 1, 2**64 - 1, 9480], dtype=np.uint64)
        if self.engine == "emulate":
            assert name == "tcp_info"
            ssthresh[:2] = 0x7FFFFFFF * 948
            return {
                "time_s": np.array([0.0, 0.5, 1.0]),
                "cwnd_bytes": cwnd,
                "ssthresh_bytes": ssthresh,
                "rtt_us": np.array([200_000, 210_000, 220_000]),
            }
        assert name == "cwnd"
        return {
            "time_ns": np.array([0, 500_000_000, 1_000_000_000]),
            "cwnd_bytes": cwnd,
            "ssthresh_bytes": ssthresh,
        }


@pytest.mark.parametrize("cc", ["reno", "cubic", "bbr"])
def test_both_engines_run_linux_settings_from_linux_tcp(validate_emu, monkeypatch, cc):
    calls = {}

    def record(engine):
        def run(scenario, **kwargs):
            calls[engine] = {"scenario": scenario, **kwargs}
            return FakeRun(engine)

        return run

    monkeypatch.setattr(validate_emu, "emulate", record("emulate"))
    monkeypatch.setattr(validate_emu, "simulate", record("simulate"))
    cell = validate_emu.run_cell("stpd-wireless", 1e-3, cc, seeds=1, duration_s=5.0)
    emu, sim = calls["emulate"], calls["simulate"]
    assert emu["sets"] == linux_sets(0, cc)
    assert [s for s in sim["sets"] if not s.startswith("trace=")] == emu["sets"]
    assert emu["sender"] == "kernel" and emu["tcp"] == cc
    for key in ("scenario", "loss", "seed", "duration"):
        assert emu[key] == sim[key]
    exit_ = "-" if cc == "bbr" else "1.0 s, 20"
    assert cell["emu_exit"] == cell["sim_exit"] == exit_
    assert cell["not_applied"] == ["rto"]


def test_a_replay_reads_the_kept_kernel_runs_and_runs_farlink_again(
    validate_emu, monkeypatch, tmp_path
):
    monkeypatch.setattr(validate_emu, "emulate", lambda scenario, **kw: FakeRun("emulate"))
    monkeypatch.setattr(validate_emu, "simulate", lambda scenario, **kw: FakeRun("simulate"))
    kept = validate_emu.run_cell("stpd-wireless", 1e-3, "cubic", 2, 5.0, traces=tmp_path)
    assert len(list(tmp_path.glob("*.npz"))) == 2

    def no_emulation(scenario, **kwargs):
        raise AssertionError("a replay emulates nothing")

    sims = []
    monkeypatch.setattr(validate_emu, "emulate", no_emulation)
    monkeypatch.setattr(
        validate_emu, "simulate", lambda scenario, **kw: sims.append(kw) or FakeRun("simulate")
    )
    replayed = validate_emu.run_cell(
        "stpd-wireless", 1e-3, "cubic", 2, 5.0, traces=tmp_path, replay=True
    )
    assert len(sims) == 2
    assert replayed["emu"] == kept["emu"] and replayed["emu_exit"] == kept["emu_exit"]
    with pytest.raises(SystemExit, match=r"no kept run stpd-wireless-0\.001-cubic-seed3"):
        validate_emu.run_cell("stpd-wireless", 1e-3, "cubic", 3, 5.0, traces=tmp_path, replay=True)


def test_the_matched_settings_are_a_scenario_the_simulator_runs(validate_emu):
    for cc in validate_emu.CONTROLLERS:
        result = simulate("stpd-wireless", sets=validate_emu.farlink_sets(cc), duration="1s")
        assert result.summary["delivered_bytes"] > 0
        assert len(result.trace("cwnd")["time_ns"]) > 0


def test_no_slow_start_exit_without_an_ssthresh(validate_emu):
    unset = np.array([2**64 - 1] * 3, dtype=np.uint64)
    assert validate_emu.slow_start_exit([0.0, 1.0, 2.0], [1, 2, 3], unset, 1.0) is None
    set_at_2 = np.array([2**64 - 1, 2**64 - 1, 4], dtype=np.uint64)
    assert validate_emu.slow_start_exit([0.0, 1.0, 2.0], [2, 8, 4], set_at_2, 2.0) == (2.0, 4.0)


def test_a_run_without_far_links_keeps_their_table(validate_emu, tmp_path):
    doc = tmp_path / "validation.md"
    far = [validate_emu.FAR_LINKS_HEADING, "", "| a | b |", "|---|---|", "| 1 | 2 |"]
    body = "\n".join(["", "## Linux TCP", "", "rows", "", *far])
    doc.write_text(f"# head\n\n{validate_emu.BEGIN}\n{body}\n{validate_emu.END}\ntail\n")
    assert validate_emu.kept_far_links(doc) == far
    assert validate_emu.kept_far_links(tmp_path / "absent.md") == []


@needs_namespaces("emulator")
def test_the_kernel_is_told_which_linux_settings_are_its_own(validate_emu):
    from farlink.emulate import emulate

    result = emulate(
        "stpd-wireless",
        tcp="reno",
        sender="kernel",
        sets=validate_emu.matched_sets("reno"),
        size="20KB",
        duration="10s",
    )
    (flow,) = result.summary["flows"]
    settings = flow["kernel_settings"]
    assert settings["applied"]["initial_window_segments"] == "route initcwnd 10"
    assert settings["applied"]["min_rto"] == "route rto_min 200ms"
    assert settings["applied"]["sack"] == "net.ipv4.tcp_sack = 1"
    not_applied = settings["not_applied"]
    assert '"rack" is farlink\'s' in not_applied["recovery"]
    assert '"linux" is farlink\'s' in not_applied["rto"]
    assert not_applied["initial_rto"].endswith("the scenario's 1000 ms")
