"""The link-management daemon against simulated modems: ``farlink linkmgr run`` driving
``farlink linkmgr modem-sim`` over ptys, its SQLite log read as a reader would (sqlite3).

Timers are compressed so each test takes seconds: the modems follow a test scenario whose bundle
dials in 0.3 s and never drops a call by itself (drops are forced through the simulator's
control files, so what the test asserts is never disturbed by a random one), and the daemon
waits 0.3 s after a drop or a failed dial (T_d, T_f), blocks after 2 failed dials in a row and
gives a silent modem 1 s. One test runs the iridium-greenland-8 preset's own drops at
``--time-scale`` 600 (a mean call of 5 s).
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path

import pytest

from support import FARLINK_ARGV, WALL_CLOCK, assert_one_error

pytestmark = WALL_CLOCK

if not sys.platform.startswith("linux"):
    pytest.skip("the link manager runs on Linux (ptys, termios)", allow_module_level=True)

WAIT_S = 30.0
"""The longest wait for any one behaviour (generous: a loaded machine; they take < 2 s)."""

SCENARIO = """
name = "linkmgr-test"
duration = "1h"
seed = 7
nodes = ["air", "ground"]

[[links]]
name = "iridium"
a = "air"
b = "ground"

[links.bundle]
members = 8
rate = "2400bps"
delay = "0.5s"
call_drop_rate_per_s = 0
dial_time = "0.3s"

[[flows]]
from = "air"
to = "ground"
app = { kind = "bulk", size = "1MB" }
"""


def _config(
    tmp: Path,
    modems: int,
    *,
    primary: bool = False,
    role: str = "air",
    t_d: str | None = None,
    handover_reply: str = "2s",
    extra: str = "",
) -> Path:
    members = "".join(
        f'\n[[members]]\nname = "m{k}"\ndevice = "modems/{role}{k}"\n' for k in range(modems)
    )
    # The ground end waits out a drop for less time than the air end, so that it is waiting
    # again when the air end redials.
    t_d = t_d or ("0.1s" if role == "ground" else "0.3s")
    text = f"""role = "{role}"
log = "{role}.sqlite"
primary = {"true" if primary else "false"}
{extra}
{members}
[profile]
signal_interval = "1s"
handover_reply = "{handover_reply}"
signal_timeout = "3s"
command_timeout = "1s"
dial_timeout = "5s"

[timers]
t_d = "{t_d}"
t_f = "0.3s"
max_attempts = 2
blocked_for = "1h"
"""
    path = tmp / f"{role}.toml"
    path.write_text(text)
    return path


def _events(log: Path, kind: str | None = None) -> list[sqlite3.Row]:
    """The log's events (of one kind), read as a reader does while the daemon writes."""
    if not log.exists():
        return []
    with closing(sqlite3.connect(f"file:{log}?mode=ro", uri=True)) as db:
        db.row_factory = sqlite3.Row
        where = "" if kind is None else " WHERE kind = ?"
        try:
            return db.execute(
                f"SELECT * FROM events{where} ORDER BY id", () if kind is None else (kind,)
            ).fetchall()
        except sqlite3.OperationalError:
            return []  # Made, its tables not yet.


def _last_snapshot(log: Path) -> dict:
    with closing(sqlite3.connect(log)) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        row = db.execute("SELECT json FROM snapshots ORDER BY id DESC").fetchone()
    return json.loads(row[0])


