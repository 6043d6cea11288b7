"""The event log's readers: uptime, exports, fit-drops on the SQLite log, and bad files.

Hand-written logs (LogWriter, the schema of docs/linkmgr.md) check each rule with figures worked
out by hand; synthetic runs (synthetic_log) check that the readers agree with one another.
"""

from __future__ import annotations

import csv
import io
import json
import sqlite3
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from farlink.calldrops.fit import fit_drop_log
from farlink.calldrops.log import parse_xml_log
from farlink.linkmgr.eventlog import EventLog
from farlink.linkmgr.export import CSV_COLUMNS, events_csv, xml_database
from farlink.linkmgr.synthetic import LogWriter, SyntheticBundle, synthetic_log
from farlink.linkmgr.uptime import drop_log_from_event_log, uptime_report
from support import assert_one_error, run

T0 = 1_000_000.0


def two_members(path: Path) -> Path:
    """A 100 s log: A up 10–60 then dropped, up again 70–100; B up 20–90 then failed.

    All up: 20–60 and 70–90 = 60 s. At least one up: 10–100 = 90 s. Drops: A once (the primary).
    """
    with LogWriter(path, ["A", "B"], started_unix_s=T0) as w:
        w.event(T0, "daemon", detail="start")
        w.event(T0 + 1, "state", 0, state="connecting")
        w.event(T0 + 1, "dial", 0, value=1)
        w.event(T0 + 10, "dial_result", 0, value=1, detail="CONNECT 9600")
        w.event(T0 + 10, "state", 0, state="connected")
        w.event(T0 + 10, "primary", 0)
        w.event(T0 + 12, "state", 1, state="connecting")
        w.event(T0 + 12, "dial", 1, value=1)
        w.event(T0 + 20, "state", 1, state="connected")
        w.event(T0 + 30, "signal", 0, value=4, detail='{"reply_s": 0.4, "handover": false}')
        w.event(T0 + 60, "drop", 0, detail="no carrier")
        w.event(T0 + 60, "state", 0, state="dropped")
        w.event(T0 + 60, "primary", 1)
        w.event(T0 + 65, "state", 0, state="connecting")
        w.event(T0 + 65, "dial", 0, value=1)
        w.event(T0 + 70, "state", 0, state="connected")
        w.event(T0 + 90, "state", 1, state="failed")
        w.event(T0 + 100, "tx_bytes", None, value=3000)
    return path


def test_uptime_follows_the_documented_rules(tmp_path):
    report = uptime_report(two_members(tmp_path / "log.sqlite"))
    assert report.duration_s == pytest.approx(100)
    assert report.all_up_s == pytest.approx(60)
    assert report.any_up_s == pytest.approx(90)
    assert report.all_up_fraction == pytest.approx(0.6)
    assert report.any_up_fraction == pytest.approx(0.9)
    a, b = report.members
    assert (a.modem, a.up_s, a.drops, a.dials, a.dials_connected) == ("A", 80, 1, 2, 1)
    assert (b.modem, b.up_s, b.drops, b.dials, b.state) == ("B", 70, 0, 1, "failed")
    assert report.primary_drops == 1


def test_a_fresh_start_ends_every_up_period_and_a_resume_keeps_it(tmp_path):
    path = tmp_path / "restart.sqlite"
    with LogWriter(path, ["A"], started_unix_s=T0) as w:
        w.event(T0, "daemon", detail="start")
        w.event(T0, "state", 0, state="connected")
        w.event(T0 + 10, "daemon", detail="resume")  # restored: still up
        w.event(T0 + 20, "daemon", detail="start")  # a fresh start: down until it connects
        w.event(T0 + 30, "state", 0, state="connected")
        w.event(T0 + 40, "signal", 0, value=3)
    report = uptime_report(path)
    assert report.members[0].up_s == pytest.approx(20 + 10)
    assert report.duration_s == pytest.approx(40)


def test_byte_counters_continue_across_a_restart_of_the_count(tmp_path):
    from farlink.linkmgr.uptime import read_tracker

    path = tmp_path / "bytes.sqlite"
    with LogWriter(path, ["A"], started_unix_s=T0) as w:
        w.event(T0, "daemon", detail="start")
        w.event(T0 + 1, "tx_bytes", 0, value=100)
        w.event(T0 + 2, "tx_bytes", 0, value=300)
        w.event(T0 + 3, "daemon", detail="resume")
        w.event(T0 + 4, "tx_bytes", 0, value=50)
    tracker = read_tracker(path)
    assert tracker.members[0].tx_bytes == 350
    assert tracker.bundle_bytes() == (350, 0)


