"""``farlink linkmgr demo``: the whole link manager at once on one machine.

Two network namespaces (air and ground, :mod:`farlink.linkmgr.netns`), N simulated Iridium
modem pairs on ptys (``farlink linkmgr modem-sim``, in the root namespace: ptys belong to no
namespace), a daemon at each end in its namespace with a ``[tun]`` table (the air end dials, the
ground end answers), the dashboard of the air end's log, and a kernel TCP transfer of ``size``
bytes from air to ground across the bonded bundle. Its time, counted from the air daemon's first
dial, is set beside the simulator's (``iridium-greenland-8`` with the same modems, file and
timers) and eq. 36's (``predict calldrop``) for the same file.

``time_scale`` X divides every timer of the modems' calls (drop intervals and dial times) and
of the supervisor (T_d, T_f, the blocked time) by X, in the demo and in both figures beside it;
the byte rate is untouched.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from farlink.linkmgr.netns import NetnsError, RunNamespaces, remove_stale

PRESET = "iridium-greenland-8"
AIR_ADDRESS = "10.77.0.1"
GROUND_ADDRESS = "10.77.0.2"
TUN_NAME = "farlink0"
PORT = 5001
SEED = 1
STARTUP_WAIT_S = 30.0
"""The longest wait for the modems' links and the daemons' logs (seconds on a loaded machine)."""
STOP_WAIT_S = 10.0
PR_SET_PDEATHSIG = 1


class DemoError(RuntimeError):
    """The demo cannot run here (not root, no TUN) or a part of it failed."""


SIM_SEEDS = range(1, 11)
"""The simulator's seeds beside the demo: one real run is judged against their spread."""


@dataclass(frozen=True)
class SimulatedSpread:
    """The simulator's transfer times over :data:`SIM_SEEDS` (seconds), and where a real run
    falls: ``below`` the 10th percentile, ``within`` the 10th-90th, or ``above``."""

    times_s: tuple[float | None, ...]

    @property
    def finished_s(self) -> list[float]:
        return sorted(t for t in self.times_s if t is not None)

    def percentile_s(self, q: float) -> float | None:
        import numpy as np

        done = self.finished_s
        return float(np.percentile(done, q)) if done else None

    def judge(self, real_s: float) -> str:
        """Where ``real_s`` falls against the 10th-90th percentiles of the finished runs."""
        p10, p90 = self.percentile_s(10), self.percentile_s(90)
        if p10 is None or p90 is None:
            return "unknown"
        return "below" if real_s < p10 else "above" if real_s > p90 else "within"


@dataclass(frozen=True)
class DemoResult:
    modems: int
    size_bytes: int
    time_scale: float
    transfer_time_s: float
    sim: SimulatedSpread
    model_transfer_time_s: float
    bytes_received: int
    verified: bool
    log: str
    drops: int

    @property
    def sim_transfer_time_s(self) -> float | None:
        """The median of the simulated runs (None: none finished)."""
        return self.sim.percentile_s(50)

    @property
    def against_sim(self) -> str:
        """The real run against the simulated spread: below, within or above its p10-p90."""
        return self.sim.judge(self.transfer_time_s)

    def to_dict(self) -> dict[str, Any]:
        return {
            "modems": self.modems,
            "size_bytes": self.size_bytes,
            "time_scale": self.time_scale,
            "transfer_time_s": self.transfer_time_s,
            "sim_transfer_time_s": self.sim_transfer_time_s,
            "sim_transfer_time_p10_s": self.sim.percentile_s(10),
            "sim_transfer_time_p90_s": self.sim.percentile_s(90),
            "sim_transfer_times_s": list(self.sim.times_s),
            "against_sim": self.against_sim,
            "model_transfer_time_s": self.model_transfer_time_s,
            "bytes": self.bytes_received,
            "verified": self.verified,
            "drops": self.drops,
            "log": self.log,
        }


def check_can_run() -> None:
    """Refuses a machine without what the demo needs, in one line."""
    if not sys.platform.startswith("linux"):
        raise DemoError("the demo needs Linux (network namespaces, TUN, ptys)")
    if os.geteuid() != 0:
        raise DemoError("the demo needs root (network namespaces and TUN devices)")
    if not Path("/dev/net/tun").exists():
        raise DemoError("the demo needs /dev/net/tun")


def _preset_bundle() -> dict[str, Any]:
    from farlink.scenario import load_scenario

    return load_scenario(PRESET)


def _seconds(text: str) -> float:
    from farlink import units

    return units.parse_duration_s(text)


