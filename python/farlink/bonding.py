"""One bundle's members bonded two ways, side by side: multilink PPP (the bundle as the scenario
gives it, one TCP connection) and Multipath TCP (one subflow per member, docs/multipath.md).

``compare_bonding`` runs both on the simulator over several seeds and reports, per run and on
average, the transfer time, the goodput, the call drops during the transfer and how long the
receiving application got nothing after each (``stall_after_drop_s``). With ``emulate=True``
it runs both on the emulator too, in real time: kernel TCP through the emulated MLPPP bundle,
and the kernel's Multipath TCP over the members' own emulated links (``emulate`` says which
controller), with the same figures, the stalls read from the emulator's record of the
receiving application's reads on the simulator's grid; otherwise each bonding's ``emulate``
is ``None`` and ``emulate`` says why.
"""

from __future__ import annotations

import copy
import re
from itertools import pairwise
from pathlib import Path
from statistics import fmean
from typing import Any

import numpy as np

from farlink import units
from farlink.results.result import Result
from farlink.scenario import apply_overrides

__all__ = [
    "BONDINGS",
    "EMULATE_NOT_RUN",
    "call_drops_s",
    "compare_bonding",
    "delivered_on_grid",
    "faster",
    "figure",
    "speed_up",
    "stalls_after_drops",
    "stalls_in",
]

BONDINGS = {"mlppp": "tcp", "mptcp": "mptcp"}
"""Each bonding's name in the output and the flows' ``transport`` that gives it."""

EMULATE_NOT_RUN = (
    "not run: only the simulator's side is compared (--emulate runs the kernel's too, in real "
    "time: about the transfer time per seed and bonding)"
)

#: A ``--set`` of a flow's ``[flows.mptcp]`` table.
_MPTCP_SET = re.compile(r"\s*flows\[\d+\]\.mptcp\b")

#: The goodput grid the stalls are read from: fine beside a 1500-byte packet's 5 s at 2400 bit/s.
GRID = "1s"
#: ``member_state`` code of a call that dropped unnoticed (crates/farlink-core trace.rs).
CALL_LOST = "call_lost"


#: A bundle's timers, scaled by :func:`speed_up` with its members' delay.
_BUNDLE_TIMERS = (
    "delay",
    "detection_delay",
    "t_d",
    "dial_time",
    "t_f",
    "reassembly_timeout",
    "blocked_for",
)


def speed_up(doc: dict[str, Any], factor: float) -> dict[str, Any]:
    """Scenario ``doc`` with its first link's bundle ``factor`` times faster: each member's rate
    multiplied, its delay and the bundle's timers (detection, redial, dial, reassembly) divided,
    its call drops ``factor`` times as frequent. A window of bytes covers the same share of a
    round trip, a transfer of the same size meets as many call drops per member, and a run
    takes ``factor`` times less real time in the emulator; what does not scale is the TCPs' own
    clocks (the minimum RTO, delayed ACKs), which weigh ``factor`` times more against the
    round trip. Bundles of members given one by one are refused (``ValueError``)."""
    if factor <= 0:
        raise ValueError("speed_up: the factor must be above 0")
    out = copy.deepcopy(doc)
    bundle = out["links"][0]["bundle"]
    if not isinstance(bundle.get("members", 1), int):
        raise ValueError("speed_up: a bundle of equal members (members = N) only")
    bundle["rate"] = f"{units.parse_bitrate_bps(bundle['rate']) * factor:.0f}bps"
    for key in _BUNDLE_TIMERS:
        if key in bundle:
            bundle[key] = f"{units.parse_duration_s(bundle[key], allow_zero=True) / factor}s"
    drops = bundle.pop("call_drop_rate", None)
    drops_per_s = bundle.get("call_drop_rate_per_s")
    if drops is not None:
        drops_per_s = units.parse_event_rate_per_s(drops)
    if drops_per_s is not None:
        bundle["call_drop_rate_per_s"] = float(drops_per_s) * factor
    return out


def call_drops_s(result: Result) -> list[float]:
    """When a member's call dropped (its state became ``call_lost``), in order."""
    from farlink._core import MEMBER_STATE_NAMES

    states = result.trace("member_state")
    lost = MEMBER_STATE_NAMES.index(CALL_LOST)
    return sorted(
        t / 1e9 for t, s in zip(states["time_ns"], states["state"], strict=True) if s == lost
    )


def stalls_after_drops(result: Result, flow: int = 0) -> list[float]:
    """For each call drop during flow ``flow``'s transfer, the longest time its receiving
    application got nothing, among the gaps that begin between that drop and the next (or the
    end of the transfer): what the drop cost before the bonding routed around it. The same for
    both engines: the bytes delivered on the :data:`GRID` (the simulator's ``goodput`` trace,
    or the emulator's reads put on it by :func:`delivered_on_grid`) and the drops of the
    ``member_state`` trace."""
    f = result.summary["flows"][flow]
    end_s = f["finish_s"] if f["finish_s"] is not None else result.summary["sim_time_s"]
    drops_s = [t for t in call_drops_s(result) if f["start_s"] <= t < end_s]
    times_s, delivered = delivered_on_grid(result, flow)
    return stalls_in(times_s, delivered, drops_s, end_s)