class Rig:
    """A modem simulator and a daemon, each a process, and the daemon's log."""

    def __init__(self, tmp: Path, modems: int) -> None:
        self.tmp = tmp
        self.modems = modems
        self.dir = tmp / "modems"
        self.log = tmp / "air.sqlite"
        scenario = tmp / "bundle.toml"
        scenario.write_text(SCENARIO)
        self.procs: list[subprocess.Popen[bytes]] = []
        self.sim = self._start(
            "modem-sim",
            "--modems",
            str(modems),
            "--dir",
            str(self.dir),
            "--preset",
            str(scenario),
            "--signal-reply",
            "0.2",
        )
        _wait(
            lambda: (self.dir / f"ground{modems - 1}").is_symlink() or self.sim.poll() is not None,
            "the simulated modems",
        )
        assert self.sim.poll() is None, "the modem simulator failed (its stderr is above)"
        self.daemon: subprocess.Popen[bytes] | None = None

    def _start(self, *args: str) -> subprocess.Popen[bytes]:
        p = subprocess.Popen(
            [*FARLINK_ARGV, "linkmgr", *args],
            cwd=self.tmp,
            stdout=subprocess.DEVNULL,
        )
        self.procs.append(p)
        return p

    def start_daemon(self, config: Path) -> None:
        self.daemon = self._start("run", str(config))

    def control(self, modem: int, what: str) -> None:
        (self.dir / f"air{modem}.{what}").touch()

    def events(self, kind: str | None = None) -> list[sqlite3.Row]:
        return _events(self.log, kind)

    def states(self, modem: int) -> list[str]:
        return [r["state"] for r in self.events("state") if r["modem"] == modem]

    def stop(self) -> None:
        for p in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[Callable[[int], Rig]]:
    made: list[Rig] = []

    def make(modems: int) -> Rig:
        r = Rig(tmp_path, modems)
        made.append(r)
        return r

    yield make
    for r in made:
        r.stop()


def _wait(done: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not done():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.05)


def _all_connected(r: Rig) -> bool:
    return all(r.states(k)[-1:] == ["connected"] for k in range(r.modems))


def test_every_member_connects_and_a_call_drop_is_noticed_logged_and_redialled(rig):
    r = rig(6)
    r.start_daemon(_config(r.tmp, 6))
    _wait(lambda: _all_connected(r), "every member to connect")
    r.control(2, "drop")
    _wait(
        lambda: r.states(2)[-3:] == ["dropped", "connecting", "connected"],
        "member 2 to drop and come back",
    )
    drops = r.events("drop")
    assert [(d["modem"], d["detail"]) for d in drops] == [(2, "no carrier")]
    # The redial is a new attempt, answered CONNECT.
    dials = [e for e in r.events("dial") if e["modem"] == 2]
    results = [e for e in r.events("dial_result") if e["modem"] == 2]
    assert len(dials) == 2 and dials[1]["value"] > dials[0]["value"]
    assert [(e["value"], e["detail"]) for e in results] == [(1.0, "CONNECT 9600")] * 2
    assert dials[1]["id"] > drops[0]["id"]
    # Signal is polled while a member waits in command mode, never during a call.
    assert all(0 <= s["value"] <= 5 for s in r.events("signal"))
    assert r.daemon is not None
    r.daemon.send_signal(signal.SIGTERM)
    assert r.daemon.wait(timeout=10) == 0
    kinds = [(e["kind"], e["detail"]) for e in r.events("daemon")]
    assert kinds == [("daemon", "start"), ("daemon", "stop")]
    assert not [e for e in r.events("error")], "no errors"


def test_a_modem_answering_garbage_and_one_answering_nothing_are_blocked_alone(rig):
    r = rig(4)
    r.control(1, "garbage")
    r.control(2, "mute")
    r.start_daemon(_config(r.tmp, 4))
    _wait(
        lambda: r.states(1)[-1:] == ["blocked"] and r.states(2)[-1:] == ["blocked"],
        "the two faulty modems to be blocked",
    )
    _wait(lambda: r.states(0)[-1:] == ["connected"] == r.states(3)[-1:], "the others")
    errors = {e["modem"]: e["detail"] for e in r.events("error")}
    assert "garbage" in errors[1] and errors[1].startswith("the modem answered")
    assert errors[2] == "no answer to ATE0V1Q0"
    results = {e["modem"]: e["detail"] for e in r.events("dial_result")}
    assert (results[1], results[2]) == ("ERROR", "timeout")
    for k in (0, 3):
        assert r.states(k) == ["connecting", "connected"], "others unaffected"
    assert not r.events("drop")


