"""The documented commands that tests/test_docs_run.py skips, each run as a short variant.

test_docs_run runs every fenced block of README.md and docs/*.md from a fresh folder, but not
the blocks marked ``<!-- docs-run: slow: ... -->`` or ``<!-- docs-run: not run: ... -->`` (root,
a daemon, a minute or more, a synopsis), and that is where users met failures: ``farlink linkmgr
demo`` failed from any folder with its default relative ``--dir`` while every test passed it an
absolute one. Here every command of such a block (a block of ``farlink`` lines) is run as a
**short variant**: the documented argument list with the fewest edits that make it short or
safe (a shorter run or file, one seed, two modems and a faster clock, loopback instead of
``0.0.0.0``, a private folder instead of ``/tmp/modems``), from a fresh working folder holding
what the documents name (test_docs_run's fixtures), with the documents' relative paths and the
default output folders; as root where the machine allows (namespaces and TUN, else skipped with
the reason). Each asserts exit status 0 and the key figures of its result, and prints the
command it ran, its time and those figures (``pytest -s``).

A command of a skipped block without a variant here fails
:func:`test_every_skipped_command_has_a_short_variant`, naming the block and the command; a
synopsis line (``LOG``, ``FILE``, ``--csv|--xml``) is given the commands that stand for it,
with the fixtures' files in place of the placeholders.
"""

from __future__ import annotations

import contextlib
import csv
import ctypes
import json
import os
import re
import shlex
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
import tomllib
import urllib.error
import urllib.request
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import test_docs_run as docs_run
from support import clock_marks, needs_namespaces