def test_a_log_being_written_is_read_while_it_grows(tmp_path):
    path = two_members(tmp_path / "live.sqlite")
    writer = sqlite3.connect(path)  # the writer keeps its connection open (WAL)
    with EventLog(path) as log:
        seen = log.last_id()
        writer.execute(
            "INSERT INTO events (t_unix_s, t_daemon_s, modem, kind) VALUES (?, ?, NULL, 'error')",
            (T0 + 101, 101.0),
        )
        writer.commit()
        new = log.events(seen)
        assert [e.kind for e in new] == ["error"]
    writer.close()


def test_csv_has_a_row_per_event_with_names(tmp_path):
    path = two_members(tmp_path / "log.sqlite")
    rows = list(csv.DictReader(io.StringIO(events_csv(path))))
    assert tuple(rows[0]) == CSV_COLUMNS
    with EventLog(path) as log:
        assert len(rows) == log.count()
    drop = next(r for r in rows if r["kind"] == "drop")
    assert (drop["modem"], drop["modem_name"], drop["detail"]) == ("0", "A", "no carrier")
    assert drop["time_utc"] == "1970-01-12T13:47:40.000Z"


def test_xml_is_figure_7_4s_database_and_reads_back_to_the_same_fit(tmp_path):
    path = synthetic_log(tmp_path / "run.sqlite", SyntheticBundle(duration_s=4 * 3600), seed=5)
    data = xml_database(path)
    root = ET.fromstring(data)
    connections = root.findall("connection")
    assert connections
    for conn in connections:
        assert [child.tag for child in conn][:3] == ["modem_name", "modem_index", "connection_time"]
        for entry in conn.findall("entry"):
            assert entry.find("entry_id") is not None
            for event in entry.findall("event"):
                assert [c.tag for c in event] == ["state", "time"]
    first = [
        c
        for c in connections
        if c.findtext("connection_time") == connections[0].findtext("connection_time")
    ]
    assert sorted(int(c.findtext("modem_index")) for c in first) == list(range(1, len(first) + 1))

    from_sqlite = fit_drop_log(drop_log_from_event_log(path))
    from_xml = fit_drop_log(parse_xml_log(data))
    assert from_sqlite.drops == from_xml.drops > 0
    assert from_xml.beta_per_s == pytest.approx(from_sqlite.beta_per_s, rel=1e-6)


def test_the_commands_on_a_synthetic_run(tmp_path, capsys):
    path = synthetic_log(tmp_path / "run.sqlite", SyntheticBundle(duration_s=4 * 3600), seed=7)
    code, out, _ = run(capsys, "linkmgr", "uptime", str(path), "--json")
    assert code == 0
    up = json.loads(out)
    assert 0 < up["all_up_fraction"] < up["any_up_fraction"] <= 1
    assert len(up["members"]) == 8
    assert up["drops"] == sum(m["drops"] for m in up["members"]) > 0
    code, out, _ = run(capsys, "fit-drops", str(path), "--json")
    assert code == 0
    fit = json.loads(out)
    assert fit["drops"] == up["drops"]
    assert fit["ci_low_per_s"] < fit["beta_per_s"] < fit["ci_high_per_s"]
    out_file = tmp_path / "run.xml"
    code, _, _ = run(capsys, "linkmgr", "log", str(path), "--xml", "--out", str(out_file))
    assert code == 0
    code, out, _ = run(capsys, "fit-drops", str(out_file), "--json")
    assert json.loads(out)["drops"] == fit["drops"]
    code, out, _ = run(capsys, "linkmgr", "log", str(path), "--csv")
    assert code == 0 and out.startswith("id,t_unix_s,")


def test_a_short_log_gets_an_uptime_but_no_fit(tmp_path, capsys):
    path = synthetic_log(tmp_path / "short.sqlite", SyntheticBundle(duration_s=120), seed=1)
    code, out, _ = run(capsys, "linkmgr", "uptime", str(path))
    assert code == 0 and "at least one up" in out
    code, _, err = run(capsys, "fit-drops", str(path))
    assert_one_error(code, err, "short.sqlite: too short for a fit", "no call drop")


def test_an_empty_log_reports_zero_time(tmp_path, capsys):
    LogWriter(tmp_path / "empty.sqlite", ["A"]).close()
    code, out, _ = run(capsys, "linkmgr", "uptime", str(tmp_path / "empty.sqlite"), "--json")
    assert code == 0
    assert json.loads(out)["duration_s"] == 0