def test_a_port_that_disappears_is_a_call_drop_and_its_member_fails_alone(rig):
    r = rig(4)
    r.start_daemon(_config(r.tmp, 4))
    _wait(lambda: _all_connected(r), "every member to connect")
    r.control(1, "unplug")
    _wait(lambda: r.states(1)[-1:] == ["blocked"], "the unplugged member to be blocked")
    drops = r.events("drop")
    assert [(d["modem"], d["detail"]) for d in drops] == [(1, "port gone")]
    errors = [e["detail"] for e in r.events("error") if e["modem"] == 1]
    assert errors[0].startswith("port gone: m1")
    failed = [e["detail"] for e in r.events("dial_result") if e["modem"] == 1 and not e["value"]]
    assert failed == ["port gone", "port gone"]
    for k in (0, 2, 3):
        assert r.states(k) == ["connecting", "connected"], "others unaffected"


def test_signal_is_polled_while_a_member_waits_and_a_late_reply_marks_a_handover(rig):
    # Replies take 0.2 s, 0.35 s in a handover; 0.3 s or later counts as one.
    r = rig(2)
    r.start_daemon(_config(r.tmp, 2, t_d="1h", handover_reply="0.3s"))
    _wait(lambda: _all_connected(r), "every member to connect")
    r.control(1, "drop")

    def samples(handover: bool) -> list[dict]:
        details = [json.loads(e["detail"]) for e in r.events("signal") if e["modem"] == 1]
        return [d for d in details if d["handover"] is handover]

    # Replies come 0.2 s after asking: on an idle machine most are not handovers.
    _wait(lambda: len(samples(False)) >= 2, "member 1's signal, polled while it waits out T_d")
    r.control(1, "handover")
    _wait(lambda: len(samples(True)) >= 1, "a late reply")
    assert all(d["reply_s"] >= 0.3 for d in samples(True))
    assert all(0.2 <= d["reply_s"] < 0.3 for d in samples(False))
    assert not [e for e in r.events("signal") if e["modem"] == 0], "never during a call"


def test_a_ground_daemon_answers_the_calls_and_sees_them_drop(rig):
    r = rig(4)
    r.procs.append(
        subprocess.Popen(
            [*FARLINK_ARGV, "linkmgr", "run", str(_config(r.tmp, 4, role="ground"))],
            cwd=r.tmp,
        )
    )
    ground = Rig.__new__(Rig)
    ground.log, ground.modems = r.tmp / "ground.sqlite", 4
    # The ground end is waiting for calls (its modems answer its signal queries meanwhile)
    # before the air end dials.
    _wait(
        lambda: {e["modem"] for e in ground.events("signal")} == {0, 1, 2, 3},
        "the ground end to wait for calls",
    )
    r.start_daemon(_config(r.tmp, 4))
    _wait(lambda: _all_connected(r) and _all_connected(ground), "both ends to connect")
    r.control(3, "drop")
    _wait(
        lambda: (
            ground.states(3)[-3:] == ["dropped", "connecting", "connected"]
            and r.states(3)[-1:] == ["connected"]
        ),
        "both ends to see the drop and the call come back",
    )
    assert [(d["modem"], d["detail"]) for d in ground.events("drop")] == [(3, "no carrier")]
    # The ground end answers: it never dials out.
    assert not [e for e in ground.events("dial_result") if e["detail"] != "CONNECT 9600"]