BIN = Path(sys.executable).parent
FOLDER = "@FOLDER@"
"""Stands for the test's working folder in an edit (replaced when the command is run)."""
COMMAND_TIMEOUT_S = 120.0
UP_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 30.0
PR_SET_PDEATHSIG = 1
IRIDIUM_MEMBER_RATE_BPS = 2400
DEMO_SIZE_BYTES = 2000
PCAP_MAGICS = (b"\xd4\xc3\xb2\xa1", b"\xa1\xb2\xc3\xd4", b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d")


# --- running a command ------------------------------------------------------------------------


def _child() -> None:
    """Before exec: die with the test process, and take Ctrl-C (SIGINT) as a terminal's
    process does even where the test runs with SIGINT ignored (a shell's background job)."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _env() -> dict[str, str]:
    # Unbuffered: a background command's "ready" line is read from its output file as printed.
    return {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONUNBUFFERED": "1",
    }


@dataclass
class Ran:
    """A finished command: where it ran, its status, output and wall time."""

    argv: list[str]
    cwd: Path
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    def json(self) -> Any:
        return json.loads(self.stdout)

    def read_json(self, relative: str) -> Any:
        path = self.cwd / relative
        assert path.is_file(), f"{relative} was not written (relative to the working folder)"
        return json.loads(path.read_text())


class Proc:
    """A command started in the background, its stdout and stderr in files."""

    def __init__(self, argv: list[str], cwd: Path, logs: Path, stdin: str | None) -> None:
        logs.mkdir(parents=True, exist_ok=True)
        n = len(list(logs.glob("*.out")))
        self.argv, self.cwd = argv, cwd
        self.out_path, self.err_path = logs / f"{n}.out", logs / f"{n}.err"
        with open(self.out_path, "wb") as out, open(self.err_path, "wb") as err:
            self.p = subprocess.Popen(
                argv,
                cwd=cwd,
                env=_env(),
                stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
                stdout=out,
                stderr=err,
                preexec_fn=_child,
            )
        self.started = time.monotonic()
        if stdin is not None:
            assert self.p.stdin is not None
            self.p.stdin.write(stdin.encode())
            self.p.stdin.close()

    @property
    def stdout(self) -> str:
        return self.out_path.read_text(errors="replace")

    @property
    def stderr(self) -> str:
        return self.err_path.read_text(errors="replace")

    def says(self, text: str) -> bool:
        return text in self.stdout or text in self.stderr

    def wait_up(self, up: Callable[[Proc], bool], timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while not up(self):
            assert self.p.poll() is None, (
                f"{shlex.join(self.argv)} exited {self.p.returncode} before it was up:\n"
                f"{self.stdout[-1500:]}\n{self.stderr[-2500:]}"
            )
            assert time.monotonic() < deadline, (
                f"{shlex.join(self.argv)} not up after {timeout_s:.0f} s:\n{self.stderr[-2500:]}"
            )
            time.sleep(0.1)

    def finish(self, timeout_s: float, sig: int | None = None) -> Ran:
        """Its end (after ``sig``, if given): a command still running at ``timeout_s`` is
        killed and fails the test."""
        if sig is not None and self.p.poll() is None:
            self.p.send_signal(sig)
        try:
            self.p.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail(f"{shlex.join(self.argv)} still running after {timeout_s:.0f} s: killed")
        return Ran(
            self.argv,
            self.cwd,
            self.p.returncode,
            self.stdout,
            self.stderr,
            time.monotonic() - self.started,
        )

    def kill(self) -> None:
        """SIGTERM (the demo and the emulator remove their namespaces on it), then SIGKILL."""
        if self.p.poll() is None:
            self.p.terminate()
            try:
                self.p.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()


# --- the variants -----------------------------------------------------------------------------

Edit = Callable[[list[str]], list[str]]


def option(name: str, value: str) -> Edit:
    """``name value``: the option's value replaced, or the option added."""

    def edit(argv: list[str]) -> list[str]:
        if name in argv:
            i = argv.index(name)
            return [*argv[: i + 1], value, *argv[i + 2 :]]
        return [*argv, name, value]

    return edit


def flag(name: str) -> Edit:
    return lambda argv: [*argv, name]


def swap(old: str, new: str) -> Edit:
    return lambda argv: [a.replace(old, new) for a in argv]


@dataclass(frozen=True)
class Variant:
    """How one documented command is run short, and what its run must show.

    ``check`` asserts the result's key figures and returns them (printed). ``expand`` stands
    in for a synopsis line: the commands that cover it, placeholders filled. A command with
    ``up`` runs in the background until ``up`` holds; a ``service`` then stays up under the
    commands after it and is stopped (``stop``) once they are done, any other has ``while_up``
    done to it and is stopped at once. ``alone`` variants run side by side, each in a fresh
    folder of its own. ``files`` writes what the command names into the folder first.
    """

    why: str
    edits: tuple[Edit, ...] = ()
    check: Callable[[Ran], dict[str, Any]] | None = None
    expand: tuple[str, ...] = ()
    stdin: str | None = None
    up: Callable[[Proc], bool] | None = None
    while_up: Callable[[Proc], dict[str, Any]] | None = None
    stop: int = signal.SIGINT
    service: bool = False
    in_namespace: bool = False
    root: bool = False
    alone: bool = False
    needs: str | None = None
    files: Callable[[Path], None] | None = None
    timeout_s: float = COMMAND_TIMEOUT_S

    def argvs(self, documented: list[str], folder: Path) -> list[list[str]]:
        if self.expand:
            runs = [shlex.split(line) for line in self.expand]
        else:
            argv = list(documented)
            for edit in self.edits:
                argv = edit(argv)
            runs = [argv]
        return [[a.replace(FOLDER, str(folder)) for a in argv] for argv in runs]


# --- checks -----------------------------------------------------------------------------------


def _figures(d: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: d.get(k) for k in keys}


def _table_value(text: str, field: str) -> str:
    """A value of a rich two-column table as farlink prints it (``│ field │ value │``)."""
    m = re.search(rf"│\s*{re.escape(field)}\s*│\s*(\S+)", text)
    assert m, f"no row {field!r} in:\n{text[-2000:]}"
    return m[1]


def presets_listed(ran: Ran) -> dict[str, Any]:
    names = {line.split()[0] for line in ran.stdout.splitlines() if line.strip()}
    named = {"iridium-3", "iridium-4", "iridium-greenland-8", "stpd-wireless", "stpd-telnet",
             "stpd-wired", "is707", "marchese-geo-stp"}  # fmt: skip
    assert named <= names, f"presets the documents name are missing: {named - names}"
    return {"presets": len(names)}


def iridium_3_shown(ran: Ran) -> dict[str, Any]:
    rate_bps = int(_table_value(ran.stdout, "links[0].fwd.rate_bps"))
    assert rate_bps == 3 * IRIDIUM_MEMBER_RATE_BPS, "three Iridium modems of 2400 bit/s"
    return {"links[0].fwd.rate_bps": rate_bps}


def stpd_wireless_checked(ran: Ran) -> dict[str, Any]:
    m = re.search(r"^stpd-wireless: ok \((\d+) nodes, (\d+) links, (\d+) flow", ran.stdout, re.M)
    assert m, ran.stdout
    assert (int(m[1]), int(m[2]), int(m[3])) == (3, 2, 1)
    return {"nodes": 3, "links": 2, "flows": 1}


def lossy_sack(ran: Ran) -> dict[str, Any]:
    d = ran.json()
    assert d["engine"] == "sim" and d["scenario"] == "stpd-wireless"
    assert 0 < d["normalized_goodput"] < 1
    assert d["retransmissions"] > 0, "1 % loss makes retransmissions"
    return _figures(d, "normalized_goodput", "goodput_bps", "retransmissions", "timeouts")


def greenland_two_hours(ran: Ran) -> dict[str, Any]:
    d = ran.read_json("farlink-out/sim/iridium-greenland-8/summary.json")
    assert d["sim_time_s"] == pytest.approx(7200)
    assert d["delivered_bytes"] > 0
    assert d["drops"]["call_drop"] > 0, "two hours of eight modems dropping every 50 min"
    figures = _figures(d, "sim_time_s", "delivered_bytes", "goodput_bps")
    return {**figures, "call_drops": d["drops"]["call_drop"]}


def telnet_beside_ftp(ran: Ran) -> dict[str, Any]:
    d = ran.read_json("farlink-out/sim/stpd-telnet/summary.json")
    flows = {f["name"]: f for f in d["flows"]}
    assert set(flows) == {"ftp", "telnet"}
    assert all(f["delivered_bytes"] > 0 for f in flows.values())
    assert "telnet" in ran.stdout, "the per-interval table names each flow"
    return {f"{name}_goodput_bps": f["goodput_bps"] for name, f in flows.items()}


def cubic_longer_queue(ran: Ran) -> dict[str, Any]:
    d = ran.read_json("run1/summary.json")
    queue = {link["name"]: link["fwd"]["max_queue_pkts"] for link in d["links"]}
    # The preset's 14-packet buffer at R would cap the queue at 14: the --set took.
    assert 14 < queue["R-D"] <= 60, queue
    for tap in ("S-R", "R-D"):
        pcap = ran.cwd / "run1" / f"{tap}.pcap"
        assert pcap.read_bytes()[:4] in PCAP_MAGICS, f"{pcap} is not a pcap"
    return {"max_queue_pkts R-D": queue["R-D"], **_figures(d, "goodput_bps")}


def is707_run(ran: Ran) -> dict[str, Any]:
    d = ran.read_json("farlink-out/sim/is707/summary.json")
    assert d["delivered_bytes"] > 0
    return _figures(d, "delivered_bytes", "goodput_bps", "retransmissions")


def split_geo(ran: Ran) -> dict[str, Any]:
    d = ran.json()
    assert d["all_finished"], "the 2.8 MB transfer finishes"
    assert d["delivered_bytes"] == 2_800_100, "the preset's file"
    assert d["transfer_time_s"] > 0
    return _figures(d, "delivered_bytes", "transfer_time_s", "goodput_bps")


def estimate_refused(ran: Ran) -> dict[str, Any]:
    events = float(_table_value(ran.stdout, "events"))
    within = _table_value(ran.stdout, "within_budget")
    # 1e6 s of the wired path is over the budget of 1e9 events, as the comment beside it says.
    assert events > 1e9 and within == "False", (events, within)
    return {"events": events, "within_budget": within}


def sweep_ran(folder: str, runs: int) -> Callable[[Ran], dict[str, Any]]:
    def check(ran: Ran) -> dict[str, Any]:
        points = sorted((ran.cwd / folder / "points").glob("*.parquet"))
        assert len(points) == runs, f"{len(points)} run files in {folder}, expected {runs}"
        assert re.search(r"│\s*failed\s*│\s*0\s*│", ran.stdout), ran.stdout
        return {"runs": len(points), "out": folder}

    return check


def summary_rows(points: int) -> Callable[[Ran], dict[str, Any]]:
    def check(ran: Ran) -> dict[str, Any]:
        d = ran.json()
        assert len(d["points"]) == points, f"{len(d['points'])} rows, expected {points}"
        assert all(p["runs"] == 1 and p["failed"] == 0 for p in d["points"])
        assert d["failures"] == []
        goodputs = [p["metrics"]["normalized_goodput"]["mean"] for p in d["points"]]
        assert all(0 < g <= 1 for g in goodputs), goodputs
        return {"rows": len(d["points"]), "axes": d["axes"]}

    return check


def query_rows(ran: Ran) -> dict[str, Any]:
    rows = ran.json()
    assert len(rows) == 2 * 3, "one row per controller and loss rate"
    for row in rows:
        assert 0 < row["avg(normalized_goodput)"] <= 1, row
        assert 0 < row["avg(model_normalized_goodput)"] <= 1, row
    return {"rows": len(rows)}


def capture_named(folder: Path) -> None:
    """The synopsis's ``capture.pcap``: test_docs_run's capture of ``stpd-wireless`` at R-D."""
    shutil.copy(folder / "trace.pcap", folder / "capture.pcap")


def fitted_linux_profile(ran: Ran) -> dict[str, Any]:
    doc = tomllib.loads((ran.cwd / "fitted.toml").read_text())
    link, tcp = doc["links"][0], doc["flows"][0]["tcp"]
    # The capture is of stpd-wireless, whose bottleneck (R-D) is 1.5 Mbit/s.
    assert link["rate_bps"] == pytest.approx(1.5e6, rel=0.1)
    assert link["delay_s"] > 0 and doc["extra"]["fit"]["rtt_median_s"] > 0
    assert (tcp["profile"], tcp["cc"]) == ("linux", "cubic"), tcp
    return {"rate_bps": link["rate_bps"], "rtt_median_s": doc["extra"]["fit"]["rtt_median_s"]}


def linux_profile_simulated(ran: Ran) -> dict[str, Any]:
    d = ran.read_json("farlink-out/sim/stpd-wireless/summary.json")
    assert 0 < d["normalized_goodput"] < 1
    assert d["retransmissions"] > 0, "1 % loss makes retransmissions"
    return _figures(d, "normalized_goodput", "retransmissions", "timeouts")


def iridium_hour_captured(ran: Ran) -> dict[str, Any]:
    d = ran.read_json("ird/summary.json")
    assert d["sim_time_s"] == pytest.approx(3600)
    assert (ran.cwd / "ird" / "iridium.pcap").read_bytes()[:4] in PCAP_MAGICS
    return _figures(d, "delivered_bytes", "retransmissions")


def iridium_fitted(ran: Ran) -> dict[str, Any]:
    d = ran.json()
    assert d["rate_bps"] > 0 and d["rtt_s"]["median"] > 0 and d["rtt_s"]["min"] > 0
    assert 0 < d["loss_rate"] <= d["loss_rate_upper_bound"], "call drops lose segments"
    # Eight 2,400 bit/s members: their sum, from trains of deliveries (captures.md).
    assert abs(d["rate_bps"] / (8 * 2400) - 1) < 0.1 and d["bottleneck_rate_train"] > 1, d
    figures = _figures(d, "rate_bps", "loss_rate", "needed_retransmissions", "retransmissions")
    return {**figures, "rtt_median_s": d["rtt_s"]["median"], "rate_basis": d["rate_basis"]}


def emulated_with_captures(ran: Ran) -> dict[str, Any]:
    d = ran.read_json("e0/summary.json")
    _emulator_cleaned(d)
    assert d["delivered_bytes"] == 1_000_000
    for tap in ("S", "D"):
        assert (ran.cwd / "e0" / f"{tap}.pcap").read_bytes()[:4] in PCAP_MAGICS, tap
    return _figures(d, "delivered_bytes", "transfer_time_s")


def tap_placed(where: str) -> Callable[[Ran], dict[str, Any]]:
    def check(ran: Ran) -> dict[str, Any]:
        d = ran.json()
        # stpd-wireless: 80 ms one way on R-D, 0.1 ms on S-R; the last hop's turn-around (a
        # fraction of a millisecond) is never presented as the path's delay.
        assert d["tap_location"] == where
        assert 0.079 < d["delay_s"] < 0.09, d["delay_s"]
        return _figures(d, "tap_location", "delay_s", "rate_bps")

    return check


def _emulator_cleaned(d: dict[str, Any]) -> None:
    """The emulator removed the namespaces of its run (``farlink-<run>-<node>``)."""
    prefix = f"farlink-{d['emulator']['run_id']}-"
    left = [p.name for p in Path("/run/netns").glob(f"{prefix}*")]
    assert not left, f"the emulator left its namespaces: {left}"


def _command_ok(d: dict[str, Any]) -> dict[str, Any]:
    _emulator_cleaned(d)
    command = d["command"]
    assert (command["exit_status"], command["ended_by"]) == (0, "exit"), command
    return command


def program_to_the_sink(ran: Ran) -> dict[str, Any]:
    d = ran.read_json("farlink-out/emulate/stpd-wireless/summary.json")
    _command_ok(d)
    assert d["delivered_bytes"] == 200_000, "the sink counts what the program wrote"
    return _figures(d, "delivered_bytes", "goodput_bps")


def server_answered(ran: Ran) -> dict[str, Any]:
    d = ran.read_json("farlink-out/emulate/stpd-wireless/summary.json")
    command = _command_ok(d)
    assert command["server"].startswith("python3 -m http.server")
    assert '"GET / HTTP/1.1" 200' in ran.stderr, "the server logs the client's request"
    return {"server_log": "GET / 200", "exit_status": command["exit_status"]}


def iperf3_measured(ran: Ran) -> dict[str, Any]:
    d = ran.read_json("farlink-out/emulate/stpd-wireless/summary.json")
    command = _command_ok(d)
    assert command["server"] == "iperf3 -s"
    received = re.findall(r"([\d.]+) ([KM])bits/sec\s+receiver", ran.stdout)
    assert received, "iperf3 prints what its server received"
    value, unit = received[-1]
    iperf3_bps = float(value) * (1e3 if unit == "K" else 1e6)
    # farlink's goodput is the program's own: within 10 % of iperf3's (tests/test_emulate_programs
    # holds the 10 s run to 5 %; three seconds leave the set-up's round trips a larger share).
    assert d["goodput_bps"] == pytest.approx(iperf3_bps, rel=0.10), (d["goodput_bps"], iperf3_bps)
    return {"goodput_bps": d["goodput_bps"], "iperf3_receiver_bps": iperf3_bps}


#: iridium-4's members twenty times faster and nearer, its bundle's timers as much shorter.
FASTER_IRIDIUM_4 = [
    a
    for key, value in [
        ("rate", '"48000bps"'),
        ("delay", '"0.025s"'),
        ("detection_delay", '"1.5s"'),
        ("dial_time", '"0.725s"'),
    ]
    for a in ("--set", f"links[0].bundle.{key}={value}")
]


def mptcp_emulated(ran: Ran) -> dict[str, Any]:
    d = ran.read_json("farlink-out/emulate/iridium-4/summary.json")
    (flow,) = d["flows"]
    _emulator_cleaned(d)
    assert flow["verified"] is True and flow["delivered_bytes"] == 20_000, flow
    subflows = flow["subflows"]
    assert [s["route"] for s in subflows] == [f"iridium/member{k}" for k in range(4)], subflows
    assert sum(s["bytes"] for s in subflows) >= 20_000, subflows
    return {"transfer_time_s": flow["transfer_time_s"], "bytes": [s["bytes"] for s in subflows]}


def bonding_emulated(ran: Ran) -> dict[str, Any]:
    d = ran.read_json("farlink-out/compare-bonding/iridium-4/bonding.json")
    assert d["emulate"].startswith("run:"), d["emulate"]
    times = {}
    for bonding in ("mlppp", "mptcp"):
        (run,) = d[bonding]["emulate"]["runs"]
        assert run["finished"] and run["verified"], run
        times[bonding] = run["transfer_time_s"]
    assert "mptcp emulate" in ran.stdout
    return times


def shell_exited(ran: Ran) -> dict[str, Any]:
    d = ran.read_json("farlink-out/emulate/iridium-4/summary.json")
    command = _command_ok(d)
    assert command["argv"] == [os.environ.get("SHELL") or "/bin/sh"], command
    assert command["congestion"].startswith("reno"), command
    return {"argv": command["argv"], "congestion": command["congestion"]}


def emulated(sender: str, size_bytes: int) -> Callable[[Ran], dict[str, Any]]:
    def check(ran: Ran) -> dict[str, Any]:
        d = ran.read_json("farlink-out/emulate/stpd-wireless/summary.json")
        flow = d["flows"][0]
        _emulator_cleaned(d)
        assert d["delivered_bytes"] == size_bytes
        assert (flow["sender"], flow["verified"]) == (sender, True), flow
        figures = _figures(d, "delivered_bytes", "transfer_time_s", "goodput_bps")
        return {**figures, "sender": sender}

    return check


# The link manager ----------------------------------------------------------------------------


def _log_rows(log: Path, sql: str) -> list[tuple[Any, ...]]:
    with contextlib.closing(sqlite3.connect(f"file:{log}?mode=ro", uri=True)) as db:
        return db.execute(sql).fetchall()


def modems_up(proc: Proc) -> bool:
    return "ground7" in proc.stdout


def modems_removed(ran: Ran) -> dict[str, Any]:
    links = list((ran.cwd / "modems").glob("*[0-9]"))
    assert not links, f"modem-sim left its links: {links}"
    return {"modem pairs": 8}


def daemon_config(folder: Path) -> None:
    """``air.toml``: linkmgr.md's configuration, its members on the simulated modems of the
    folder's ``modems`` (the first on ``air0`` where the documents have a real serial port)
    and its dashboard on a free port."""
    [block] = [
        b
        for b in docs_run.blocks()
        if b.document.name == "linkmgr.md" and b.language == "toml" and "role = " in b.body
    ]
    text = (
        block.body.replace("/dev/ttyUSB0", f"{folder}/modems/air0")
        .replace("/tmp/modems", f"{folder}/modems")
        .replace("127.0.0.1:8750", "127.0.0.1:0")
    )
    (folder / "air.toml").write_text(text)


def daemon_up(proc: Proc) -> bool:
    return proc.says("dashboard at http://127.0.0.1:") and (proc.cwd / "air.sock").exists()


def daemon_stopped(ran: Ran) -> dict[str, Any]:
    log = ran.cwd / "air-events.sqlite"
    events = _log_rows(log, "SELECT kind, modem, detail FROM events ORDER BY id")
    assert events[-1][0] == "daemon" and events[-1][2] == "stop", events[-3:]
    operator = [(kind, modem) for kind, modem, detail in events if detail == "operator"]
    assert operator == [("hold", 1), ("release", 1)], operator
    dials = sum(kind == "dial" for kind, _, _ in events)
    assert dials > 0
    assert not (ran.cwd / "air.sock").exists(), "the daemon removes its socket"
    return {"events": len(events), "dials": dials, "operator": operator}


def said_as_documented(expected: str) -> Callable[[Ran], dict[str, Any]]:
    def check(ran: Ran) -> dict[str, Any]:
        assert ran.stdout.strip() == expected, ran.stdout
        return {"stdout": expected}

    return check


def _namespaces_gone(ran: Ran) -> list[str]:
    m = re.search(r"namespaces (\S+) and (\S+);", ran.stdout + ran.stderr)
    assert m, "the demo names its namespaces"
    names = [m[1], m[2]]
    left = [n for n in names if (Path("/run/netns") / n).exists()]
    assert not left, f"the demo left its namespaces: {left}"
    return names


def _default_dir_log(ran: Ran) -> Path:
    log = ran.cwd / "farlink-out" / "linkmgr-demo" / "air.sqlite"
    assert log.is_file(), "the air log in the default --dir, relative to the working folder"
    return log


def demo_text(ran: Ran) -> dict[str, Any]:
    m = re.search(r"transfer done: (\d+) bytes, verified (\w+)", ran.stdout)
    assert m, ran.stdout
    assert (int(m[1]), m[2]) == (DEMO_SIZE_BYTES, "True")
    assert "bytes verified: True" in ran.stdout
    _default_dir_log(ran)
    seconds = re.search(r"demo \(kernel TCP, the daemons\)\s+([\d.]+) s", ran.stdout)
    assert seconds and float(seconds[1]) > 0, ran.stdout
    return {
        "bytes": int(m[1]),
        "verified": True,
        "transfer_time_s": float(seconds[1]),
        "namespaces removed": _namespaces_gone(ran),
    }


def demo_json(ran: Ran) -> dict[str, Any]:
    d = ran.json()
    assert (d["verified"], d["bytes"], d["size_bytes"]) == (True, DEMO_SIZE_BYTES, DEMO_SIZE_BYTES)
    assert d["transfer_time_s"] > 0 and d["model_transfer_time_s"] > 0
    assert d["sim_transfer_time_s"] > 0 and d["against_sim"] in ("below", "within", "above")
    assert Path(d["log"]) == _default_dir_log(ran).resolve()
    _namespaces_gone(ran)
    figures = ("bytes", "verified", "transfer_time_s", "sim_transfer_time_s", "against_sim")
    return _figures(d, *figures, "model_transfer_time_s")


def _dashboard_url(proc: Proc) -> str:
    m = re.search(r"dashboard at (http://127\.0\.0\.1:\d+/)", proc.stdout + proc.stderr)
    assert m, proc.stdout
    return m[1]


def _state(url: str) -> tuple[int, Any]:
    """The dashboard's answer, straight to loopback (no proxy from the environment)."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        err.close()
        return err.code, None


def dashboard_with_token(members: int) -> Callable[[Proc], dict[str, Any]]:
    def while_up(proc: Proc) -> dict[str, Any]:
        url = _dashboard_url(proc) + "api/state"
        assert _state(url)[0] == 401, "without the token"
        status, state = _state(url + "?token=SECRET")
        assert status == 200 and len(state["members"]) == members, state
        return {"api/state members": members, "without token": 401}

    return while_up


def demo_kept(ran: Ran) -> dict[str, Any]:
    figures = demo_text(ran)
    return {k: figures[k] for k in ("bytes", "verified", "namespaces removed")}


def dashboard_stopped(ran: Ran) -> dict[str, Any]:
    return {"exit": ran.returncode}


def uptime_read(ran: Ran) -> dict[str, Any]:
    d = ran.json()
    assert 0 < d["all_up_fraction"] <= d["any_up_fraction"] <= 1
    assert d["events"] == _log_rows(ran.cwd / "events.sqlite", "SELECT count(*) FROM events")[0][0]
    return _figures(d, "events", "all_up_fraction", "any_up_fraction", "drops")


def log_exported(ran: Ran) -> dict[str, Any]:
    events = _log_rows(ran.cwd / "events.sqlite", "SELECT count(*) FROM events")[0][0]
    if "--csv" in ran.argv:
        with open(ran.cwd / "events.csv", newline="") as f:
            rows = list(csv.DictReader(f))
        assert len(rows) == events, "one row per event"
        return {"csv rows": len(rows)}
    root = ET.parse(ran.cwd / "events.xml").getroot()
    connections = root.findall("connection")
    assert root.tag == "connection_database" and connections
    return {"xml connections": len(connections)}


def drops_fitted(ran: Ran) -> dict[str, Any]:
    d = ran.json()
    drops = _log_rows(ran.cwd / "events.sqlite", "SELECT count(*) FROM events WHERE kind='drop'")
    assert d["drops"] == drops[0][0]
    assert 0 < d["ci_low_per_s"] <= d["beta_per_s"] <= d["ci_high_per_s"]
    return _figures(d, "drops", "beta_per_s", "verdict")


def dashboard_up(proc: Proc) -> bool:
    return proc.says("dashboard at http://")


# --- the documented commands and their variants -------------------------------------------------

SHORT_SWEEP = (option("--seeds", "1"), option("--duration", "10s"))
DEMO_SHORT = (
    option("--modems", "2"),
    option("--size", "2kB"),
    option("--time-scale", "10"),
    option("--listen", "127.0.0.1:0"),
)
AS_DOCUMENTED = "as documented: it is short"
CURL = "curl -s -o /dev/null http://$FARLINK_PEER:$FARLINK_PORT/"
URLLIB = (
    "python3 -c 'import os, urllib.request as u; u.build_opener(u.ProxyHandler({})).open("
    '"http://%s:%s/" % (os.environ["FARLINK_PEER"], os.environ["FARLINK_PORT"])).read()\''
)
CURL_OR_URLLIB = () if shutil.which("curl") else (swap(CURL, URLLIB),)

VARIANTS: dict[tuple[str, str], Variant] = {
    # README.md
    ("README.md", "farlink presets"): Variant(AS_DOCUMENTED, check=presets_listed),
    ("README.md", "farlink scenario show iridium-3"): Variant(AS_DOCUMENTED, check=iridium_3_shown),
    ("README.md", "farlink scenario check stpd-wireless"): Variant(
        AS_DOCUMENTED, check=stpd_wireless_checked
    ),
    ("README.md", "farlink simulate stpd-wireless --tcp sack --loss 0.01 --json"): Variant(
        AS_DOCUMENTED, check=lossy_sack
    ),
    ("README.md", "farlink simulate iridium-greenland-8 --duration 2h"): Variant(
        "as documented: two simulated hours take about two seconds", check=greenland_two_hours
    ),
    ("README.md", "farlink simulate stpd-telnet --interval 1s"): Variant(
        AS_DOCUMENTED, check=telnet_beside_ftp
    ),
    (
        "README.md",
        "farlink simulate stpd-wireless --tcp cubic --set links[1].queue_pkts=60 --pcap --out run1",
    ): Variant(AS_DOCUMENTED, check=cubic_longer_queue),
    ("README.md", "farlink simulate stpd-wireless --tcp cubic --profile linux --loss 0.01"): (
        Variant(AS_DOCUMENTED, check=linux_profile_simulated)
    ),
    (
        "README.md",
        "farlink simulate is707 --set links[1].rlp.pe=0.3 --set links[1].rlp.idle_frames=5",
    ): Variant(AS_DOCUMENTED, check=is707_run),
    ("README.md", "farlink simulate marchese-geo-stp --json"): Variant(
        AS_DOCUMENTED, check=split_geo
    ),
    ("README.md", "farlink simulate stpd-wired --duration 1e6s --estimate"): Variant(
        AS_DOCUMENTED, check=estimate_refused
    ),
    (
        "README.md",
        "farlink sweep stpd-wireless --grid loss=0.001,0.01,0.1 --grid tcp=reno,cubic,stpd "
        "--seeds 5",
    ): Variant(
        "one seed of 10 s per point: 9 runs, not 45 of the preset's length",
        edits=SHORT_SWEEP,
        check=sweep_ran("farlink-out/sweep/stpd-wireless", 9),
    ),
    ("README.md", "farlink results summary farlink-out/sweep/stpd-wireless"): Variant(
        "--json: the rows as data", edits=(flag("--json"),), check=summary_rows(9)
    ),
    # captures.md
    ("captures.md", "farlink fit capture.pcap --tcp cubic --profile linux --out fitted.toml"): (
        Variant(
            "as documented, capture.pcap a capture of stpd-wireless",
            files=capture_named,
            check=fitted_linux_profile,
        )
    ),
    (
        "captures.md",
        "farlink simulate iridium-greenland-8 --duration 1h --set "
        "'flows[0].app={kind=\"unbounded\"}' --set 'pcap=[\"iridium\"]' --set 'trace={}' "
        "--pcap --out ird",
    ): Variant("as documented: a simulated hour takes about a second", check=iridium_hour_captured),
    ("captures.md", "farlink emulate stpd-wireless --loss 0 --size 1MB --pcap --out e0"): Variant(
        AS_DOCUMENTED, root=True, check=emulated_with_captures
    ),
    ("captures.md", "farlink fit e0/D.pcap --json"): Variant(
        AS_DOCUMENTED, check=tap_placed("receiver")
    ),
    ("captures.md", "farlink fit e0/S.pcap --json"): Variant(
        AS_DOCUMENTED, check=tap_placed("sender")
    ),
    ("captures.md", "farlink fit ird/iridium.pcap --json"): Variant(
        AS_DOCUMENTED, check=iridium_fitted
    ),
    # emulator.md
    (
        "emulator.md",
        "farlink emulate stpd-wireless -- bash -c "
        "'head -c 200000 /dev/zero > /dev/tcp/$FARLINK_PEER/$FARLINK_PORT'",
    ): Variant(AS_DOCUMENTED, root=True, check=program_to_the_sink),
    (
        "emulator.md",
        f"farlink emulate stpd-wireless --server 'python3 -m http.server 8000' -- sh -c '{CURL}'",
    ): Variant(
        "as documented (curl, or python3's urllib where curl is missing)",
        edits=CURL_OR_URLLIB,
        root=True,
        check=server_answered,
    ),
    (
        "emulator.md",
        "farlink emulate stpd-wireless --server 'iperf3 -s' -- sh -c "
        "'iperf3 -c $FARLINK_PEER -p $FARLINK_PORT -t 10'",
    ): Variant(
        "three seconds of iperf3, not ten",
        edits=(swap("-t 10", "-t 3"),),
        root=True,
        check=iperf3_measured,
    ),
    # multipath.md: the kernel's Multipath TCP over iridium-4's members, sped up twenty times
    (
        "multipath.md",
        "farlink emulate iridium-4 --transport mptcp --tcp cubic --size 100KB "
        "--set 'links[0].bundle.call_drop_rate=\"0/1h\"'",
    ): Variant(
        "20 KB over members twenty times faster and nearer (48 kbit/s, 25 ms), seed 2",
        edits=(swap("100KB", "20KB"), lambda argv: [*argv, *FASTER_IRIDIUM_4, "--seed", "2"]),
        root=True,
        check=mptcp_emulated,
    ),
    (
        "multipath.md",
        "farlink compare-bonding iridium-4 --size 100KB --seeds 1 --emulate --tcp cubic",
    ): Variant(
        "20 KB over members twenty times faster and nearer (48 kbit/s, 25 ms), seed 2",
        edits=(swap("100KB", "20KB"), lambda argv: [*argv, *FASTER_IRIDIUM_4, "--set", "seed=2"]),
        root=True,
        check=bonding_emulated,
    ),
    ("emulator.md", "farlink emulate iridium-4 --tcp reno --shell"): Variant(
        "the shell is fed `exit` on its standard input",
        stdin="exit\n",
        root=True,
        check=shell_exited,
    ),
    # linkmgr.md: the daemon on simulated modems, an operator's hold and release
    (
        "linkmgr.md",
        "farlink linkmgr modem-sim --modems 8 --dir /tmp/modems --time-scale 10 --seed 1",
    ): Variant(
        "in the background until its links are printed, stopped after the daemon; the "
        "working folder's modems/ for /tmp/modems, shared by every run on the machine",
        edits=(swap("/tmp/modems", f"{FOLDER}/modems"),),
        up=modems_up,
        service=True,
        stop=signal.SIGTERM,
        check=modems_removed,
    ),
    ("linkmgr.md", "farlink linkmgr run air.toml"): Variant(
        "air.toml is the configuration block of linkmgr.md (members on the simulated modems, "
        "the dashboard on a free port); in a namespace of its own for its [tun]; in the "
        "background until its dashboard and control socket are up, SIGTERM after hold/release",
        files=daemon_config,
        up=daemon_up,
        service=True,
        stop=signal.SIGTERM,
        in_namespace=True,
        root=True,
        check=daemon_stopped,
    ),
    ("linkmgr.md", "farlink linkmgr hold air.toml kansas"): Variant(
        AS_DOCUMENTED + ", against the daemon above",
        needs="farlink linkmgr run air.toml",
        check=said_as_documented("ok kansas held"),
    ),
    ("linkmgr.md", "farlink linkmgr release air.sock 1"): Variant(
        AS_DOCUMENTED + ", against the daemon above",
        needs="farlink linkmgr run air.toml",
        check=said_as_documented("ok kansas released"),
    ),
    # linkmgr.md: the demo, its three forms side by side
    ("linkmgr.md", "farlink linkmgr demo"): Variant(
        "2 modems, 2 kB, time scale 10, the dashboard on a free port; the default --dir",
        edits=DEMO_SHORT,
        root=True,
        alone=True,
        check=demo_text,
        timeout_s=240,
    ),
    ("linkmgr.md", "farlink linkmgr demo --size 10KB --time-scale 10 --json"): Variant(
        "2 modems, 2 kB, the dashboard on a free port; the default --dir",
        edits=DEMO_SHORT,
        root=True,
        alone=True,
        check=demo_json,
        timeout_s=240,
    ),
    ("linkmgr.md", "farlink linkmgr demo --keep --listen 0.0.0.0:8750 --token SECRET"): Variant(
        "2 modems, 2 kB, time scale 10, loopback on a free port; up until its dashboard "
        "answers with the token, then Ctrl-C (SIGINT)",
        edits=DEMO_SHORT,
        up=lambda proc: proc.says("up until Ctrl-C (--keep)"),
        while_up=dashboard_with_token(2),
        root=True,
        alone=True,
        check=demo_kept,
        timeout_s=240,
    ),
    # linkmgr.md: the log readers' synopsis, on test_docs_run's events.sqlite
    ("linkmgr.md", "farlink linkmgr uptime LOG [--json]"): Variant(
        "LOG: events.sqlite",
        expand=("farlink linkmgr uptime events.sqlite --json",),
        check=uptime_read,
    ),
    ("linkmgr.md", "farlink linkmgr log LOG --csv|--xml [--out FILE] [--force]"): Variant(
        "LOG: events.sqlite; each format, to a FILE",
        expand=(
            "farlink linkmgr log events.sqlite --csv --out events.csv",
            "farlink linkmgr log events.sqlite --xml --out events.xml",
        ),
        check=log_exported,
    ),
    (
        "linkmgr.md",
        "farlink fit-drops LOG [--confidence C] [--bins K] [--alpha A] [--json]",
    ): Variant(
        "LOG: events.sqlite; every option at its default",
        expand=("farlink fit-drops events.sqlite --confidence 0.95 --bins 15 --alpha 0.05 --json",),
        check=drops_fitted,
    ),
    ("linkmgr.md", "farlink linkmgr dashboard LOG [--listen ADDR:PORT] [--token T]"): Variant(
        "LOG: events.sqlite, loopback on a free port with a token; up until it answers, then "
        "Ctrl-C (SIGINT)",
        expand=("farlink linkmgr dashboard events.sqlite --listen 127.0.0.1:0 --token SECRET",),
        up=dashboard_up,
        while_up=dashboard_with_token(8),
        check=dashboard_stopped,
    ),
    # sweeps.md
    (
        "sweeps.md",
        "farlink sweep stpd-wireless --grid tcp=reno,sack --grid loss=0.001,0.01,0.05 "
        "--grid 'links[1].queue_pkts=4,14,30' --seeds 5 --duration 60s --out runs/loss-buffer",
    ): Variant(
        "one seed of 10 s per point: 18 runs, not 90 of 60 s",
        edits=SHORT_SWEEP,
        check=sweep_ran("runs/loss-buffer", 18),
    ),
    ("sweeps.md", "farlink results summary runs/loss-buffer"): Variant(
        "--json: the rows as data", edits=(flag("--json"),), check=summary_rows(18)
    ),
    (
        "sweeps.md",
        "farlink results query runs/loss-buffer 'SELECT tcp, loss, avg(normalized_goodput), "
        "avg(model_normalized_goodput) FROM results GROUP BY ALL ORDER BY ALL'",
    ): Variant("--json: the rows as data", edits=(flag("--json"),), check=query_rows),
    # wire.md
    **{
        ("wire.md", f"farlink emulate stpd-wireless --tcp {tcp} --size 1MB"): Variant(
            "100KB for 1MB",
            edits=(option("--size", "100KB"),),
            root=True,
            check=emulated(sender, 100_000),
        )
        for tcp, sender in (
            ("stpd", "farlink"),
            ("tahoe", "farlink"),
            ("cubic --sender farlink", "farlink"),
            ("cubic", "kernel"),
        )
    },
}


# --- the skipped blocks, grouped as they run ------------------------------------------------------


def skipped_blocks() -> list[docs_run.Block]:
    """The blocks test_docs_run does not run by default that are made of farlink commands."""
    return [
        b for b in docs_run.blocks() if b.mark in ("slow", "not run") and docs_run.commands(b.body)
    ]


def _key(block: docs_run.Block, argv: list[str]) -> tuple[str, str] | None:
    """The registry's key of a documented command (keys are shell syntax, compared split)."""
    for doc, command in VARIANTS:
        if doc == block.document.name and shlex.split(command) == argv:
            return doc, command
    return None


def groups() -> list[list[docs_run.Block]]:
    """Each skipped block on its own, but a block whose commands need a command of another
    (hold and release need the running daemon) runs after it, in its folder."""
    found: list[list[docs_run.Block]] = []
    for block in skipped_blocks():
        needs = {
            shlex.join(shlex.split(need))
            for argv in docs_run.commands(block.body)
            if (key := _key(block, argv)) and (need := VARIANTS[key].needs)
        }
        host = next((g for g in found if needs & _commands_of(g)), None)
        if host is None:
            found.append([block])
        else:
            host.append(block)
    return found


def _commands_of(group: list[docs_run.Block]) -> set[str]:
    return {shlex.join(argv) for b in group for argv in docs_run.commands(b.body)}


def _needs_root(group: list[docs_run.Block]) -> bool:
    return any(
        (k := _key(b, argv)) is not None and VARIANTS[k].root
        for b in group
        for argv in docs_run.commands(b.body)
    )


def _params() -> list:
    params = []
    for group in groups():
        marks = [needs_namespaces("namespaces and TUN (root)")] if _needs_root(group) else []
        marks += clock_marks("\n".join(b.body for b in group))
        params.append(pytest.param(group, id="+".join(b.id for b in group), marks=marks))
    return params


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory) -> Path:
    return docs_run.make_fixtures(tmp_path_factory.mktemp("docs-fixtures"))