def scaled_timers(time_scale: float) -> dict[str, float]:
    """The preset's supervisor timers and dial time divided by ``time_scale`` (seconds), and its
    call-drop rate multiplied by it (per second)."""
    from farlink import units

    b = _preset_bundle()["links"][0]["bundle"]
    return {
        "dial_time_s": _seconds(b["dial_time"]) / time_scale,
        "t_d_s": _seconds(b["t_d"]) / time_scale,
        "t_f_s": _seconds(b["t_f"]) / time_scale,
        "blocked_for_s": _seconds(b["blocked_for"]) / time_scale,
        "detection_delay_s": _seconds(b["detection_delay"]) / time_scale,
        "max_attempts": int(b["max_attempts"]),
        "beta_per_s": units.parse_event_rate_per_s(b["call_drop_rate"]) * time_scale,
    }


def daemon_config(role: str, modems: int, modem_dir: Path, timers: dict[str, float]) -> str:
    """The TOML of one end's daemon. The ground end answers and waits out a drop for a tenth
    of the air end's time, so that it is waiting again when the air end redials."""
    here, there = (AIR_ADDRESS, GROUND_ADDRESS) if role == "air" else (GROUND_ADDRESS, AIR_ADDRESS)
    members = "".join(
        f'\n[[members]]\nname = "m{k}"\ndevice = "{modem_dir / f"{role}{k}"}"\n'
        for k in range(modems)
    )
    share = 1.0 if role == "air" else 0.1
    return f"""role = "{role}"
log = "{role}.sqlite"
control = "{role}.sock"
primary = {"true" if role == "air" else "false"}
{members}
[profile]
name = "iridium"
dial_timeout = "{max(5.0, 6 * timers["dial_time_s"]):.3f}s"

[timers]
t_d = "{share * timers["t_d_s"]:.3f}s"
t_f = "{share * timers["t_f_s"]:.3f}s"
max_attempts = {timers["max_attempts"] if role == "air" else 0}
blocked_for = "{timers["blocked_for_s"]:.3f}s"

[tun]
name = "{TUN_NAME}"
address = "{here}/30"
peer = "{there}"
member_rate = "2400bps"
"""


def scaled_scenario(modems: int, time_scale: float) -> dict[str, Any]:
    """``iridium-greenland-8`` with ``modems`` members and the timers of ``time_scale``, starting
    from the first dial (``start = "dialing"``) as the daemons do."""
    doc = _preset_bundle()
    t = scaled_timers(time_scale)
    b = doc["links"][0]["bundle"]
    b["members"] = modems
    b["start"] = "dialing"
    b["call_drop_rate_per_s"] = t["beta_per_s"]
    del b["call_drop_rate"]
    for key in ("dial_time", "t_d", "t_f", "blocked_for", "detection_delay"):
        b[key] = f"{t[key + '_s']}s"
    return doc


def sim_scenario(modems: int, size_bytes: int, time_scale: float) -> dict[str, Any]:
    """``iridium-greenland-8`` with the demo's modems, file and timers, starting from the first
    dial (``start = "dialing"``) as the demo counts."""
    from farlink import units

    doc = scaled_scenario(modems, time_scale)
    t = scaled_timers(time_scale)
    b = doc["links"][0]["bundle"]
    doc["flows"][0]["app"]["size"] = f"{size_bytes}B"
    # Long enough for the transfer at a tenth of the bundle's rate, with every dial.
    rate_bps = units.parse_bitrate_bps(b["rate"]) * modems
    doc["duration"] = f"{600 + 10 * size_bytes * 8 / rate_bps + 100 * t['dial_time_s']}s"
    return doc


def simulated_spread(modems: int, size_bytes: int, time_scale: float) -> SimulatedSpread:
    """The simulator's transfer time for the same bundle and file over :data:`SIM_SEEDS`
    (None for a run that did not finish)."""
    from farlink.sim import simulate

    doc = sim_scenario(modems, size_bytes, time_scale)
    times = []
    for seed in SIM_SEEDS:
        t = simulate(doc, seed=seed).summary.get("transfer_time_s")
        times.append(None if t is None else float(t))
    return SimulatedSpread(tuple(times))


