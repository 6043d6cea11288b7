"""The ``sim`` engine from Python: ``farlink.simulate(scenario, **overrides) -> Result``.

The simulation runs entirely in the Rust core with the GIL released; this module only prepares the
scenario document and wraps what comes back. Wall time is measured here, since the core reads no
clock.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from farlink import _core
from farlink.results import Result
from farlink.scenario import apply_overrides, load_scenario

__all__ = ["flow_rows", "headline", "interval_rows", "simulate"]


def simulate(
    scenario: str | Path | dict[str, Any],
    *,
    tcp: str | None = None,
    loss: float | None = None,
    duration: str | None = None,
    size: str | None = None,
    seed: int | None = None,
    sets: list[str] | tuple[str, ...] = (),
) -> Result:
    """Run a scenario (a preset name, a TOML path or a parsed document) on the packet engine.

    Overrides are those of ``farlink simulate``: ``tcp`` (tahoe, reno, newreno, sack select
    loss recovery; other names the congestion controller), ``loss`` (packet error rate of the
    scenario's ``lossy_link`` in the data direction), ``duration`` and ``size`` in human units,
    ``seed``, and ``sets`` of ``path=value`` applied last. Raises ``farlink.ScenarioError`` (from
    this module or the core, with the field path) for a scenario the core refuses.
    """
    doc = scenario if isinstance(scenario, dict) else load_scenario(scenario)
    doc = apply_overrides(
        doc, tcp=tcp, loss=loss, duration=duration, size=size, seed=seed, sets=sets
    )
    started = time.perf_counter()
    raw = _core.run_scenario(json.dumps(doc))
    wall_time_s = time.perf_counter() - started
    summary = json.loads(raw["summary"])
    summary["wall_time_s"] = wall_time_s
    return Result(
        summary=summary,
        traces=raw["traces"],
        scenario=doc,
        engine="sim",
        pcap=raw["pcap"],
        names={
            "flows": raw["flows"],
            "connections": [list(c) for c in raw["connections"]],
            "links": raw["links"],
            "nodes": raw["nodes"],
        },
    )


def headline(result: Result) -> dict[str, Any]:
    """The figures ``farlink simulate --json`` prints first, from the aggregate of all flows.

    ``transfer_time_s`` is the time the last bulk transfer delivered its last byte, or None when
    any flow is unfinished or no flow is a bulk transfer.
    """
    s = result.summary
    agg = s["aggregate"]
    times = [f.get("transfer_time_s") for f in s["flows"]]
    finished = bool(times) and all(t is not None for t in times)
    return {
        "goodput_bps": agg["goodput_bps"],
        "normalized_goodput": agg["normalized_goodput"],
        "delivered_bytes": agg["delivered_bytes"],
        "transfer_time_s": max(times) if finished else None,
        "retransmissions": agg["retransmissions"],
        "timeouts": agg["timeouts"],
        "drops": agg["drops"],
        "events": s["events"],
        "sim_time_s": s["sim_time_s"],
        "wall_time_s": s["wall_time_s"],
    }


#: How a flow summary's ``limited_by`` cause reads in a table.
LIMIT_WORDS = {
    "application": "application",
    "receive_window": "receive window",
    "send_buffer": "send buffer",
    "congestion_window": "congestion window",
    "link": "link",
}


def flow_rows(result: Result) -> list[dict[str, Any]]:
    """One row per flow, as ``farlink simulate`` prints them (iperf3's habit): goodput,
    retransmissions, timeouts, and what limited the sender most of the time with its share of
    the time counted (``limited_by`` and ``limited_s`` of the flow summary)."""
    rows = []
    for f in result.summary["flows"]:
        limited = f.get("limited_s", {})
        total = sum(limited.values())
        cause = f.get("limited_by")
        rows.append(
            {
                "flow": f["name"],
                "goodput_bps": f["goodput_bps"],
                "retransmissions": f["retransmissions"],
                "timeouts": f["timeouts"],
                "limited_by": LIMIT_WORDS.get(cause, cause) if cause else None,
                "limited_share": limited[cause] / total if cause and total > 0 else None,
            }
        )
    return rows


def interval_rows(result: Result) -> list[dict[str, Any]]:
    """Per flow and per interval of the scenario's ``trace.goodput_interval``: the goodput in
    the interval and the congestion window at its end (of the source's connection for a flow
    split at relays), from the ``goodput`` and ``cwnd`` traces, which must be on. Intervals
    start at the flow's start; the last one ends with the run."""
    goodput = result.trace("goodput")
    cwnd = result.trace("cwnd")
    rows = []
    for index, f in enumerate(result.summary["flows"]):
        conns = result.connections_of(index)
        at_dest = goodput["flow"] == conns[-1]
        times_ns = goodput["time_ns"][at_dest]
        delivered = goodput["delivered_bytes"][at_dest]
        of_source = cwnd["flow"] == conns[0]
        cwnd_times = cwnd["time_ns"][of_source]
        cwnd_bytes = cwnd["cwnd_bytes"][of_source]
        start_ns = round(f["start_s"] * 1e9)
        previous_ns, previous_bytes = start_ns, 0
        # The grid ends at the last multiple of the interval; a run that ended between two
        # (every flow finished) gets a last, shorter interval up to its end, as iperf3 does.
        end_ns = round(result.summary["sim_time_s"] * 1e9)
        samples = [*zip(times_ns.tolist(), delivered.tolist(), strict=True)]
        if not samples or samples[-1][0] < end_ns:
            samples.append((end_ns, f["delivered_bytes"]))
        for t_ns, d in samples:
            if t_ns <= previous_ns:
                continue
            k = int(np.searchsorted(cwnd_times, t_ns, side="right")) - 1
            rows.append(
                {
                    "flow": f["name"],
                    "start_s": previous_ns / 1e9,
                    "end_s": t_ns / 1e9,
                    "goodput_bps": (d - previous_bytes) * 8e9 / (t_ns - previous_ns),
                    "cwnd_bytes": int(cwnd_bytes[k]) if k >= 0 else None,
                }
            )
            previous_ns, previous_bytes = t_ns, d
    rows.sort(key=lambda r: r["end_s"])  # stable: flows in scenario order within an instant
    return rows