def _fresh(folder: Path, fixtures: Path) -> Path:
    folder.mkdir(parents=True)
    for path in fixtures.iterdir():
        shutil.copy(path, folder / path.name)
    return folder


@dataclass
class Step:
    block: docs_run.Block
    documented: list[str]
    variant: Variant


def _report(step: Step, ran: Ran, figures: dict[str, Any]) -> None:
    print(
        f"\n{step.block.id}: {shlex.join(step.documented)}\n"
        f"  ran  {shlex.join(ran.argv)}\n"
        f"  why  {step.variant.why}\n"
        f"  exit {ran.returncode} in {ran.seconds:.1f} s: {figures}"
    )


def _assert_ok(step: Step, ran: Ran) -> dict[str, Any]:
    assert ran.returncode == 0, (
        f"{step.block.id}: {shlex.join(ran.argv)} exited {ran.returncode}:\n"
        f"{ran.stdout[-1500:]}\n{ran.stderr[-2500:]}"
    )
    figures = step.variant.check(ran) if step.variant.check else {}
    _report(step, ran, figures)
    return figures


class Runner:
    """Runs a group's steps in order in one folder; everything it starts is stopped in
    ``stack``'s unwinding, whatever fails."""

    def __init__(self, tmp: Path, fixtures: Path, stack: contextlib.ExitStack) -> None:
        self.tmp, self.fixtures, self.stack = tmp, fixtures, stack
        self.work = _fresh(tmp / "work", fixtures)
        self.services: list[tuple[Step, Proc]] = []
        self.namespace: str | None = None

    def _argvs(self, step: Step, folder: Path) -> list[list[str]]:
        argvs = step.variant.argvs(step.documented, folder)
        if step.variant.in_namespace:
            return [["ip", "netns", "exec", self._namespace(), *argv] for argv in argvs]
        return argvs

    def _namespace(self) -> str:
        if self.namespace is None:
            from farlink.linkmgr.netns import RunNamespaces

            spaces = RunNamespaces()
            self.stack.callback(spaces.close)
            self.namespace = spaces.create("docs")
        return self.namespace

    def _start(self, step: Step, argv: list[str], folder: Path) -> Proc:
        if step.variant.files is not None:
            step.variant.files(folder)
        proc = Proc(argv, folder, self.tmp / "logs", step.variant.stdin)
        self.stack.callback(proc.kill)
        return proc

    def _finish(self, step: Step, proc: Proc) -> None:
        v = step.variant
        if v.up is None:
            _assert_ok(step, proc.finish(v.timeout_s))
            return
        proc.wait_up(v.up, UP_TIMEOUT_S)
        figures = v.while_up(proc) if v.while_up else {}
        ran = proc.finish(STOP_TIMEOUT_S, v.stop)
        _assert_ok(step, ran).update(figures)
        print(f"  while up: {figures}")

    def run(self, step: Step) -> None:
        for argv in self._argvs(step, self.work):
            proc = self._start(step, argv, self.work)
            if step.variant.service:
                assert step.variant.up is not None
                proc.wait_up(step.variant.up, UP_TIMEOUT_S)
                self.services.append((step, proc))
            else:
                self._finish(step, proc)

    def run_side_by_side(self, steps: list[Step]) -> None:
        """Each in a fresh folder of its own, all started before any is awaited."""
        started = []
        for i, step in enumerate(steps):
            folder = _fresh(self.tmp / f"alone-{i}", self.fixtures)
            [argv] = self._argvs(step, folder)
            started.append((step, self._start(step, argv, folder)))
        for step, proc in started:
            self._finish(step, proc)

    def stop_services(self) -> None:
        while self.services:
            step, proc = self.services.pop()
            _assert_ok(step, proc.finish(STOP_TIMEOUT_S, step.variant.stop))