def test_a_killed_daemon_resumes_from_its_snapshot_with_the_log_intact(rig):
    r = rig(4)
    config = _config(r.tmp, 4, primary=True)
    r.start_daemon(config)
    _wait(lambda: _all_connected(r), "every member to connect")
    # The primary (member 0) drops: the bundle is torn down; member 1, with no drops, becomes
    # the primary and the bundle comes back.
    r.control(0, "drop")
    _wait(
        lambda: "dropped" in r.states(0) and _all_connected(r),
        "the bundle to come back",
    )
    primaries = [e["modem"] for e in r.events("primary")]
    assert primaries == [0, 1]
    # The secondaries were hung up (+++, ATH) and dialled again without a hitch.
    assert not r.events("error")
    assert {e["modem"] for e in r.events("dial") if e["id"] > r.events("drop")[0]["id"]} == {
        0,
        1,
        2,
        3,
    }
    assert r.daemon is not None
    r.daemon.send_signal(signal.SIGKILL)
    r.daemon.wait(timeout=10)
    before = [tuple(e) for e in r.events()]
    snap = _last_snapshot(r.log)
    assert [m["drops"] for m in snap["modems"]] == [1, 0, 0, 0]
    assert snap["primary"] == 1
    r.start_daemon(config)
    _wait(lambda: len(r.events("daemon")) == 2, "the restarted daemon")
    assert r.events("daemon")[-1]["detail"] == "resume"
    resumed_at = r.events("daemon")[-1]["id"]
    _wait(
        lambda: all(
            [e["state"] for e in r.events("state") if e["modem"] == k and e["id"] > resumed_at][-1:]
            == ["connected"]
            for k in range(4)
        ),
        "every member to connect again",
    )
    # Nothing logged before the kill was lost, and the history that chose the primary held.
    assert [tuple(e) for e in r.events()][: len(before)] == before
    snap = _last_snapshot(r.log)
    assert [m["drops"] for m in snap["modems"]] == [1, 0, 0, 0]
    assert snap["primary"] == 1


