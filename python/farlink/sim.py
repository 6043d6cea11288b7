"""The ``sim`` engine from Python: ``farlink.simulate(scenario, **overrides) -> Result``.

The simulation runs entirely in the Rust core with the GIL released; this module only prepares the
scenario document and wraps what comes back. Wall time is measured here, since the core reads no
clock.

Every run is held to a budget (``docs/scenarios.md``, "Run budget"): the core estimates its events
and memory first and refuses one over the budget (``farlink._core.BudgetError``), and stops one that
outgrows it while running, or is interrupted (Ctrl-C), keeping what it has: the result's
``summary["partial"]`` then says why and when.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from farlink import _core
from farlink.result_schema import sim_document
from farlink.results import Result
from farlink.scenario import apply_overrides, load_scenario, to_core_json

__all__ = ["HEADLINE_FIELDS", "ProgressLine", "estimate", "headline", "simulate"]

ProgressCallback = Callable[[float, float, int], None]


def simulate(
    scenario: str | Path | dict[str, Any],
    *,
    tcp: str | None = None,
    loss: float | None = None,
    duration: str | None = None,
    size: str | None = None,
    seed: int | None = None,
    sets: list[str] | tuple[str, ...] = (),
    budget_events: int | None = None,
    budget_memory_bytes: int | None = None,
    progress: ProgressCallback | None = None,
) -> Result:
    """Run a scenario (a preset name, a TOML path or a parsed document) on the packet engine.

    Overrides are those of ``farlink simulate``: ``tcp`` (tahoe, reno, newreno, sack select
    loss recovery; other names the congestion controller), ``loss`` (packet error rate of the
    scenario's ``lossy_link`` in the data direction), ``duration`` and ``size`` in human units,
    ``seed``, and ``sets`` of ``path=value`` applied last. Raises ``farlink.ScenarioError`` (from
    this module or the core, with the field path) for a scenario the core refuses.

    ``budget_events`` and ``budget_memory_bytes`` replace the default run budget (10**9 events,
    2 GiB); ``farlink._core.BudgetError`` is raised for a run whose estimate is over it.
    ``progress(simulated_s, duration_s, events)`` is called about every 0.1 s of a long run.
    """
    doc = scenario if isinstance(scenario, dict) else load_scenario(scenario)
    doc = apply_overrides(
        doc, tcp=tcp, loss=loss, duration=duration, size=size, seed=seed, sets=sets
    )
    started = time.perf_counter()
    raw = _core.run_scenario(
        to_core_json(doc),
        max_events=budget_events,
        max_memory_bytes=budget_memory_bytes,
        progress=progress,
    )
    wall_time_s = time.perf_counter() - started
    name = doc.get("name") or (Path(scenario).stem if isinstance(scenario, str | Path) else None)
    return Result(
        summary=sim_document(json.loads(raw["summary"]), scenario=name, wall_time_s=wall_time_s),
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


def estimate(
    scenario: str | Path | dict[str, Any],
    *,
    tcp: str | None = None,
    loss: float | None = None,
    duration: str | None = None,
    size: str | None = None,
    seed: int | None = None,
    sets: list[str] | tuple[str, ...] = (),
) -> dict[str, Any]:
    """What :func:`simulate` with the same arguments would cost, from the core's estimate,
    without running it: ``events``, ``trace_rows``, ``memory_bytes`` and the default budget."""
    doc = scenario if isinstance(scenario, dict) else load_scenario(scenario)
    doc = apply_overrides(
        doc, tcp=tcp, loss=loss, duration=duration, size=size, seed=seed, sets=sets
    )
    return dict(_core.estimate_scenario(json.dumps(doc)))


HEADLINE_FIELDS = (
    "goodput_bps",
    "normalized_goodput",
    "delivered_bytes",
    "transfer_time_s",
    "retransmissions",
    "timeouts",
    "drops",
    "events",
    "sim_time_s",
    "wall_time_s",
)
"""The figures ``farlink simulate`` prints as its table (``--json`` prints the whole result),
and every sweep row carries."""


def headline(result: Result) -> dict[str, Any]:
    """The figures of a result's document that ``farlink simulate`` shows first."""
    return {key: result.summary.get(key) for key in HEADLINE_FIELDS}


class ProgressLine:
    """A one-line progress report for a terminal: simulated time of the duration and events/s,
    rewritten in place (``\\r``) and erased by :meth:`close`. Pass it as ``progress``."""

    def __init__(self, stream: TextIO):
        self.stream = stream
        self.started = time.perf_counter()
        self.width = 0

    def __call__(self, simulated_s: float, duration_s: float, events: int) -> None:
        elapsed = max(time.perf_counter() - self.started, 1e-9)
        share = simulated_s / duration_s if duration_s > 0 else 0.0
        line = (
            f"farlink: simulated {simulated_s:.6g} s of {duration_s:.6g} s ({share:.0%}), "
            f"{events / elapsed / 1e6:.1f} M events/s (Ctrl-C stops and keeps the result)"
        )
        self.width = max(self.width, len(line))
        self.stream.write("\r" + line.ljust(self.width))
        self.stream.flush()

    def close(self) -> None:
        if self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()