def _not_sqlite(tmp_path: Path) -> Path:
    (tmp_path / "text.sqlite").write_text("modem,time\nA,1\n")
    return tmp_path / "text.sqlite"


def _truncated(tmp_path: Path) -> Path:
    good = synthetic_log(tmp_path / "good.sqlite", SyntheticBundle(duration_s=600), seed=1)
    data = good.read_bytes()
    (tmp_path / "cut.sqlite").write_bytes(data[:100] + b"\xff" * 4000 + data[4100:])
    return tmp_path / "cut.sqlite"


def _other_database(tmp_path: Path) -> Path:
    path = tmp_path / "other.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE t (x)")
    return path


def _newer_schema(tmp_path: Path) -> Path:
    path = two_members(tmp_path / "v2.sqlite")
    with sqlite3.connect(path) as db:
        db.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    return path


@pytest.mark.parametrize(
    ("make", "fragment"),
    [
        (_not_sqlite, "not an SQLite database"),
        (_truncated, "expected a farlink link-manager event log"),
        (_other_database, "no table meta, events"),
        (_newer_schema, "schema version '2'"),
        (lambda tmp: tmp / "absent.sqlite", "cannot read the file"),
    ],
)
@pytest.mark.parametrize(
    "command", [("linkmgr", "uptime"), ("linkmgr", "log", "--csv"), ("linkmgr", "dashboard")]
)
def test_a_bad_file_is_one_line_and_exit_2(tmp_path, capsys, make, fragment, command):
    path = make(tmp_path)
    code, _, err = run(capsys, *command[:2], str(path), *command[2:])
    assert_one_error(code, err, fragment, path.name)


def test_fit_drops_on_a_corrupt_sqlite_file_is_one_line(tmp_path, capsys):
    code, _, err = run(capsys, "fit-drops", str(_truncated(tmp_path)))
    assert_one_error(code, err, "cut.sqlite")


def test_log_needs_exactly_one_format_and_never_overwrites_the_log(tmp_path, capsys):
    path = two_members(tmp_path / "log.sqlite")
    code, _, err = run(capsys, "linkmgr", "log", str(path))
    assert_one_error(code, err, "--csv, --xml")
    code, _, err = run(capsys, "linkmgr", "log", str(path), "--csv", "--out", str(path))
    assert_one_error(code, err, "the log itself")
    assert EventLog(path).count() > 0


def test_readers_never_write_to_the_log(tmp_path, capsys):
    path = two_members(tmp_path / "log.sqlite")
    before = path.read_bytes()
    uptime_report(path)
    run(capsys, "linkmgr", "log", str(path), "--xml")
    run(capsys, "fit-drops", str(path))
    assert path.read_bytes() == before


def test_throughput_comes_from_tx_and_rx_sampled_together(tmp_path):
    from farlink.linkmgr.uptime import read_tracker
    from farlink.linkmgr.view import snapshot, throughput_bps

    path = tmp_path / "rates.sqlite"
    with LogWriter(path, ["A"], started_unix_s=T0) as w:
        w.event(T0, "daemon", detail="start")
        for k in range(1, 61):  # 300 B/s sent, 75 B/s received, sampled every second
            w.event(T0 + k, "tx_bytes", None, value=300.0 * k)
            w.event(T0 + k, "rx_bytes", None, value=75.0 * k)
    tracker = read_tracker(path)
    assert throughput_bps(tracker) == pytest.approx((2400.0, 600.0))
    series = snapshot(tracker)["throughput"]
    assert len(series) > 10
    for _, tx_bps, rx_bps in series:
        assert (tx_bps, rx_bps) == pytest.approx((2400.0, 600.0))


def test_throughput_falls_to_zero_when_the_counters_stand_still(tmp_path):
    from farlink.linkmgr.uptime import read_tracker
    from farlink.linkmgr.view import THROUGHPUT_WINDOW_S, snapshot, throughput_bps

    path = tmp_path / "still.sqlite"
    with LogWriter(path, ["A"], started_unix_s=T0) as w:
        w.event(T0, "daemon", detail="start")
        for k in range(1, 61):
            w.event(T0 + k, "tx_bytes", None, value=300.0 * k)
        w.event(T0 + 60 + THROUGHPUT_WINDOW_S / 2, "signal", 0, value=3)
        half = read_tracker(path)
        w.event(T0 + 60 + 2 * THROUGHPUT_WINDOW_S, "signal", 0, value=3)
    assert throughput_bps(half)[0] == pytest.approx(1200.0)  # half the window still sending
    still = read_tracker(path)
    assert throughput_bps(still) == (0.0, 0.0)
    assert snapshot(still)["throughput"][-1][1:] == [0.0, 0.0]


