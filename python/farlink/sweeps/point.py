"""One run of a sweep: a point's scenario through the simulator into the metrics of one row."""

from __future__ import annotations

import functools
import json
import platform
import socket
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from farlink.scenario import ScenarioError, _steps
from farlink.sweeps.sweep import DROP_CAUSES, Budget

__all__ = ["run_point"]


@functools.cache
def _git_revision() -> str | None:
    """``git rev-parse HEAD`` of the repository farlink is imported from, or None."""
    try:
        done = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    revision = done.stdout.strip()
    return revision if done.returncode == 0 and revision else None


@functools.cache
def _worker_provenance() -> dict[str, Any]:
    from farlink import __version__

    return {
        "farlink_version": __version__,
        "git_revision": _git_revision(),
        "host": socket.gethostname(),
        "python_version": platform.python_version(),
    }


def _lookup(summary: Any, path: str) -> float | None:
    # Result documents before schema 2 nested the aggregate; a sweep file written then still
    # names `aggregate.<figure>`, now at the top level.
    path = path.removeprefix("aggregate.")
    node = summary
    for step in _steps(path):
        if isinstance(step, int) and isinstance(node, list) and -len(node) <= step < len(node):
            node = node[step]
        elif isinstance(node, dict) and str(step) in node:
            node = node[str(step)]
        else:
            return None
    if isinstance(node, bool):
        return float(node)
    return float(node) if isinstance(node, int | float) else None


def run_point(
    scenario_json: str, extra_metrics: Sequence[str] = (), budget: Budget = (None, None)
) -> dict[str, Any]:
    """Run one scenario on the core; the metrics and provenance of its row, or its error.

    ``budget`` is the run budget, (events, memory bytes), None for the core's default; a run
    refused on it fails with ``BudgetError``. The run records no trace (docs/traces.md). Never
    raises for a run that fails: the row's ``error`` holds ``"<kind>: <message>"``.
    """
    from farlink import _core
    from farlink.results.result import Result
    from farlink.results.schema import sim_document
    from farlink.results.traces import TRACE_NAMES
    from farlink.sim import headline

    row: dict[str, Any] = {"error": None, "core_version": None, **_worker_provenance()}
    # A row is made of the summary: the run records no trace, whatever the scenario switches
    # on (traces only observe, so the summary is the same), and its memory stays bounded. The
    # trace table stays for the core to validate.
    started = time.perf_counter()
    try:
        doc = json.loads(scenario_json)
        if isinstance(doc, dict) and isinstance(doc.get("trace"), dict):
            doc["trace"] = {**doc["trace"], "all": False, **dict.fromkeys(TRACE_NAMES, False)}
            scenario_json = json.dumps(doc)
        raw = _core.run_scenario(scenario_json, max_events=budget[0], max_memory_bytes=budget[1])
    except ScenarioError as err:
        return {**row, "error": f"ScenarioError: {err}"}
    except Exception as err:  # the run fails, the sweep goes on; the row says why
        return {**row, "error": f"{type(err).__name__}: {err}"}
    wall_time_s = time.perf_counter() - started
    summary = sim_document(json.loads(raw["summary"]), scenario=None, wall_time_s=wall_time_s)
    top = headline(Result(summary=summary))
    drops = top.pop("drops")
    row.update(top)
    row.update({f"drops_{cause}": drops.get(cause, 0) for cause in DROP_CAUSES})
    row.update({path: _lookup(summary, path) for path in extra_metrics})
    row["core_version"] = summary.get("core_version")
    return row
