"""The result document: one shape for what every engine returns, prints and stores.

``farlink simulate --json`` prints it, ``summary.json`` (written with ``--out``, by sweeps'
re-runs and by :meth:`farlink.results.result.Result.to_parquet`) holds it unchanged, and
``Result.summary`` is it. The aggregate figures of all flows sit at the top level beside the
run's metadata, with ``flows`` and ``links`` (one object each, as the core reports them) next to
them; ``engine`` says which engine produced it. The shape is versioned (``schema_version``) and
published as a JSON Schema, docs/result.schema.json, described in docs/results.md.

Version 1 was the core's own summary with the aggregate nested under ``aggregate`` and no
``transfer_time_s``; version 2 is this flat document; version 3 adds ``jain_index`` at the top
level (with two long-lived flows or more).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = [
    "AGGREGATE_FIELDS",
    "RESULT_SCHEMA_VERSION",
    "emulate_document",
    "model_document",
    "sim_document",
    "write_document",
]

RESULT_SCHEMA_VERSION = 3
"""Version of the result document (docs/results.md, docs/result.schema.json): its
``schema_version``."""

AGGREGATE_FIELDS = (
    "goodput_bps",
    "normalized_goodput",
    "bottleneck_bps",
    "delivered_bytes",
    "transfer_time_s",
    "retransmissions",
    "timeouts",
    "fast_retransmits",
    "data_segments_delivered",
    "drops",
    "jain_index",
)
"""The figures of all flows together, at the document's top level (``jain_index`` only with
two long-lived flows or more)."""


def _transfer_time_s(flows: list[dict[str, Any]]) -> float | None:
    """When the last bulk transfer delivered its last byte; None if any flow is unfinished or
    none is a bulk transfer."""
    times = [f.get("transfer_time_s") for f in flows]
    finished = bool(times) and all(t is not None for t in times)
    return max(times) if finished else None


def sim_document(
    core_summary: dict[str, Any], *, scenario: str | None, wall_time_s: float
) -> dict[str, Any]:
    """The result document of a packet-engine run, from the summary the core returns.

    The core's fields are kept as they are (crates/farlink-core/src/world/summary.rs documents
    them); only the aggregate moves up a level, and what the core leaves to the front end is
    added: ``transfer_time_s``, ``wall_time_s`` (the core reads no clock) and the names.
    """
    return _engine_document("sim", core_summary, scenario=scenario, wall_time_s=wall_time_s)


def emulate_document(
    emu_summary: dict[str, Any], *, scenario: str | None, wall_time_s: float
) -> dict[str, Any]:
    """The result document of an emulation, from the summary the emulator returns: the same
    shape as :func:`sim_document`'s, with the emulator's own figures under ``emulator``."""
    return _engine_document("emulate", emu_summary, scenario=scenario, wall_time_s=wall_time_s)


def _engine_document(
    engine: str, core_summary: dict[str, Any], *, scenario: str | None, wall_time_s: float
) -> dict[str, Any]:
    core = dict(core_summary)
    core.pop("schema_version", None)
    aggregate = core.pop("aggregate")
    name = core.pop("scenario_name", None)
    doc: dict[str, Any] = {
        "schema_version": RESULT_SCHEMA_VERSION,
        "engine": engine,
        "scenario": name if name is not None else scenario,
    }
    doc.update(aggregate)
    doc["transfer_time_s"] = _transfer_time_s(core.get("flows", []))
    doc["wall_time_s"] = wall_time_s
    doc.update(core)
    return doc


def model_document(payload: dict[str, Any], *, scenario: str | None = None) -> dict[str, Any]:
    """The result document of a closed-form prediction (``farlink predict``).

    ``payload`` holds ``model``, ``inputs`` and the model's own figures (docs/models.md), which
    stay at the top level; a predicted throughput is also given as ``goodput_bps``. A model
    sees no individual flow or link, so ``flows`` and ``links`` are empty.
    """
    doc: dict[str, Any] = {
        "schema_version": RESULT_SCHEMA_VERSION,
        "engine": "model",
        "scenario": scenario,
    }
    doc.update(payload)
    if "goodput_bps" not in doc and isinstance(doc.get("throughput_bps"), int | float):
        doc["goodput_bps"] = doc["throughput_bps"]
    doc.setdefault("flows", [])
    doc.setdefault("links", [])
    return doc


def write_document(doc: dict[str, Any], directory: str | Path) -> Path:
    """Write a result document unchanged as ``<directory>/summary.json``."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "summary.json"
    path.write_text(
        json.dumps(doc, indent=2, sort_keys=True, allow_nan=False) + "\n", encoding="utf-8"
    )
    return path
