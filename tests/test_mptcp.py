"""Multipath TCP in the simulator from the command line (`simulate --transport mptcp`,
docs/multipath.md): a verified transfer over iridium-4's members through call drops, each
dropped subflow back after its redial; the result's `subflows` against the result schema; bad
input; scenarios without it unchanged."""

import json
from pathlib import Path

import jsonschema
import pytest

from support import run

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = json.loads((ROOT / "docs" / "result.schema.json").read_text(encoding="utf-8"))

# One call drop per member every 5 minutes on average (the preset's 1/50 min, ten times as
# often): several during the quarter of an hour a megabyte takes over four 2400 bit/s members.
DROPS = 'links[0].bundle.call_drop_rate="1/5min"'


def simulate_json(capsys, *args):
    code, out, err = run(capsys, "simulate", "iridium-4", "--json", *args)
    assert code == 0, err
    return json.loads(out)


def test_a_megabyte_over_iridium_4_crosses_call_drops_and_the_subflows_come_back(capsys):
    doc = simulate_json(capsys, "--transport", "mptcp", "--size", "1MB", "--set", DROPS)
    jsonschema.validate(doc, SCHEMA)
    flow = doc["flows"][0]
    assert flow["finished"] and flow["delivered_bytes"] == 1_000_000
    assert [s["route"] for s in flow["subflows"]] == [f"iridium/member{k}" for k in range(4)]
    finish = flow["finish_s"]
    back = [
        s for s in flow["subflows"] if any(0 < a and b < finish for a, b in s["down_intervals_s"])
    ]
    assert back, flow["subflows"]
    for s in back:
        # A new subflow (its own handshake) over the member once redialled.
        assert s["established"] >= 2, s
    assert flow["mptcp"]["reinjected_bytes"] > 0
    assert flow["mptcp"]["scheduler"] == "linux" and flow["mptcp"]["coupling"] == "lia"


def test_scheduler_and_coupling_come_from_the_flows_mptcp_table(capsys):
    doc = simulate_json(
        capsys,
        "--transport",
        "mptcp",
        "--size",
        "100KB",
        "--set",
        'flows[0].mptcp.scheduler="roundrobin"',
        "--set",
        'flows[0].mptcp.coupling="olia"',
    )
    flow = doc["flows"][0]
    assert flow["finished"] and flow["delivered_bytes"] == 100_000
    assert flow["mptcp"]["scheduler"] == "roundrobin" and flow["mptcp"]["coupling"] == "olia"


def test_tcp_keeps_the_bundle_and_adds_no_key(capsys):
    plain = simulate_json(capsys, "--size", "100KB")
    tcp = simulate_json(capsys, "--size", "100KB", "--transport", "tcp")
    for doc in (plain, tcp):
        assert "subflows" not in doc["flows"][0] and "mptcp" not in doc["flows"][0]
    plain.pop("wall_time_s")
    tcp.pop("wall_time_s")
    assert plain == tcp


def test_bad_transport_and_mptcp_settings_are_one_line_naming_the_field(capsys):
    for args, fragment in [
        (["--transport", "quic"], "flows[0].transport"),
        (
            ["--transport", "mptcp", "--set", 'flows[0].mptcp.scheduler="fastest"'],
            "flows[0].mptcp.scheduler",
        ),
        (["--set", 'flows[0].mptcp.coupling="lia"'], "flows[0].mptcp"),
        (
            ["--transport", "mptcp", "--set", 'flows[0].mptcp.close_resends="all"'],
            "flows[0].mptcp.close_resends",
        ),
        (
            ["--transport", "mptcp", "--set", "flows[0].mptcp.stale_loss_count=256"],
            "flows[0].mptcp.stale_loss_count",
        ),
    ]:
        code, _, err = run(capsys, "simulate", "iridium-4", *args)
        assert code == 2, err
        assert err.count("\n") == 1 and fragment in err, err


