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

from farlink import _core
from farlink.result_schema import sim_document
from farlink.results import Result
from farlink.scenario import apply_overrides, load_scenario

__all__ = ["HEADLINE_FIELDS", "headline", "simulate"]


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