def model_time_s(modems: int, size_bytes: int, time_scale: float) -> float:
    """Eq. 36 for the same bundle and file, every input from the demo's own scenario (its RTT,
    loss, T0 = the minimum RTO and receive window), β multiplied by the time scale and bounded
    by the bundle's capacity, plus the first dial (the model starts with the bundle up; the demo
    counts from the first dial). T0 is TCP's and is not scaled, as the kernel's is not."""
    from farlink.predict import bound, bounded_transfer_time_s, calldrop_of_path, path_inputs
    from farlink.scenario import resolve

    path = path_inputs(resolve(sim_scenario(modems, size_bytes, time_scale)))
    model = calldrop_of_path(path, size_bytes)
    bounded = bound(float(model.throughput_bps), path.capacity_bps)
    transfer_s = bounded_transfer_time_s(float(model.transfer_time_s), bounded)
    return transfer_s + scaled_timers(time_scale)["dial_time_s"]


def _farlink() -> list[str]:
    return [sys.executable, "-c", "import sys; from farlink.cli.app import main; sys.exit(main())"]


def _die_with_parent() -> None:
    """In a child before exec: SIGTERM when the demo dies, however it dies."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


class _Procs:
    """The demo's child processes; each ends when the demo does."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.args: dict[str, list[str]] = {}

    def kill_and_restart(self, name: str) -> None:
        """SIGKILLs process ``name`` and starts it again as it was started."""
        p = self.procs[name]
        p.kill()
        p.wait()
        self.start(name, self.args[name])

    def start(self, name: str, args: list[str], *, stdout: int | None = None) -> None:
        self.args[name] = args
        err = open(self.folder / f"{name}.stderr", "ab")
        self.procs[name] = subprocess.Popen(
            args,
            cwd=self.folder,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL if stdout is None else stdout,
            stderr=err,
            preexec_fn=_die_with_parent,
        )
        err.close()

    def failed(self, name: str) -> str | None:
        p = self.procs.get(name)
        if p is None or p.poll() is None:
            return None
        text = (self.folder / f"{name}.stderr").read_text(errors="replace").strip()
        return f"{name} exited with status {p.returncode}" + (f": {text}" if text else "")

    def stop(self, name: str) -> None:
        p = self.procs.get(name)
        if p is None:
            return
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=STOP_WAIT_S)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        if p.stdout is not None:
            p.stdout.close()

    def stop_all(self) -> None:
        for name in reversed(list(self.procs)):
            self.stop(name)


def _query(log: Path, sql: str) -> list[tuple[Any, ...]]:
    """Rows of the log read as a reader does while the daemon writes (none before it has any)."""
    if not log.exists():
        return []
    try:
        with contextlib.closing(sqlite3.connect(f"file:{log}?mode=ro", uri=True)) as db:
            return db.execute(sql).fetchall()
    except sqlite3.Error:
        return []


def _wait(done: Callable[[], bool], what: str, timeout_s: float, procs: _Procs) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():
        for name in procs.procs:
            if name != "sender" and (why := procs.failed(name)):
                raise DemoError(why)
        if time.monotonic() > deadline:
            raise DemoError(f"gave up waiting for {what} after {timeout_s:.0f} s")
        time.sleep(0.1)


class _Terminated(KeyboardInterrupt):
    """SIGTERM, taken as Ctrl-C: everything made is removed on the way out."""


def _on_sigterm(signum: int, frame: object) -> None:
    raise _Terminated


def transfer_command(ns: str, *args: str, timeout_s: float) -> list[str]:
    """The command line of one end of a transfer (``farlink.linkmgr.transfer ARGS``) run in
    namespace ``ns`` on the demo's port and seed."""
    return [
        *("ip", "netns", "exec", ns, sys.executable, "-m", "farlink.linkmgr.transfer", *args),
        *("--port", str(PORT), "--seed", str(SEED), "--timeout", str(timeout_s)),
    ]


@dataclass(frozen=True)
class RunningBundle:
    """The parts :func:`running_bundle` started: its processes, namespaces and the air log."""

    procs: _Procs
    air_ns: str
    ground_ns: str
    air_log: Path


PARTS = ("modem-sim", "ground-daemon", "air-daemon", "receiver", "sender")
"""The processes a bundle's run starts; each one's stderr is ``FOLDER/<part>.stderr``."""


def demo_file_names() -> list[str]:
    """Every file a bundle's run writes in its folder (the modems' links go in a subfolder)."""
    names = [f"{part}.stderr" for part in PARTS]
    for role in ("air", "ground"):
        names += [f"{role}.toml", f"{role}.sock"]
        names += [f"{role}.sqlite{tail}" for tail in ("", "-wal", "-shm", "-journal")]
    return names