def _steps(group: list[docs_run.Block]) -> list[Step]:
    steps = []
    for block in group:
        for argv in docs_run.commands(block.body):
            key = _key(block, argv)
            if key is None:
                pytest.fail(f"{block.id}: no short variant for `{shlex.join(argv)}`")
            steps.append(Step(block, argv, VARIANTS[key]))
    return steps


@pytest.mark.parametrize("group", _params())
@pytest.mark.timeout(300)
def test_skipped_block_runs_as_a_short_variant(group, tmp_path, fixtures):
    steps = _steps(group)
    with contextlib.ExitStack() as stack:
        runner = Runner(tmp_path, fixtures, stack)
        alone: list[Step] = []
        for step in steps:
            if step.variant.alone:
                alone.append(step)
                continue
            if alone:
                runner.run_side_by_side(alone)
                alone = []
            runner.run(step)
        if alone:
            runner.run_side_by_side(alone)
        runner.stop_services()


PLACEHOLDER = re.compile(r"\b[A-Z][A-Z_.]*\b|[\[\]|]")


def test_every_skipped_command_has_a_short_variant():
    missing, documented = [], set()
    for block in skipped_blocks():
        for argv in docs_run.commands(block.body):
            key = _key(block, argv)
            if key is None:
                missing.append(f"{block.id}: {shlex.join(argv)}")
                continue
            documented.add(key)
            variant = VARIANTS[key]
            for line in variant.expand:
                expanded = shlex.split(line)
                fixed = next(i for i, a in enumerate(argv) if PLACEHOLDER.search(a))
                assert expanded[:fixed] == argv[:fixed], f"{block.id}: {line} is another command"
                # A placeholder left (LOG, FILE, [--json], --csv|--xml) or a SECRET token kept.
                left = [a for a in expanded if PLACEHOLDER.search(a) and a != "SECRET"]
                assert not left, f"{block.id}: {line} keeps placeholders {left}"
    assert not missing, (
        "documented commands of skipped blocks without a short variant in "
        "tests/test_documented_defaults.py (VARIANTS):\n" + "\n".join(missing)
    )
    stale = set(VARIANTS) - documented
    assert not stale, f"variants of commands no skipped block holds any more: {sorted(stale)}"
    needed = {v.needs for v in VARIANTS.values() if v.needs}
    held = {shlex.join(shlex.split(c)) for _, c in VARIANTS}
    assert {shlex.join(shlex.split(n)) for n in needed} <= held