def delivered_on_grid(result: Result, flow: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Flow ``flow``'s bytes delivered at each point of the goodput grid, ``(times_s,
    delivered_bytes)``. The simulator's ``goodput`` trace is on it already (:func:`_run` asks
    for the :data:`GRID`); the emulator's holds the receiving application's reads, and each
    point of the grid gets what had been read by then: the simulator's sampling, from the first
    multiple of the grid at or after the flow's start to the end of the run."""
    goodput = result.trace("goodput")
    own = result.connections_of(flow)[0]
    mine = goodput["flow"] == own
    times_ns = goodput["time_ns"][mine]
    delivered = goodput["delivered_bytes"][mine]
    if result.engine != "emulate":
        return times_ns / 1e9, delivered
    times_ns = times_ns.astype(np.int64)
    step_ns = round(units.parse_duration_s(GRID) * 1e9)
    start_ns = round(result.summary["flows"][flow]["start_s"] * 1e9)
    end_ns = round(result.summary["sim_time_s"] * 1e9)
    grid_ns = np.arange(-(-start_ns // step_ns) * step_ns, end_ns + 1, step_ns, dtype=np.int64)
    if len(times_ns) == 0:
        return grid_ns / 1e9, np.zeros(grid_ns.shape, dtype=np.int64)
    last_read = np.searchsorted(times_ns, grid_ns, side="right") - 1
    return grid_ns / 1e9, np.where(last_read >= 0, delivered[np.maximum(last_read, 0)], 0)


def stalls_in(
    times_s: np.ndarray, delivered: np.ndarray, drops_s: list[float], end_s: float
) -> list[float]:
    """:func:`stalls_after_drops` from bytes ``delivered`` at ``times_s`` (in time order),
    the drops at ``drops_s`` (in order) and the transfer's end at ``end_s``."""
    # The instants the delivered count moved: a stall is the time between two of them.
    moved = np.concatenate([[True], np.diff(delivered) > 0])[: len(delivered)]
    moves_s = [*np.asarray(times_s)[moved].tolist(), end_s]
    stalls = []
    for k, drop in enumerate(drops_s):
        until = drops_s[k + 1] if k + 1 < len(drops_s) else end_s
        longest = 0.0
        for a, b in pairwise(moves_s):
            if b > drop and a < until:
                # A gap under way at the drop counts from the drop.
                longest = max(longest, b - max(a, drop))
        stalls.append(longest)
    return stalls


def _run(
    doc: dict[str, Any], transport: str, seed: int, size: str | None, sets: list[str]
) -> dict[str, Any]:
    from farlink.sim import simulate

    traced = [
        *sets,
        "trace={}",
        "trace.goodput=true",
        "trace.member_state=true",
        f'trace.goodput_interval="{GRID}"',
    ]
    result = simulate(doc, size=size, seed=seed, sets=traced, transport=transport)
    f = result.summary["flows"][0]
    stalls = stalls_after_drops(result)
    return result, {
        "seed": seed,
        "finished": f["finished"],
        "transfer_time_s": f["transfer_time_s"],
        "goodput_bps": f["goodput_bps"],
        "normalized_goodput": f["normalized_goodput"],
        "retransmissions": f["retransmissions"],
        "timeouts": f["timeouts"],
        "call_drops": len(stalls),
        "stall_after_drop_s": stalls,
    }


def _emulated(
    doc: dict[str, Any],
    transport: str,
    seed: int,
    size: str | None,
    sets: list[str],
    tcp: str | None,
) -> dict[str, Any]:
    """One emulated run's row, as :func:`_run`'s: its call drops during the transfer and the
    stall after each, from the emulator's ``goodput`` and ``member_state`` traces by the
    simulator's definition (:func:`stalls_after_drops`)."""
    from farlink.emulate import emulate

    result = emulate(doc, size=size, seed=seed, sets=sets, transport=transport, tcp=tcp)
    f = result.summary["flows"][0]
    stalls = stalls_after_drops(result)
    return {
        "seed": seed,
        "finished": f["finished"],
        "verified": f["verified"],
        "transfer_time_s": f["transfer_time_s"],
        "goodput_bps": f["goodput_bps"],
        "normalized_goodput": f["normalized_goodput"],
        "retransmissions": f["retransmissions"],
        "timeouts": f["timeouts"],
        "call_drops": len(stalls),
        "stall_after_drop_s": stalls,
        "subflows": f.get("subflows", []),
    }


def _mean(runs: list[dict[str, Any]]) -> dict[str, Any]:
    def avg(key: str) -> float | None:
        values = [r[key] for r in runs if r[key] is not None]
        return fmean(values) if values and len(values) == len(runs) else None

    stalls = [s for r in runs for s in (r["stall_after_drop_s"] or [])]
    return {
        "transfer_time_s": avg("transfer_time_s"),
        "goodput_bps": avg("goodput_bps"),
        "normalized_goodput": avg("normalized_goodput"),
        "call_drops": fmean(r["call_drops"] for r in runs),
        "stall_after_drop_s": fmean(stalls) if stalls else None,
        "finished": sum(r["finished"] for r in runs),
    }


def compare_bonding(
    doc: dict[str, Any],
    *,
    size: str | None = None,
    seeds: int = 3,
    sets: list[str] | tuple[str, ...] = (),
    first_runs: dict[str, Result] | None = None,
    emulate: bool = False,
    tcp: str | None = None,
) -> dict[str, Any]:
    """Run scenario ``doc`` (its first flow over a bundle) bonded by MLPPP and by Multipath TCP
    on the simulator, seeds ``seed``, ``seed + 1``, ... (the scenario's seed first), and return
    ``{"scenario", "size", "seeds", "mlppp": {"sim", "emulate"}, "mptcp": {...}, "emulate",
    "faster", "faster_emulate"}``: each ``sim`` holds the runs and their ``mean``; ``faster``
    names the bonding with the shorter mean transfer time on the simulator and by how much
    (:func:`faster`), ``faster_emulate`` on the emulator (``None`` when not run).
    ``first_runs``, if given, receives each bonding's run of the first seed (for
    :func:`figure`). ``emulate``: run each bonding and seed on the emulator too (its
    ``emulate``: the runs, their ``mean``, and per run each Multipath TCP subflow), with every
    flow's controller ``tcp`` (default the scenario's; the kernel must have it: Multipath TCP
    runs on the kernel's). Raises ``ScenarioError`` for a scenario either bonding refuses."""
    if seeds < 1:
        raise ValueError("--seeds: expected at least 1")
    checked = apply_overrides(doc, sets=list(sets))
    first = int(checked.get("seed", 1))
    seed_list = [first + k for k in range(seeds)]
    out: dict[str, Any] = {
        "scenario": checked.get("name"),
        "size": size,
        "seeds": seed_list,
    }
    for bonding, transport in BONDINGS.items():
        # `--set flows[i].mptcp...` is Multipath TCP's alone: a TCP flow refuses the table.
        own = [a for a in sets if transport == "mptcp" or not _MPTCP_SET.match(a)]
        done = [_run(doc, transport, s, size, own) for s in seed_list]
        if first_runs is not None:
            first_runs[bonding] = done[0][0]
        runs = [row for _, row in done]
        out[bonding] = {"sim": {"runs": runs, "mean": _mean(runs)}, "emulate": None}
        if emulate:
            emulated = [_emulated(doc, transport, s, size, own, tcp) for s in seed_list]
            out[bonding]["emulate"] = {"runs": emulated, "mean": _mean(emulated)}
    out["emulate"] = (
        f"run: kernel TCP through the emulated MLPPP bundle and the kernel's Multipath TCP over "
        f"the members' emulated links, controller {tcp or 'as the scenario says'}"
        if emulate
        else EMULATE_NOT_RUN
    )
    out["faster"] = faster(out, "sim")
    out["faster_emulate"] = faster(out, "emulate") if emulate else None
    return out


def faster(compared: dict[str, Any], engine: str) -> dict[str, Any] | None:
    """Which bonding had the shorter mean transfer time on ``engine`` (``sim`` or
    ``emulate``) in :func:`compare_bonding`'s ``compared``, and by how much (``by_fraction``:
    of the slower's time); ``None`` if either did not finish every run."""
    runs = [compared[b][engine] for b in ("mlppp", "mptcp")]
    if any(r is None or r["mean"]["finished"] < len(r["runs"]) for r in runs):
        return None
    a, b = (r["mean"]["transfer_time_s"] for r in runs)
    if a is None or b is None:
        return None
    winner, other = ("mptcp", a) if b < a else ("mlppp", b)
    best = min(a, b)
    return {
        "bonding": winner,
        "by_s": other - best,
        "by_fraction": (other - best) / other if other > 0 else 0.0,
    }


def figure(first_runs: dict[str, Result], path: Path, title: str) -> Path:
    """A PNG: the bytes each bonding delivered over time in its first seed's run, with the
    call drops marked (the same drops for both: one seed draws the same calls)."""
    from farlink.reports.plots import plt

    fig, ax = plt.subplots(figsize=(9.0, 4.4), dpi=120)
    for bonding, result in first_runs.items():
        goodput = result.trace("goodput")
        own = goodput["flow"] == result.connections_of(0)[0]
        t = goodput["time_ns"][own] / 1e9
        ax.plot(t, goodput["delivered_bytes"][own] / 1e6, label=bonding, linewidth=1.3)
    first = next(iter(first_runs.values()), None)
    if first is not None:
        end_s = max(r.summary["sim_time_s"] for r in first_runs.values())
        for k, drop in enumerate(t for t in call_drops_s(first) if t <= end_s):
            ax.axvline(
                drop, color="grey", alpha=0.4, linewidth=0.8, label="call drop" if k == 0 else None
            )
    ax.set_xlabel("time (s)")
    ax.set_ylabel("delivered (MB)")
    ax.set_title(title, fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=9)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