def claim_demo_files(folder: Path, *, force: bool) -> None:
    """Claims the run's files in ``folder`` (an :class:`~farlink.outputs.OutputFolder`: one that
    exists and farlink did not write is refused with :class:`~farlink.outputs.OutputError`,
    unless ``force``) and removes its earlier
    logs and stderr: a daemon would resume from an old log's snapshot, and a part's stderr is
    appended to (a restarted part keeps what it said before). The claim is recorded at once,
    so that a run killed halfway leaves a folder its rerun recognises."""
    from farlink.outputs import OutputError, OutputFolder

    out = OutputFolder(folder, option="--dir", force=force)
    paths = out.claim(*demo_file_names())
    for path in paths:
        if path.suffix != ".toml" and not path.name.endswith(".sock"):
            try:
                path.unlink(missing_ok=True)
            except OSError as err:
                raise OutputError(f"--dir: cannot remove {path} ({err.strerror})") from None
    out.record(paths)


@contextlib.contextmanager
def running_bundle(
    *,
    modems: int,
    time_scale: float,
    folder: Path,
    say: Callable[[str], None] = print,
    loss: float | None = None,
    force: bool = False,
) -> Iterator[RunningBundle]:
    """Two namespaces, ``modems`` simulated modem pairs (the preset's, seed :data:`SEED`;
    ``loss``: their frame error rate air to ground instead of the preset's) and a daemon at
    each end, up until the context ends; then everything it made is removed, the logs,
    configurations, stderr and the modems' counters in ``folder`` excepted. SIGTERM raises
    KeyboardInterrupt meanwhile, so that a terminated run cleans up too. A file of ``folder``'s
    that the bundle would write and farlink did not (its manifest says) is refused, unless
    ``force`` (:func:`claim_demo_files`)."""
    check_can_run()
    # Every part runs with this folder as its working directory and is handed paths in it:
    # a relative folder would be taken relative to itself.
    folder = folder.resolve()
    claim_demo_files(folder, force=force)
    timers = scaled_timers(time_scale)
    modem_dir = folder / "modems"
    air_log = folder / "air.sqlite"
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    remove_stale()
    spaces: RunNamespaces | None = None
    procs = _Procs(folder)
    try:
        try:
            spaces = RunNamespaces()
            air_ns = spaces.create("air")
            ground_ns = spaces.create("ground")
        except NetnsError as err:
            raise DemoError(str(err)) from None
        say(f"namespaces {air_ns} and {ground_ns}; {modems} simulated modems in {modem_dir}")
        procs.start(
            "modem-sim",
            [
                *_farlink(),
                "linkmgr",
                "modem-sim",
                "--modems",
                str(modems),
                "--dir",
                str(modem_dir),
                "--time-scale",
                repr(time_scale),
                "--seed",
                str(SEED),
                "--preset",
                PRESET,
                *(() if loss is None else ("--loss", repr(loss))),
            ],
        )
        _wait(
            lambda: (modem_dir / f"ground{modems - 1}").is_symlink(),
            "the simulated modems",
            STARTUP_WAIT_S,
            procs,
        )
        for role, ns in (("ground", ground_ns), ("air", air_ns)):
            config = folder / f"{role}.toml"
            config.write_text(daemon_config(role, modems, modem_dir, timers))
            procs.start(
                f"{role}-daemon",
                ["ip", "netns", "exec", ns, *_farlink(), "linkmgr", "run", str(config)],
            )
        _wait(lambda: bool(_query(air_log, "SELECT 1 FROM events")), "the air log", 30, procs)
        yield RunningBundle(procs=procs, air_ns=air_ns, ground_ns=ground_ns, air_log=air_log)
    finally:
        procs.stop_all()
        if spaces is not None:
            spaces.close()
        signal.signal(signal.SIGTERM, previous)


