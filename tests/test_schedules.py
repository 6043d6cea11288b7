"""Link schedules and mahimahi traces in the simulator (docs/schedules.md): what issue 31
must show, from a scenario file, the command line and the library."""

import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from farlink import simulate
from farlink.scenario import ScenarioError
from farlink.schedules import opportunities_from_steps, read_mahimahi
from support import assert_one_error, run


def two_hops(fwd: dict, duration: str = "20s", **flow) -> dict:
    """S -> R -> D, the second hop's forward direction as given; one unbounded CUBIC flow."""
    return {
        "name": "schedule-test",
        "duration": duration,
        "nodes": ["S", "R", "D"],
        "links": [
            {"a": "S", "b": "R", "rate": "100Mbps", "delay": "1ms"},
            {"a": "R", "b": "D", "rate": "100Mbps", "delay": "20ms", "fwd": fwd},
        ],
        "flows": [
            {"from": "S", "to": "D", "app": {"kind": "unbounded"}, "tcp": {"cc": "cubic"}, **flow}
        ],
        "trace": {"rtt": True, "capacity": True, "drops": True},
    }


def constant_trace(path: Path, per_ms: int = 1, period_ms: int = 1000) -> Path:
    path.write_text("".join(f"{ms}\n" for ms in range(1, period_ms + 1) for _ in range(per_ms)))
    return path


def ip_rate_bps(result, link: int = 1, direction: str = "fwd") -> float:
    d = result.summary["links"][link][direction]
    return d["delivered_bytes"] * 8 / result.summary["sim_time_s"]


def test_a_constant_12_mbit_trace_carries_12_mbit_of_ip_packets(tmp_path, monkeypatch):
    # One 1504-byte opportunity a millisecond: one 1500-byte IP packet each, 12.0 Mbit/s.
    monkeypatch.chdir(tmp_path)
    constant_trace(tmp_path / "12mbit.trace")
    result = simulate(two_hops({"rate": {"trace": "12mbit.trace"}, "queue_pkts": 200}))
    assert ip_rate_bps(result) == pytest.approx(12e6, rel=0.03)
    # The resolved rate is the trace's mean (1504 bytes a ms), not the link's 100 Mbit/s.
    assert result.summary["links"][1]["fwd"]["rate_bps"] == 1504 * 8 * 1000


def test_several_packets_share_an_opportunity_and_a_large_one_spans_several(tmp_path):
    # Two opportunities a ms (3008 bytes): two 1500-byte packets go in each, 24 Mbit/s.
    doc = two_hops({"rate": {"trace": str(constant_trace(tmp_path / "t", per_ms=2))}})
    assert ip_rate_bps(simulate(doc)) == pytest.approx(24e6, rel=0.03)


def test_a_schedule_file_and_a_trace_resolve_relative_to_the_scenario_file(tmp_path, capsys):
    sub = tmp_path / "scenarios"
    sub.mkdir()
    constant_trace(sub / "12mbit.trace")
    (sub / "s.toml").write_text(
        'name = "rel"\nduration = "2s"\nnodes = ["A", "B"]\n'
        '[[links]]\na = "A"\nb = "B"\nrate = "10Mbps"\ndelay = "10ms"\n'
        'fwd = { rate = { trace = "12mbit.trace" } }\n'
        '[[flows]]\nfrom = "A"\nto = "B"\napp = { kind = "unbounded" }\n'
    )
    code, out, err = run(capsys, "simulate", sub / "s.toml", "--json", "--out", tmp_path / "o")
    assert code == 0, err
    assert json.loads(out)["links"][0]["fwd"]["rate_bps"] == 12_032_000


def test_a_missing_or_malformed_file_is_one_line_naming_it(tmp_path, capsys):
    (tmp_path / "bad.trace").write_text("1\n3\n2\n")
    (tmp_path / "s.toml").write_text(
        'nodes = ["A", "B"]\n[[links]]\na = "A"\nb = "B"\nrate = "1Mbps"\ndelay = "1ms"\n'
        'fwd = { rate = { trace = "bad.trace" } }\n'
        '[[flows]]\nfrom = "A"\nto = "B"\n'
    )
    code, _, err = run(capsys, "simulate", tmp_path / "s.toml", "--out", tmp_path / "o")
    assert_one_error(code, err, "bad.trace:3", "non-decreasing")
    code, _, err = run(
        capsys,
        "simulate",
        "stpd-wireless",
        "--set",
        'links[0].schedule={file="nowhere.csv"}',
        "--out",
        tmp_path / "o",
    )
    assert_one_error(code, err, "nowhere.csv", "cannot read")


