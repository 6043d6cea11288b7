"""``farlink linkmgr demo``: two namespaces, eight simulated modems, a daemon at each end with
its data plane on a TUN device, and a kernel TCP transfer across the bonded bundle.

Timers are compressed (``--time-scale 10``: a mean call of 5 min, a dial of 1.45 s, T_d and
T_f of 3 s) and the file is small (10 KB, about 4 s at 8 x 2400 bit/s), so a run takes about
20 s of wall time; each test is bounded. Needs root, ``ip`` and /dev/net/tun.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import sqlite3
import subprocess
import time
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import pytest

from support import FARLINK_ARGV, WALL_CLOCK, needs_namespaces

RUN_LIMIT_S = 90.0
"""A demo run's bound (it takes about 20 s; the margin is for a loaded machine)."""


pytestmark = [WALL_CLOCK, needs_namespaces("linkmgr demo")]


def _namespaces() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
    return {line.split()[0] for line in out.stdout.splitlines() if line.strip()}


def _integrity(log: Path) -> str:
    with closing(sqlite3.connect(f"file:{log}?mode=ro", uri=True)) as db:
        return db.execute("PRAGMA integrity_check").fetchone()[0]


def test_demo_moves_the_file_across_eight_bonded_modems(tmp_path: Path) -> None:
    started = time.monotonic()
    out = subprocess.run(
        [
            *FARLINK_ARGV,
            "linkmgr",
            "demo",
            "--modems",
            "8",
            "--size",
            "10KB",
            "--time-scale",
            "10",
            "--dir",
            str(tmp_path / "demo"),
            "--listen",
            "127.0.0.1:0",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=RUN_LIMIT_S,
    )
    wall_s = time.monotonic() - started
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["verified"] is True
    assert doc["bytes"] == doc["size_bytes"] == 10_000
    assert doc["time_scale"] == 10
    # Counted from the first dial: at least the file's time at the bundle's line rate.
    assert 10_000 * 8 / (8 * 2400) < doc["transfer_time_s"] < wall_s
    # The simulator's ten seeds, their median and p10-p90, and where the real run falls.
    sims = [t for t in doc["sim_transfer_times_s"] if t is not None]
    assert len(doc["sim_transfer_times_s"]) == 10 and sims
    assert doc["sim_transfer_time_p10_s"] <= doc["sim_transfer_time_s"]
    assert doc["sim_transfer_time_s"] <= doc["sim_transfer_time_p90_s"]
    p10, p90 = doc["sim_transfer_time_p10_s"], doc["sim_transfer_time_p90_s"]
    t = doc["transfer_time_s"]
    assert doc["against_sim"] == ("below" if t < p10 else "above" if t > p90 else "within")
    assert 0 < doc["model_transfer_time_s"] < wall_s
    assert "dashboard at http://127.0.0.1:" in out.stderr
    log = Path(doc["log"])
    assert _integrity(log) == "ok"
    up = subprocess.run(
        [*FARLINK_ARGV, "linkmgr", "uptime", str(log), "--json"], capture_output=True, text=True
    )
    assert up.returncode == 0, up.stderr
    report = json.loads(up.stdout)
    assert report["events"] > 0
    assert report["dials"] >= 8
    # Its namespaces are gone.
    made = out.stderr.split("namespaces ", 1)[1].split(";")[0].split(" and ")
    assert made[0].startswith("farlink-") and made[0].endswith("-air")
    assert not set(made) & _namespaces()


def test_ground_daemon_killed_and_restarted_mid_transfer(tmp_path: Path) -> None:
    """The ground daemon SIGKILLed and started again while the file crosses: the transfer
    completes (TCP retransmits through the gap; the air end redials the calls the kill hung
    up) or fails with a clear message, and both logs stay intact."""
    from farlink.linkmgr.demo import DemoError, run_demo

    killed: list[float] = []

    def harm(kill_and_restart: Callable[[str], None]) -> None:
        time.sleep(3.0)  # The transfer under way (SYN, slow start).
        kill_and_restart("ground-daemon")
        killed.append(time.monotonic())

    folder = tmp_path / "demo"
    try:
        result = run_demo(
            modems=8,
            size_bytes=20_000,
            time_scale=10,
            folder=folder,
            listen="127.0.0.1:0",
            timeout_s=RUN_LIMIT_S,
            say=lambda line: None,
            on_transfer_started=harm,
        )
    except DemoError as err:
        assert "transfer did not finish" in str(err)
    else:
        assert result.verified and result.bytes_received == 20_000
    assert killed
    for role in ("air", "ground"):
        assert _integrity(folder / f"{role}.sqlite") == "ok"
    with closing(sqlite3.connect(folder / "ground.sqlite")) as db:
        starts = db.execute("SELECT detail FROM events WHERE kind = 'daemon'").fetchall()
    assert len([s for (s,) in starts if s in ("start", "resume")]) == 2
    assert not {n for n in _namespaces() if n.startswith(f"farlink-{os.getpid():x}d-")}


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL])
def test_a_stopped_demo_leaves_nothing(tmp_path: Path, how: signal.Signals) -> None:
    """SIGTERM: the demo removes its namespaces and parts itself (exit 130). SIGKILL: its parts
    die with it (parent-death signal) and the next start removes its namespaces."""
    from farlink.linkmgr.netns import LOCK_DIR, remove_stale

    err = tmp_path / "output"
    with err.open("wb") as f:
        p = subprocess.Popen(
            [
                *FARLINK_ARGV,
                "linkmgr",
                "demo",
                "--dir",
                str(tmp_path / "demo"),
                "--listen",
                "127.0.0.1:0",
            ],
            stdout=f,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + RUN_LIMIT_S
        while "sending" not in err.read_text():
            assert p.poll() is None, err.read_text()
            assert time.monotonic() < deadline, "the transfer did not start"
            time.sleep(0.1)
        made = err.read_text().split("namespaces ", 1)[1].split(";")[0].split(" and ")
        # Another farlink starting beside this test (the emulations run beside the link
        # manager's tests) would clean a killed demo up too: the test takes the demo's lock
        # as soon as it dies and holds it, as a live run does, until its own next start.
        with (LOCK_DIR / f"{made[0].split('-')[1]}.lock").open("a") as run_lock:
            p.send_signal(how)
            rc = p.wait(timeout=30)
            if how == signal.SIGKILL:
                fcntl.flock(run_lock, fcntl.LOCK_EX)
                deadline = time.monotonic() + 30
                while any(_pids_in(n) for n in made):
                    assert time.monotonic() < deadline, "the demo's parts outlived it"
                    time.sleep(0.2)
                assert set(made) <= _namespaces(), "a killed demo cannot remove its namespaces"
                assert not set(made) & set(remove_stale()), "a locked run's namespaces are kept"
                fcntl.flock(run_lock, fcntl.LOCK_UN)
                assert set(made) <= set(remove_stale())
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    if how == signal.SIGTERM:
        assert rc == 130
        assert "interrupted" in err.read_text()
    assert not set(made) & _namespaces()


def _pids_in(namespace: str) -> list[str]:
    out = subprocess.run(["ip", "netns", "pids", namespace], capture_output=True, text=True)
    return out.stdout.split()


def test_a_transfer_crosses_modems_whose_arq_repeats_damaged_frames(tmp_path: Path) -> None:
    """Simulated modems damaging one frame in ten air to ground (``modem-sim --loss 0.1``;
    ground to air the preset's 1.3 %): their selective-repeat ARQ sends damaged frames again,
    and gives up a frame after three tries (the PPP frame around it then fails its FCS). The
    bonded bundle still carries the TCP transfer intact, and modem-sim counts the repeats."""
    from farlink.linkmgr.demo import (
        GROUND_ADDRESS,
        await_transfer,
        running_bundle,
        transfer_command,
    )

    size = ("--size", "10000")
    folder = tmp_path / "demo"
    with running_bundle(
        modems=8, time_scale=10, folder=folder, say=lambda line: None, loss=0.1
    ) as b:
        b.procs.start(
            "receiver",
            transfer_command(b.ground_ns, "receive", *size, timeout_s=RUN_LIMIT_S),
            stdout=subprocess.PIPE,
        )
        b.procs.start(
            "sender",
            transfer_command(b.air_ns, "send", GROUND_ADDRESS, *size, timeout_s=RUN_LIMIT_S),
        )
        received = await_transfer(b.procs, RUN_LIMIT_S)
    assert received["verified"] is True
    assert received["bytes"] == 10_000
    counters = json.loads((folder / "modems" / "modem-sim.json").read_text())
    assert len(counters["pairs"]) == 8

    def total(direction: str, key: str) -> int:
        return sum(p[direction][key] for p in counters["pairs"])

    sent = total("air_to_ground", "frames_sent")
    damaged = total("air_to_ground", "frames_damaged")
    # The transfer's octets in 27-octet frames, with PPP's framing around them.
    assert sent > 10_000 / 27
    # Each frame sent is damaged with probability 0.1 (a binomial count: a wide margin).
    assert 0.05 * sent < damaged < 0.15 * sent
    # Every damaged frame not given up is sent again, but for NAKs still on their way when a
    # call dropped or the modems stopped.
    resent = total("air_to_ground", "frames_resent")
    assert 0 < resent <= damaged - total("air_to_ground", "frames_given_up")
    assert total("ground_to_air", "frames_damaged") < damaged
    assert counters["total"]["octets_delivered"] > 10_000