# Figure 7.2's transitions, plus idle (a hold, or a stopped daemon) from anywhere.
NEXT_STATES = {
    "idle": ("connecting",),
    "connecting": ("connected", "failed", "idle"),
    "connected": ("dropped", "idle", "connected"),
    "dropped": ("connecting", "idle"),
    "failed": ("connecting", "blocked", "idle"),
    "blocked": ("connecting", "idle"),
}


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_every_reader_agrees_on_any_run_of_the_state_machine(tmp_path_factory, data):
    members = data.draw(st.integers(1, 4), label="members")
    path = tmp_path_factory.mktemp("prop") / "log.sqlite"
    states = ["idle"] * members
    t = T0
    with LogWriter(path, [f"m{i}" for i in range(members)], started_unix_s=T0) as w:
        w.event(t, "daemon", detail="start")
        for _ in range(data.draw(st.integers(0, 40), label="steps")):
            t += data.draw(st.sampled_from([0.0, 0.5, 7.0, 300.0]), label="dt")
            if data.draw(st.integers(0, 15), label="daemon?") == 0:
                detail = data.draw(st.sampled_from(["start", "stop", "resume"]), label="daemon")
                w.event(t, "daemon", detail=detail)
                if detail != "resume":
                    states = ["idle"] * members
                continue
            m = data.draw(st.integers(0, members - 1), label="member")
            state = data.draw(st.sampled_from(NEXT_STATES[states[m]]), label="state")
            if state == "dropped":
                w.event(t, "drop", m, detail="no carrier")
            w.event(t, "state", m, state=state)
            states[m] = state
        w.event(t + 1.0, "daemon", detail="stop")  # the XML's last connection ends here too

    report = uptime_report(path)
    eps = 1e-6
    assert report.all_up_s <= report.any_up_s + eps <= report.duration_s + 2 * eps
    for member in report.members:
        assert member.up_s <= report.any_up_s + eps
    from_sqlite = drop_log_from_event_log(path)
    xml = xml_database(path)
    if ET.fromstring(xml).find("connection") is None:  # no member ever changed state
        assert report.drops == 0 and from_sqlite.exposure_s == 0
        return
    from_xml = parse_xml_log(xml)
    assert from_xml.drops == from_sqlite.drops == report.drops
    assert sorted(from_xml.intervals_s) == pytest.approx(sorted(from_sqlite.intervals_s))
    assert from_xml.exposure_s == pytest.approx(from_sqlite.exposure_s)
    assert from_sqlite.exposure_s == pytest.approx(sum(m.up_s for m in report.members))


def test_exports_are_deterministic(tmp_path):
    spec = SyntheticBundle(duration_s=1800)
    a = synthetic_log(tmp_path / "a.sqlite", spec, seed=9)
    b = synthetic_log(tmp_path / "b.sqlite", spec, seed=9)
    assert events_csv(a) == events_csv(b)
    assert xml_database(a) == xml_database(b)


@pytest.mark.parametrize(
    ("column", "value", "fragment"),
    [
        ("modem", -1, "malformed column"),
        ("modem", 10**9, "is not below 256"),
        ("modem", "seven", "malformed column"),
        ("value", float("inf"), "not a finite number"),
        ("t_unix_s", "yesterday", "malformed column"),
    ],
)
def test_a_corrupt_row_is_one_line_never_a_crash_or_a_huge_bundle(
    tmp_path, capsys, column, value, fragment
):
    path = two_members(tmp_path / "log.sqlite")
    with sqlite3.connect(path) as db:
        db.execute(f"UPDATE events SET {column} = ? WHERE id = 5", (value,))
    for command in (("linkmgr", "uptime"), ("fit-drops",), ("linkmgr", "log", "--xml")):
        code, _, err = run(capsys, *command[:2], str(path), *command[2:])
        assert_one_error(code, err, "log.sqlite", fragment)


def test_text_that_is_not_utf8_is_one_line(tmp_path, capsys):
    path = two_members(tmp_path / "log.sqlite")
    with sqlite3.connect(path) as db:
        db.execute("UPDATE events SET detail = CAST(x'fffe41' AS TEXT) WHERE id = 5")
    code, _, err = run(capsys, "linkmgr", "log", str(path), "--csv")
    assert_one_error(code, err, "log.sqlite", "cannot read it")