def test_compare_bonding_puts_mlppp_and_mptcp_side_by_side(capsys, tmp_path):
    code, out, err = run(
        capsys,
        "compare-bonding",
        "--out",
        tmp_path,
        "iridium-4",
        "--size",
        "300KB",
        "--seeds",
        "2",
        "--json",
        "--set",
        DROPS,
    )
    assert code == 0, err
    doc = json.loads(out)
    assert json.loads((tmp_path / "bonding.json").read_text(encoding="utf-8")) == doc
    assert (tmp_path / "bonding.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert doc["seeds"] == [1, 2]
    for bonding in ("mlppp", "mptcp"):
        assert set(doc[bonding]) == {"sim", "emulate"}
        assert doc[bonding]["emulate"] is None
        runs = doc[bonding]["sim"]["runs"]
        assert [r["seed"] for r in runs] == [1, 2]
        assert all(r["finished"] for r in runs)
        # One stall per call drop during the transfer, each at most the transfer.
        for r in runs:
            assert len(r["stall_after_drop_s"]) == r["call_drops"]
            assert all(0 <= s <= r["transfer_time_s"] for s in r["stall_after_drop_s"])
    assert sum(r["call_drops"] for r in doc["mptcp"]["sim"]["runs"]) > 0
    assert "not run" in doc["emulate"]
    faster = doc["faster"]
    times = {b: doc[b]["sim"]["mean"]["transfer_time_s"] for b in ("mlppp", "mptcp")}
    assert faster["bonding"] == min(times, key=times.get)
    assert abs(faster["by_s"] - abs(times["mlppp"] - times["mptcp"])) < 1e-9
    # The table says the same and that the emulator's side is not run here.
    code, out, _ = run(
        capsys,
        "compare-bonding",
        "iridium-4",
        "--size",
        "300KB",
        "--seeds",
        "2",
        "--set",
        DROPS,
        "--out",
        tmp_path / "table",
    )
    assert code == 0
    assert f"wrote {tmp_path / 'table' / 'bonding.png'}" in out
    assert f"faster: {faster['bonding']}" in out and "emulate: not run" in out


def test_compare_bonding_of_a_scenario_without_a_bundle_is_one_line(capsys):
    code, _, err = run(capsys, "compare-bonding", "stpd-wireless", "--size", "100KB")
    assert code == 2, err
    assert err.count("\n") == 1 and "flows[0].transport" in err, err


def test_without_call_drops_four_members_carry_85_percent_of_their_sum(capsys):
    # A receive buffer that does not limit (docs/multipath.md: the preset's 22 KB, shared by
    # four subflows, is held back by head-of-line blocking).
    doc = simulate_json(
        capsys,
        "--transport",
        "mptcp",
        "--size",
        "2MB",
        "--set",
        'links[0].bundle.call_drop_rate="0/1h"',
        "--set",
        'flows[0].tcp.receive_buffer="1MB"',
    )
    flow = doc["flows"][0]
    assert flow["finished"] and flow["bottleneck_bps"] == 9600
    assert flow["normalized_goodput"] >= 0.85, flow["goodput_bps"]
    assert all(s["established"] == 1 and not s["down_intervals_s"] for s in flow["subflows"])


def test_a_sped_up_bundle_scales_rates_timers_and_call_drops_together():
    from farlink.bonding import speed_up
    from farlink.scenario import load_scenario
    from farlink.units import parse_bitrate_bps, parse_duration_s

    doc = load_scenario("iridium-4")
    fast = speed_up(doc, 20)
    assert doc["links"][0]["bundle"]["rate"] == "2400bps", "the scenario given is left alone"
    b = fast["links"][0]["bundle"]
    assert parse_bitrate_bps(b["rate"]) == 48_000
    for key, real_s in [("delay", 0.5), ("detection_delay", 30), ("t_d", 30), ("dial_time", 14.5)]:
        assert parse_duration_s(b[key]) == pytest.approx(real_s / 20), key
    # The preset's 1/50min per member, twenty times as frequent.
    assert "call_drop_rate" not in b
    assert b["call_drop_rate_per_s"] == pytest.approx(20 / 3000)
    with pytest.raises(ValueError, match="above 0"):
        speed_up(doc, 0)


def test_compare_bonding_speedup_runs_the_bundle_that_many_times_faster(capsys, tmp_path):
    def mlppp_s(*args: str) -> dict:
        code, out, err = run(
            capsys, "compare-bonding", "iridium-4", "--size", "200KB", "--seeds", "1", "--json",
            "--out", tmp_path, *args,
        )  # fmt: skip
        assert code == 0, err
        doc = json.loads(out)
        assert doc["faster_emulate"] is None, "the emulator's side was not run"
        return doc["mlppp"]["sim"]["mean"]["transfer_time_s"]

    real_s = mlppp_s("--set", 'links[0].bundle.call_drop_rate="0/1h"')
    fast_s = mlppp_s("--speedup", "20", "--set", "links[0].bundle.call_drop_rate_per_s=0")
    # MLPPP's one connection scales with its members (the TCP's own clocks do not: not exactly).
    assert 15 < real_s / fast_s < 25, (real_s, fast_s)
