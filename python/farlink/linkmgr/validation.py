"""``make validate-linkmgr``: the whole link manager run for a long time, read back by its own
readers, beside the configuration and the simulator.

The demo's bundle (:func:`farlink.linkmgr.demo.running_bundle`: two namespaces, the preset's
simulated modems, a daemon at each end) carries an unbounded TCP transfer checked byte for byte
for ``duration_s``; then the air daemon's event log is read by ``farlink linkmgr uptime`` and
``farlink fit-drops`` and set beside the configured call-drop rate and the simulator's run of
the same preset, seed, timers and duration (its uptime, and β fitted to its members' calls as
``fit-drops`` fits a log), with the bundle's goodput against its line rate.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from farlink.calldrops.fit import DropFit, fit_drop_log
from farlink.calldrops.log import DropLog
from farlink.linkmgr.demo import (
    GROUND_ADDRESS,
    DemoError,
    _farlink,
    await_transfer,
    first_dial_unix_s,
    running_bundle,
    scaled_scenario,
    scaled_timers,
    transfer_command,
)

MEMBER_RATE_BPS = 2400
STALL_TIMEOUT_S = 900.0
"""The longest the transfer may go without a byte before the run fails: the bundle's outages
(a primary drop: T_d and a dial) last about a minute; a blocked primary an hour would fail."""
CONNECTED = 2
CALL_LOST = 3
"""Codes of the simulator's ``member_state`` trace (``farlink.captures.simulated``)."""


@dataclass(frozen=True)
class Fit:
    """β fitted to a log: per second, with its interval, from ``drops`` in ``exposure_s``."""

    beta_per_s: float
    low_per_s: float
    high_per_s: float
    drops: int
    exposure_s: float
    verdict: str

    @classmethod
    def of(cls, fit: DropFit) -> Fit:
        return cls(
            fit.beta_per_s,
            fit.ci_low_per_s,
            fit.ci_high_per_s,
            fit.drops,
            fit.exposure_s,
            fit.verdict,
        )


@dataclass(frozen=True)
class Side:
    """One column of the table: a run's uptime, call drops, β and goodput."""

    all_up_fraction: float
    any_up_fraction: float
    drops: int
    primary_drops: int | None
    fit: Fit | None
    goodput_bps: float


@dataclass(frozen=True)
class Validation:
    modems: int
    duration_s: float
    time_scale: float
    seed: int
    configured_beta_per_s: float
    daemon: Side
    simulator: Side
    bytes_received: int
    verified: bool
    connections: int
    log: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def sim_drop_log(result: Any, modems: int) -> DropLog:
    """The simulator's calls as ``fit-drops`` reads a daemon's log: each member's time in
    ``connected`` is exposure, a stay that ends in ``call_lost`` one complete interval and one
    drop, one ended otherwise (a hang-up, the run's end) right-censored."""
    tr = result.traces["member_state"]
    end_s = result.summary["sim_time_s"]
    t = np.asarray(tr["time_ns"], dtype=float) / 1e9
    member = np.asarray(tr["member"])
    state = np.asarray(tr["state"])
    intervals: list[float] = []
    exposure = 0.0
    for m in range(modems):
        mine = member == m
        times, states = t[mine], state[mine]
        for i in np.flatnonzero(states == CONNECTED):
            until = times[i + 1] if i + 1 < len(times) else end_s
            exposure += until - times[i]
            if i + 1 < len(times) and states[i + 1] == CALL_LOST:
                intervals.append(until - times[i])
    return DropLog(
        modems=tuple(f"member{m}" for m in range(modems)),
        intervals_s=np.asarray(intervals),
        exposure_s=exposure,
        drops=len(intervals),
        source="simulate",
        censoring="time",
    )


def simulated_side(modems: int, time_scale: float, duration_s: float, seed: int) -> Side:
    """The simulator's run of the preset with the validation's modems, timers and duration."""
    from farlink.sim import simulate

    doc = scaled_scenario(modems, time_scale)
    doc["duration"] = f"{duration_s}s"
    doc["seed"] = seed
    # More than the bundle can carry in the run: unbounded, as the validation's transfer.
    line_bytes = MEMBER_RATE_BPS * modems * duration_s / 8
    doc["flows"][0]["app"]["size"] = f"{2 * line_bytes:.0f}B"
    doc["trace"] = {"member_state": True}
    result = simulate(doc)
    bundle = result.summary["links"][0]["bundle"]
    drops = sim_drop_log(result, modems)
    return Side(
        all_up_fraction=bundle["all_up_fraction"],
        any_up_fraction=bundle["any_up_fraction"],
        drops=int(bundle["call_drops"]),
        primary_drops=None,
        fit=Fit.of(fit_drop_log(drops)) if drops.drops else None,
        goodput_bps=float(result.summary["goodput_bps"]),
    )


def _farlink_json(*args: str) -> dict[str, Any] | None:
    """``farlink ARGS --json``'s object; None when it refused (exit 2: a log too short)."""
    out = subprocess.run(
        [*_farlink(), *args, "--json"], capture_output=True, text=True, check=False
    )
    if out.returncode == 2:
        return None
    if out.returncode != 0:
        raise DemoError(f"farlink {' '.join(args)} failed: {out.stderr.strip()}")
    return json.loads(out.stdout)