def run_demo(
    *,
    modems: int,
    size_bytes: int,
    time_scale: float,
    folder: Path,
    keep: bool = False,
    listen: str = "127.0.0.1:0",
    token: str | None = None,
    timeout_s: float | None = None,
    say: Callable[[str], None] = print,
    on_transfer_started: Callable[[Callable[[str], None]], None] | None = None,
    force: bool = False,
) -> DemoResult:
    """Runs the demo in ``folder`` (its logs, configurations and the modems' links); returns
    once the transfer is over (with ``keep``: once interrupted after it). Everything it made
    (namespaces, processes, links) is gone when it returns or raises, the logs excepted.

    ``timeout_s`` bounds the transfer (default: ten times its time at the bundle's full rate
    plus ten minutes scaled). ``on_transfer_started(kill_and_restart)`` is called (from this
    thread) once the sender runs: a test's hook to do harm mid-transfer, given a function that
    SIGKILLs a part (``"ground-daemon"``, ``"air-daemon"``) and starts it again. ``force``: replace
    files in ``folder`` that farlink did not write (:func:`claim_demo_files`).
    """
    check_can_run()
    from farlink.linkmgr.dashboard import check_access, parse_listen

    host, _ = parse_listen(listen)
    check_access(host, token)
    line_bps = 2400 * modems
    if timeout_s is None:
        timeout_s = 10 * size_bytes * 8 / line_bps + 6000 / time_scale + 60
    size = ("--size", str(size_bytes))
    stop_dashboard = threading.Event()
    dashboard: threading.Thread | None = None
    with running_bundle(
        modems=modems, time_scale=time_scale, folder=folder, say=say, force=force
    ) as b:
        procs, air_log = b.procs, b.air_log
        try:
            dashboard = _start_dashboard(air_log, listen, token, stop_dashboard, say)
            procs.start(
                "receiver",
                transfer_command(b.ground_ns, "receive", *size, timeout_s=timeout_s),
                stdout=subprocess.PIPE,
            )
            first_dial = first_dial_unix_s(air_log, procs)
            say(f"first dial at {time.strftime('%H:%M:%S', time.gmtime(first_dial))} UTC")
            procs.start(
                "sender",
                transfer_command(b.air_ns, "send", GROUND_ADDRESS, *size, timeout_s=timeout_s),
            )
            say(f"sending {size_bytes} bytes from air to ground across the bundle")
            if on_transfer_started is not None:
                on_transfer_started(procs.kill_and_restart)
            received = await_transfer(procs, timeout_s)
            transfer_s = received["end_unix_s"] - first_dial
            drops = len(_query(air_log, "SELECT 1 FROM events WHERE kind = 'drop'"))
            say(f"transfer done: {received['bytes']} bytes, verified {received['verified']}")
            sim = simulated_spread(modems, size_bytes, time_scale)
            model_s = model_time_s(modems, size_bytes, time_scale)
            result = DemoResult(
                modems=modems,
                size_bytes=size_bytes,
                time_scale=time_scale,
                transfer_time_s=transfer_s,
                sim=sim,
                model_transfer_time_s=model_s,
                bytes_received=int(received["bytes"]),
                verified=bool(received["verified"]),
                log=str(air_log),
                drops=drops,
            )
            if keep:
                say("up until Ctrl-C (--keep)")
                with contextlib.suppress(KeyboardInterrupt, _Terminated):
                    while True:
                        time.sleep(1)
            return result
        finally:
            stop_dashboard.set()
            if dashboard is not None:
                dashboard.join(timeout=STOP_WAIT_S)


def _start_dashboard(
    log: Path,
    listen: str,
    token: str | None,
    stop: threading.Event,
    say: Callable[[str], None],
) -> threading.Thread:
    from farlink.linkmgr.dashboard import DashboardError, serve_in_thread

    try:
        return serve_in_thread(log, listen, token, stop, say, STARTUP_WAIT_S)
    except DashboardError as err:
        raise DemoError(f"dashboard: {err}") from None


def first_dial_unix_s(log: Path, procs: _Procs) -> float:
    """When the air end first dialled (waits for it)."""
    rows: list[tuple[Any, ...]] = []

    def dialled() -> bool:
        rows[:] = _query(log, "SELECT MIN(t_unix_s) FROM events WHERE kind = 'dial'")
        return bool(rows) and rows[0][0] is not None

    _wait(dialled, "the air end's first dial", STARTUP_WAIT_S, procs)
    return float(rows[0][0])


def await_transfer(procs: _Procs, timeout_s: float) -> dict[str, Any]:
    """The receiver's JSON line once it exits; fails if a part exits first."""
    receiver = procs.procs["receiver"]
    deadline = time.monotonic() + timeout_s + STOP_WAIT_S
    while receiver.poll() is None:
        for name in ("modem-sim", "air-daemon", "ground-daemon"):
            if why := procs.failed(name):
                raise DemoError(f"the transfer did not finish: {why}")
        if time.monotonic() > deadline:
            raise DemoError(f"the transfer did not finish within {timeout_s:.0f} s")
        time.sleep(0.2)
    assert receiver.stdout is not None
    out = receiver.stdout.read().decode().strip()
    if receiver.returncode != 0 or not out:
        why = procs.failed("receiver") or "no result"
        raise DemoError(f"the transfer did not finish: {why}")
    return json.loads(out)