STEPS = [
    {"at": "0s", "delay": "50ms"},
    {"at": "10s", "delay": "300ms"},
    {"at": "20s", "delay": "50ms"},
]


def test_a_delay_step_steps_the_smoothed_rtt_at_its_instants_and_reorders_nothing():
    # 10 Mbit/s, a queue that never fills and a window that keeps it short: the RTT is the
    # path's delays (2 ms + 2 x the scheduled one) plus a little serialization and queueing.
    doc = two_hops({"queue_pkts": 10_000}, duration="30s")
    # On the link: both directions' delays step, the RTT from 102 ms to 602 ms and back.
    doc["links"][1].update(rate="10Mbps", schedule=STEPS)
    doc["flows"][0]["tcp"] = {"cc": "cubic", "receive_buffer": "64KiB"}
    result = simulate(doc)
    rtt = result.trace("rtt")
    t = rtt["time_ns"] / 1e9
    srtt = rtt["srtt_ns"] / 1e9

    def srtt_at(s: float) -> float:
        return float(srtt[np.searchsorted(t, s) - 1])

    assert 0.102 <= srtt_at(9.9) < 0.16
    assert 0.602 <= srtt_at(12.0) < 0.66
    assert 0.102 <= srtt_at(25.0) < 0.16
    # The smoothed RTT rises past the middle (350 ms) within one new RTT of 10 s, and falls
    # back within the old one of 20 s: the step is at the schedule's instant.
    up = t[np.argmax((t > 10.0) & (srtt > 0.35))]
    down = t[np.argmax((t > 20.0) & (srtt < 0.35))]
    assert 10.0 < up < 10.0 + 0.7
    assert 20.0 < down < 20.0 + 0.7
    # Nothing reordered: no duplicate ACK ever triggered a retransmission, none was lost.
    flow = result.summary["flows"][0]
    assert flow["retransmissions"] == 0
    assert result.summary["links"][1]["fwd"]["drops"]["queue_overflow"] == 0


def test_an_outage_drops_or_holds_and_shows_in_the_capacity_trace():
    rows = [
        {"at": "0s", "rate": "5Mbps"},
        {"at": "4s", "up": False},
        {"at": "6s", "up": True, "rate": "2Mbps"},
    ]
    for down, dropped in (("drop", True), ("hold", False)):
        doc = two_hops({"schedule": {"rows": rows, "down": down}}, duration="10s")
        result = simulate(doc)
        drops = result.summary["links"][1]["fwd"]["drops"]["call_drop"]
        assert (drops > 0) == dropped
        cap = result.trace("capacity")
        mine = cap["link"] == 1
        assert cap["time_ns"][mine].tolist() == [0, 4_000_000_000, 6_000_000_000]
        assert cap["members_up"][mine].tolist() == [1, 0, 1]
        assert cap["capacity_bps"][mine].tolist() == [5_000_000, 0, 2_000_000]


def test_a_schedule_given_on_the_command_line_replays(capsys, tmp_path):
    def goodput(*sets: str) -> float:
        argv = ["simulate", "stpd-wireless", "--duration", "20s", "--json"]
        code, out, err = run(capsys, *argv, *sets, "--out", tmp_path / "o", "--force")
        assert code == 0, err
        return json.loads(out)["goodput_bps"]

    # The wireless hop's delay from 10 ms to 2 s at 5 s: the flow, its RTT 200 times longer, slows.
    rows = '[{at="0s", delay="10ms"}, {at="5s", delay="2s"}]'
    assert goodput("--set", f"links[1].schedule={rows}") < goodput()
    code, _, err = run(
        capsys,
        "simulate",
        "stpd-wireless",
        "--set",
        'links[1].schedule=[{at="1s"}]',
        "--out",
        tmp_path / "o",
    )
    assert_one_error(code, err, "links[1].schedule[0]", "first row must be at 0 s")