def daemon_side(log: Path, goodput_bps: float) -> Side:
    """The air daemon's log as ``farlink linkmgr uptime`` and ``farlink fit-drops`` read it."""
    up = _farlink_json("linkmgr", "uptime", str(log))
    if up is None:
        raise DemoError(f"farlink linkmgr uptime {log} refused the log")
    fit = _farlink_json("fit-drops", str(log))
    return Side(
        all_up_fraction=up["all_up_fraction"],
        any_up_fraction=up["any_up_fraction"],
        drops=up["drops"],
        primary_drops=up["primary_drops"],
        fit=None
        if fit is None
        else Fit(
            fit["beta_per_s"],
            fit["ci_low_per_s"],
            fit["ci_high_per_s"],
            fit["drops"],
            fit["exposure_s"],
            fit["verdict"],
        ),
        goodput_bps=goodput_bps,
    )


def run_validation(
    *,
    modems: int,
    duration_s: float,
    time_scale: float,
    folder: Path,
    say: Callable[[str], None] = print,
) -> Validation:
    """Runs the bundle with a transfer for ``duration_s`` in ``folder``; reads the figures."""
    from farlink.linkmgr.demo import SEED

    with running_bundle(modems=modems, time_scale=time_scale, folder=folder, say=say) as b:
        procs = b.procs
        procs.start(
            "receiver",
            transfer_command(b.ground_ns, "receive-stream", timeout_s=STALL_TIMEOUT_S),
            stdout=subprocess.PIPE,
        )
        first_dial = first_dial_unix_s(b.air_log, procs)
        procs.start(
            "sender",
            transfer_command(
                b.air_ns,
                "send-stream",
                GROUND_ADDRESS,
                "--duration",
                str(duration_s),
                timeout_s=STALL_TIMEOUT_S,
            ),
        )
        say(f"transfer running for {duration_s:.0f} s from {time.strftime('%H:%M:%S')}")
        received = await_transfer(procs, duration_s + 2 * STALL_TIMEOUT_S)
        # The daemons log their `stop`: the log ends here.
        procs.stop("air-daemon")
        procs.stop("ground-daemon")
    goodput = 8 * received["bytes"] / (received["end_unix_s"] - first_dial)
    say(f"transfer done: {received['bytes']} bytes, verified {received['verified']}")
    daemon = daemon_side(b.air_log, goodput)
    simulator = simulated_side(modems, time_scale, duration_s, SEED)
    return Validation(
        modems=modems,
        duration_s=duration_s,
        time_scale=time_scale,
        seed=SEED,
        configured_beta_per_s=scaled_timers(time_scale)["beta_per_s"],
        daemon=daemon,
        simulator=simulator,
        bytes_received=int(received["bytes"]),
        verified=bool(received["verified"]),
        connections=int(received["connections"]),
        log=str(b.air_log),
    )


def _per_min(beta_per_s: float) -> str:
    return "1/inf" if beta_per_s <= 0 else f"1/{1 / (60 * beta_per_s):.1f} min"


def _fit_cell(fit: Fit | None) -> str:
    if fit is None:
        return "no drop: too short for a fit"
    return (
        f"{_per_min(fit.beta_per_s)} ({_per_min(fit.high_per_s)} to "
        f"{_per_min(fit.low_per_s)}; {fit.drops} drops in {fit.exposure_s / 3600:.2f} "
        f"member-hours; {fit.verdict})"
    )


def table_markdown(v: Validation) -> str:
    """The validation's table (Markdown), with a line saying what was run."""
    line_bps = MEMBER_RATE_BPS * v.modems
    d, s = v.daemon, v.simulator
    primary = "" if d.primary_drops is None else f" (of the primary {d.primary_drops})"
    rows = [
        ("", "configured", "daemon's log", "simulator"),
        ("---", "---", "---", "---"),
        (
            "all members up",
            "",
            f"{100 * d.all_up_fraction:.1f} %",
            f"{100 * s.all_up_fraction:.1f} %",
        ),
        (
            "at least one up",
            "",
            f"{100 * d.any_up_fraction:.1f} %",
            f"{100 * s.any_up_fraction:.1f} %",
        ),
        ("call drops", "", f"{d.drops}{primary}", f"{s.drops}"),
        (
            "β (95 % interval)",
            _per_min(v.configured_beta_per_s),
            _fit_cell(d.fit),
            _fit_cell(s.fit),
        ),
        (
            "bundle goodput",
            f"{line_bps} bit/s ({v.modems} × {MEMBER_RATE_BPS})",
            f"{d.goodput_bps:.0f} bit/s ({100 * d.goodput_bps / line_bps:.1f} %)",
            f"{s.goodput_bps:.0f} bit/s ({100 * s.goodput_bps / line_bps:.1f} %)",
        ),
    ]
    table = "\n".join("| " + " | ".join(r) + " |" for r in rows)
    head = (
        f"{v.modems} simulated modems (`iridium-greenland-8`, seed {v.seed}), "
        f"{v.duration_s / 60:.0f} min at time scale {v.time_scale:g}; "
        f"{v.bytes_received} bytes across, verified {str(v.verified).lower()}, "
        f"{v.connections} TCP connection{'s' if v.connections != 1 else ''}."
    )
    return f"{head}\n\n{table}\n"