def test_uptime_of_independent_members_is_the_renewal_formula(tmp_path):
    # Each member alternates Exp(β) up-times and a fixed 30 s down-time (T_d 10 s + a 20 s dial
    # that never fails): its availability is A = (1/β)/(1/β + 30 s) and, the members being
    # independent, all eight are up a fraction A^8 of the time (farlink.models.iridium). About
    # 4,600 drops: the measured fractions scatter by a few 0.001 between seeds.
    from farlink.models.iridium import bundle_full_uptime, member_availability

    spec = SyntheticBundle(
        duration_s=100 * 3600,
        beta_per_s=1 / 600,
        dial_failure=0.0,
        dropped_wait_s=10,
        dial_s=20,
        signal_every_s=3600,
        bytes_every_s=3600,
    )
    report = uptime_report(synthetic_log(tmp_path / "renewal.sqlite", spec, seed=11))
    availability = float(member_availability(1 / 600, 0.0, 30.0))
    mean_member = sum(m.uptime_fraction for m in report.members) / len(report.members)
    assert mean_member == pytest.approx(availability, abs=0.003)
    assert report.all_up_fraction == pytest.approx(
        float(bundle_full_uptime(8, 1 / 600, 0, 30)), abs=0.01
    )
    assert report.any_up_fraction > 0.999


DEEP = "[" * 5_000 + "]" * 5_000  # past Python's recursion limit (1,000 levels)


@pytest.mark.parametrize(
    ("sql", "args", "fragment"),
    [
        ("UPDATE events SET detail = ? WHERE kind = 'signal'", (DEEP,), "nested 5000 levels"),
        ("UPDATE events SET detail = ? WHERE id = 5", ("{" * 40_000,), "nested 40000 levels"),
        ("UPDATE events SET detail = ? WHERE id = 5", ('"' + "x" * 70_000 + '"',), "characters"),
        ("UPDATE meta SET value = ? WHERE key = 'modems'", (DEEP,), "meta 'modems' is nested"),
    ],
)
def test_json_in_a_log_is_read_within_bounds(tmp_path, capsys, sql, args, fragment):
    path = two_members(tmp_path / "log.sqlite")
    with sqlite3.connect(path) as db:
        db.execute(sql, args)
    commands = (("linkmgr", "uptime"), ("fit-drops",), ("linkmgr", "log", "--csv"))
    for command in (*commands, ("linkmgr", "log", "--xml")):
        code, _, err = run(capsys, *command[:2], str(path), *command[2:])
        assert_one_error(code, err, "log.sqlite", fragment)


def test_brackets_inside_json_strings_are_not_nesting():
    from farlink.linkmgr.eventlog import bounded_json

    text = '{"reply_s": 0.4, "note": "' + "[{" * 1000 + '\\"]"}'
    assert bounded_json(text)["reply_s"] == 0.4


def test_log_out_never_replaces_a_file_farlink_did_not_write(tmp_path, capsys):
    path = two_members(tmp_path / "log.sqlite")
    mine = tmp_path / "notes.csv"
    mine.write_text("my own notes\n")
    code, _, err = run(capsys, "linkmgr", "log", str(path), "--csv", "--out", str(mine))
    assert_one_error(code, err, "notes.csv", "--force")
    assert mine.read_text() == "my own notes\n"
    # A file it wrote is its own to replace; --force replaces another's.
    export = tmp_path / "events.csv"
    for _ in range(2):
        code, _, err = run(capsys, "linkmgr", "log", str(path), "--csv", "--out", str(export))
        assert code == 0, err
    code, _, err = run(capsys, "linkmgr", "log", str(path), "--csv", "--out", str(mine), "--force")
    assert code == 0, err
    assert mine.read_text() != "my own notes\n"


@pytest.mark.parametrize("target", ["/dev/null", "folder"])
def test_log_out_refuses_a_device_or_a_folder_even_with_force(tmp_path, capsys, target):
    path = two_members(tmp_path / "log.sqlite")
    out = Path(target) if target.startswith("/") else tmp_path / target
    if target == "folder":
        out.mkdir()
    code, _, err = run(capsys, "linkmgr", "log", str(path), "--xml", "--out", str(out), "--force")
    assert_one_error(code, err, str(out), "not a regular file")