def test_bad_schedules_are_refused_at_their_field():
    bad = [
        ({"schedule": {"rows": STEPS, "down": "pause"}}, "links[1].fwd.schedule.down"),
        ({"schedule": [{"at": "0s"}, {"at": "0s"}]}, "links[1].fwd.schedule[1]"),
        ({"schedule": {"rows": STEPS[:1], "repeat": True}}, "links[1].fwd.schedule.rows"),
        ({"schedule": STEPS, "burst": "10KB"}, "links[1].fwd.schedule"),
    ]
    for fwd, path in bad:
        with pytest.raises(ScenarioError) as err:
            simulate(two_hops(fwd))
        assert err.value.path == path, err.value


def test_without_a_schedule_nothing_changes():
    # The same scenario with a schedule of one constant row is the same run, bit for bit.
    plain = simulate(two_hops({"rate": "10Mbps"}, duration="5s"))
    constant = simulate(two_hops({"rate": "10Mbps", "schedule": [{"at": "0s"}]}, duration="5s"))
    assert plain.summary["flows"] == constant.summary["flows"]
    assert np.array_equal(plain.trace("rtt")["srtt_ns"], constant.trace("rtt")["srtt_ns"])


def test_a_leo_schedule_replays_through_the_cli_from_its_folder(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = run(
        capsys,
        "leo",
        "--preset",
        "starlink-like",
        "--duration",
        "120s",
        "--capacity",
        "uniform:50Mbit/s,150Mbit/s",
        "--out",
        "sl.csv",
    )
    assert code == 0, err
    Path("leo.toml").write_text(
        'name = "leo"\nduration = "120s"\nnodes = ["T", "G"]\n'
        '[[links]]\na = "T"\nb = "G"\nqueue_pkts = 500\n'
        'schedule = { file = "sl.csv", interpolate_delay = true, down = "drop" }\n'
        '[[flows]]\nfrom = "T"\nto = "G"\napp = { kind = "unbounded" }\n'
        "[trace]\ncapacity = true\nrtt = true\n"
    )
    code, out, err = run(capsys, "simulate", "leo.toml", "--json", "--out", "out")
    assert code == 0, err
    assert json.loads(out)["sim_time_s"] == 120
    # The run replayed the file: the capacity trace of each direction steps where the CSV's
    # rate or up changes (the link's schedule drives both), and the RTT is the CSV's.
    rows = [r.split(",") for r in Path("sl.csv").read_text().splitlines()[1:]]
    changes = [
        (round(float(r[0]) * 1e9), int(r[2]) * (r[3] == "1"))
        for k, r in enumerate(rows)
        if k == 0 or (r[2], r[3]) != (rows[k - 1][2], rows[k - 1][3])
    ]
    capacity = pq.read_table("out/capacity.parquet").to_pydict()
    steps = list(zip(capacity["time_ns"], capacity["capacity_bps"], strict=True))
    assert steps == changes + changes  # forward, then reverse
    assert len(changes) > 1
    delays = [float(r[1]) for r in rows]
    rtt = pq.read_table("out/rtt.parquet").column("rtt_ns").to_numpy() / 1e9
    assert 2 * min(delays) <= rtt.min() <= 2 * max(delays) + 0.001


def test_a_mahimahi_trace_round_trips_through_export(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    # An irregular trace: bursts, gaps, repeated milliseconds.
    ms = [1, 1, 2, 5, 5, 5, 9, 10, 30, 31, 31, 40]
    Path("in.trace").write_text("".join(f"{m}\n" for m in ms))
    Path("s.toml").write_text(
        'duration = "1s"\nnodes = ["A", "B"]\n[[links]]\nname = "hop"\na = "A"\nb = "B"\n'
        'rate = "1Mbps"\ndelay = "1ms"\nrev = { rate = { trace = "in.trace" } }\n'
        '[[flows]]\nfrom = "A"\nto = "B"\napp = { kind = "unbounded" }\n'
    )
    argv = ["trace", "export-mahimahi", "s.toml", "--link", "hop", "--direction", "rev"]
    code, _, err = run(capsys, *argv, "--out", "out.trace")
    assert code == 0, err
    assert Path("out.trace").read_bytes() == Path("in.trace").read_bytes()
    # A file farlink did not write is not replaced without --force.
    code, _, err = run(capsys, *argv, "--out", "in.trace")
    assert_one_error(code, err, "in.trace", "--force")
    assert read_mahimahi(Path("in.trace")) == ms


def test_a_bundle_exports_its_capacity_with_its_call_drops(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = run(
        capsys,
        "trace",
        "export-mahimahi",
        "iridium-4",
        "--link",
        "iridium",
        "--duration",
        "2h",
        "--out",
        "iridium.trace",
        "--json",
    )
    assert code == 0, err
    ms = read_mahimahi(Path("iridium.trace"))
    assert json.loads(out)["opportunities"] == len(ms)
    assert ms[-1] == 7_200_000
    gaps = np.diff(ms)[:-1]  # the last line closes the span
    # Four 2400 bit/s members: an opportunity every 1.25 s at most; longer gaps are the
    # spells with fewer members up (call drops, redials).
    assert gaps.min() >= 1253
    assert (gaps > 1300).any()


def test_opportunities_offer_the_rate_they_stand_for():
    ms = opportunities_from_steps([(0.0, 12.032e6), (1.0, 0.0), (2.0, 6.016e6)], 3.0)
    assert ms[:3] == [1, 2, 3]
    assert sum(1 for m in ms if m <= 1000) == 1000
    assert not any(1000 < m <= 2000 for m in ms)
    assert sum(1 for m in ms if m > 2000) == 500


def test_a_sweeps_inline_scenario_reads_its_files_beside_the_sweep_file(tmp_path):
    from farlink.sweeps.sweep import load_sweep

    (tmp_path / "steps.csv").write_text("at_s,delay_s,rate_bps,up\n0,0.05,1e6,1\n5,0.3,1e6,0\n")
    (tmp_path / "sweep.toml").write_text(
        '[scenario]\nduration = "10s"\nnodes = ["A", "B"]\n'
        '[[scenario.links]]\na = "A"\nb = "B"\nschedule = { file = "steps.csv" }\n'
        '[[scenario.flows]]\nfrom = "A"\nto = "B"\napp = { kind = "unbounded" }\n'
        '[grid]\ntcp = ["reno", "cubic"]\n'
    )
    rows = load_sweep(tmp_path / "sweep.toml").scenario["links"][0]["schedule"]["rows"]
    assert rows == [
        {"at_s": 0.0, "delay_s": 0.05, "rate_bps": 1e6, "up": True},
        {"at_s": 5.0, "delay_s": 0.3, "rate_bps": 1e6, "up": False},
    ]


def test_the_resolved_scenario_outlines_a_schedule_and_takes_it_for_no_default(tmp_path):
    from farlink.scenario import resolve

    rows = [{"at": "0s", "rate": "5Mbps"}, {"at": "4s", "up": False}, {"at": "6s", "up": True}]
    doc = two_hops({"schedule": {"rows": rows, "down": "drop", "repeat": True}})
    direction = resolve(doc)["links"][1]["fwd"]
    assert direction["schedule"] == {
        "rows": 3,
        "period_s": 6.0,
        "down": "drop",
        "interpolate_delay": False,
        "min_rate_bps": 5_000_000,
        "max_rate_bps": 5_000_000,
        "min_delay_s": 0.02,
        "max_delay_s": 0.02,
        "down_rows": 1,
    }
    assert not any("schedule" in path for path in resolve(doc)["defaults"])
    assert "schedule" not in resolve(two_hops({}))["links"][1]["fwd"]


def test_a_schedule_files_bad_row_is_named_by_its_line(tmp_path, capsys):
    (tmp_path / "bad.csv").write_text(
        "at_s,delay_s,rate_bps,up\n0,0.05,1e6,1\n5,0.3,1e6,0\n4,0.3,1e6,1\n"
    )
    (tmp_path / "s.toml").write_text(
        'duration = "5s"\nnodes = ["A", "B"]\n[[links]]\na = "A"\nb = "B"\n'
        'schedule = { file = "bad.csv" }\n'
        '[[flows]]\nfrom = "A"\nto = "B"\napp = { kind = "unbounded" }\n'
    )
    code, _, err = run(capsys, "simulate", tmp_path / "s.toml", "--out", tmp_path / "o")
    assert_one_error(code, err, "links[0].schedule.rows[2]", "increasing", "line 4 of", "bad.csv")