def test_the_presets_call_drops_compressed_are_noticed_and_redialled(tmp_path):
    """iridium-greenland-8's β at --time-scale 600: a call lasts 5 s on average, a dial 24 ms."""
    sim = subprocess.Popen(
        [
            *FARLINK_ARGV,
            *("linkmgr", "modem-sim", "--modems", "4", "--dir", str(tmp_path / "modems")),
            *("--time-scale", "600", "--seed", "3", "--signal-reply", "0.2"),
        ],
        stdout=subprocess.DEVNULL,
    )
    config = _config(tmp_path, 4)
    daemon = None
    try:
        _wait(lambda: (tmp_path / "modems" / "ground3").is_symlink(), "the modems")
        daemon = subprocess.Popen([*FARLINK_ARGV, "linkmgr", "run", str(config)], cwd=tmp_path)
        log = tmp_path / "air.sqlite"

        def redialled_drops() -> int:
            pending: set[int] = set()
            count = 0
            for e in _events(log):
                modem, kind, state = e["modem"], e["kind"], e["state"]
                if kind == "drop":
                    pending.add(modem)
                elif state == "connected" and modem in pending:
                    pending.discard(modem)
                    count += 1
            return count

        _wait(lambda: redialled_drops() >= 3, "three call drops noticed and redialled")
    finally:
        for p in (daemon, sim):
            if p is not None:
                p.send_signal(signal.SIGTERM)
                p.wait(timeout=10)
    # The log's readers take the daemon's own log: the drops they count are the ones it wrote.
    done = subprocess.run(
        [*FARLINK_ARGV, "linkmgr", "uptime", str(log), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["drops"] == len(_events(log, "drop")) >= 3
    assert report["dials"] == len(_events(log, "dial"))
    assert 0 < report["all_up_fraction"] <= report["any_up_fraction"] <= 1
    done = subprocess.run(
        [*FARLINK_ARGV, "linkmgr", "log", str(log), "--xml"], capture_output=True, timeout=60
    )
    assert done.returncode == 0 and done.stdout.startswith(b"<?xml")


def test_a_bad_configuration_is_one_placed_line_and_exit_2(tmp_path):
    config = _config(tmp_path, 2).read_text().replace('t_d = "0.3s"', 't_d = "soon"')
    assert "soon" in config
    path = tmp_path / "bad.toml"
    path.write_text(config)
    done = subprocess.run(
        [*FARLINK_ARGV, "linkmgr", "run", str(path)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1
    line_no = next(i for i, t in enumerate(config.splitlines(), 1) if t.startswith("t_d"))
    assert lines[0].startswith(f"farlink: error: {path}:{line_no}: timers.t_d: ")
    done = subprocess.run(
        [*FARLINK_ARGV, "linkmgr", "modem-sim", "--dir", str(tmp_path), "--time-scale", "0.5"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("farlink: error: --time-scale: expected a number of at least 1")
    assert not os.path.exists(tmp_path / "air0")
    for option, value in (("--seed", "-1"), ("--modems", "0"), ("--signal-reply", "nan")):
        done = subprocess.run(
            [*FARLINK_ARGV, "linkmgr", "modem-sim", "--dir", str(tmp_path), option, value],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert (done.returncode, done.stderr.count("\n")) == (2, 1), done.stderr
        assert done.stderr.startswith(f"farlink: error: {option}: expected")
    done = subprocess.run(
        [*FARLINK_ARGV, "linkmgr", "modem-sim", "--dir", str(tmp_path), "--loss", "1.5"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stderr.count("\n")) == (2, 1), done.stderr
    assert done.stderr.startswith("farlink: error: --loss: '1.5' is outside [0, 1)")
    assert not os.path.exists(tmp_path / "air0")
    # A log the daemon cannot open is the configuration's fault too.
    path.write_text(config.replace('t_d = "soon"', 't_d = "1s"').replace('log = "', 'log = "no/'))
    done = subprocess.run(
        [*FARLINK_ARGV, "linkmgr", "run", str(path)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    assert done.stderr.startswith(f"farlink: error: cannot open the event log {tmp_path}/no/")


def _farlink(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*FARLINK_ARGV, *map(str, args)], capture_output=True, text=True, timeout=60
    )


def test_an_operator_holds_a_member_down_and_releases_it(rig):
    r = rig(3)
    config = _config(r.tmp, 3, extra='control = "air.sock"')
    r.start_daemon(config)
    _wait(lambda: _all_connected(r), "every member connected")
    done = _farlink("linkmgr", "hold", config, "m1")
    assert (done.returncode, done.stdout.strip()) == (0, "ok m1 held"), done.stderr
    _wait(lambda: r.states(1)[-1:] == ["idle"], "m1 hung up")
    [hold] = r.events("hold")
    assert (hold["modem"], hold["detail"]) == (1, "operator")
    assert _last_snapshot(r.log)["modems"][1]["held"] is True
    # Held: no redial after T_d (0.3 s), the others untouched.
    dials = len([e for e in r.events("dial") if e["modem"] == 1])
    time.sleep(1.5)
    assert len([e for e in r.events("dial") if e["modem"] == 1]) == dials
    assert r.states(1)[-1] == "idle"
    assert r.states(0)[-1] == r.states(2)[-1] == "connected"
    again = _farlink("linkmgr", "hold", config, "m1")
    assert again.stdout.strip() == "ok m1 already held"
    assert len(r.events("hold")) == 1
    # Released through the socket itself, the member named by its number in the log.
    done = _farlink("linkmgr", "release", r.tmp / "air.sock", "1")
    assert (done.returncode, done.stdout.strip()) == (0, "ok m1 released"), done.stderr
    _wait(lambda: r.states(1)[-1:] == ["connected"], "m1 connected again")
    [release] = r.events("release")
    assert release["modem"] == 1 and release["id"] > hold["id"]
    assert _last_snapshot(r.log)["modems"][1]["held"] is False
    # A second daemon on the same configuration is refused before it touches the log.
    events = len(r.events())
    second = _farlink("linkmgr", "run", config)
    assert (second.returncode, second.stderr.count("\n")) == (2, 1), second.stderr
    assert "a running daemon listens on it" in second.stderr
    assert len(r.events()) == events
    for bad, fragment in (("m9", 'no member "m9"'), ("3", 'no member "3"')):
        done = _farlink("linkmgr", "hold", config, bad)
        assert_one_error(done.returncode, done.stderr, fragment, "m0, m1, m2")
    r.stop()
    assert not (r.tmp / "air.sock").exists()
    done = _farlink("linkmgr", "hold", config, "m1")
    assert_one_error(done.returncode, done.stderr, "air.sock", "is the daemon running")


def test_hold_needs_a_control_socket(tmp_path):
    config = _config(tmp_path, 2)
    done = _farlink("linkmgr", "hold", config, "m0")
    assert_one_error(done.returncode, done.stderr, "no control socket", "control = ")
    done = _farlink("linkmgr", "release", tmp_path / "nothing.toml", "m0")
    assert_one_error(done.returncode, done.stderr, "nothing.toml", "cannot read")
    long = _config(tmp_path, 2, extra=f'control = "{"x" * 120}.sock"')
    done = _farlink("linkmgr", "run", long)
    assert_one_error(done.returncode, done.stderr, "control: expected a socket path")


def test_the_daemon_never_removes_or_writes_beside_a_file_it_did_not_make(tmp_path):
    """Before, `control` naming a file deleted it, and `log = "/dev/null"` made SQLite create
    /dev/null-journal; each is now refused, placed, before anything is opened."""
    notes = tmp_path / "notes.txt"
    notes.write_text("precious\n")
    journal = Path("/dev/null-journal")
    journal_before = journal.exists()
    cases = [
        ('control = "notes.txt"', "control: ", "notes.txt exists and is a regular file"),
        ('control = "."', "control: ", "is a folder, not a socket"),
        (None, "log: ", "/dev/null is a character device, not a regular file"),
        (None, "log: ", "notes.txt exists and is not an SQLite database"),
    ]
    logs = iter(["/dev/null", str(notes)])
    for extra, field, fragment in cases:
        config = _config(tmp_path, 2, extra=extra or "")
        if extra is None:
            text = config.read_text().replace('log = "air.sqlite"', f'log = "{next(logs)}"')
            config.write_text(text)
        done = _farlink("linkmgr", "run", config)
        assert_one_error(done.returncode, done.stderr, f"{config}:", field, fragment)
        assert notes.read_text() == "precious\n"
    assert journal.exists() == journal_before
    assert not (tmp_path / "air.sqlite").exists()


def test_the_modem_simulator_replaces_only_links_it_left(tmp_path):
    """Before, a file named like a modem's link (DIR/air0) was removed to make the link."""
    (tmp_path / "ground1").write_text("precious\n")
    done = _farlink("linkmgr", "modem-sim", "--modems", "2", "--dir", tmp_path)
    assert_one_error(done.returncode, done.stderr, "--dir: ", "ground1 exists and is a regular")
    assert (tmp_path / "ground1").read_text() == "precious\n"
    assert not (tmp_path / "air0").exists(), "nothing is made before every path is checked"


def test_the_daemon_serves_its_dashboard(rig):
    r = rig(2)
    config = _config(r.tmp, 2, extra='[dashboard]\nlisten = "127.0.0.1:0"\n')
    daemon = subprocess.Popen(
        [*FARLINK_ARGV, "linkmgr", "run", str(config)],
        cwd=r.tmp,
        stdout=subprocess.PIPE,
        text=True,
    )
    r.procs.append(daemon)  # type: ignore[arg-type]
    assert daemon.stdout is not None
    with daemon.stdout:
        line = daemon.stdout.readline().strip()
    assert line.startswith("dashboard at http://127.0.0.1:"), line
    url = line.split(" at ")[1]
    _wait(lambda: _all_connected(r), "every member connected")

    def state() -> dict:
        with urllib.request.urlopen(url + "api/state", timeout=10) as resp:
            return json.loads(resp.read())

    _wait(lambda: sum(m["state"] == "connected" for m in state()["members"]) == 2, "the page")
    with urllib.request.urlopen(url + "metrics", timeout=10) as resp:
        assert "farlink_bundle_members_up 2" in resp.read().decode()
    daemon.send_signal(signal.SIGTERM)
    assert daemon.wait(timeout=30) == 0
    assert r.events("daemon")[-1]["detail"] == "stop"


def test_a_dashboard_off_loopback_without_a_token_is_refused(tmp_path):
    config = _config(tmp_path, 2, extra='[dashboard]\nlisten = "0.0.0.0:8750"\n')
    done = _farlink("linkmgr", "run", config)
    assert_one_error(
        done.returncode, done.stderr, "dashboard.listen: 0.0.0.0", "needs dashboard.token"
    )
    assert not (tmp_path / "air.sqlite").exists()
