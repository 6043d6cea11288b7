"""A sweep checked whole before its first run: every point's document through the core's own
validation, so that a path or value the core refuses stops the sweep with one line (naming the
point, the field, and the paths of the scenario that come close) instead of failing every run."""

from __future__ import annotations

import difflib
from typing import Any

from farlink import _core
from farlink.scenario import ScenarioError, _steps, to_core_json
from farlink.sweeps.sweep import OPTION_AXES, Sweep, SweepError, point_doc

__all__ = ["check_points", "paths_near"]


def _paths(node: Any, prefix: str = "") -> list[str]:
    found = []
    if isinstance(node, dict):
        for key, value in node.items():
            path = f"{prefix}.{key}" if prefix else str(key)
            found += [path, *_paths(value, path)]
    elif isinstance(node, list):
        for index, value in enumerate(node):
            path = f"{prefix}[{index}]"
            found += [path, *_paths(value, path)]
    return found


def _exists(doc: Any, path: str) -> bool:
    node = doc
    try:
        for step in _steps(path):
            node = node[step]
    except (KeyError, IndexError, TypeError, ScenarioError):
        return False
    return True


def _last(path: str) -> str:
    return path.rsplit(".", 1)[-1].split("[", 1)[0]


def paths_near(doc: dict[str, Any], path: str, most: int = 6) -> list[str]:
    """Paths of ``doc`` that end like ``path`` (the same or a similar last name)."""
    name = _last(path)
    paths = _paths(doc)
    same = [p for p in paths if _last(p) == name]
    names = sorted({_last(p) for p in paths})
    close = set(difflib.get_close_matches(name, names, n=3, cutoff=0.6))
    similar = [p for p in paths if _last(p) in close and p not in same]
    return (same + similar)[:most]


def _blame(sweep: Sweep, message: str) -> str:
    """A hint for the axes and fixed paths the base scenario does not hold and the error names."""
    hints = []
    for path in [*sweep.grid, *sweep.fixed]:
        if path in OPTION_AXES or _exists(sweep.scenario, path) or _last(path) not in message:
            continue
        where = sweep.origins.get(path, path)
        near = paths_near(sweep.scenario, path)
        found = f"paths near it: {', '.join(near)}; " if near else ""
        hints.append(
            f"{where}: {path!r} is not in the scenario ({found}options: {', '.join(OPTION_AXES)})"
        )
    return "; ".join(hints)


def check_points(sweep: Sweep) -> int:
    """Check every point's document with the core's parser (resolving it, as a run would
    parse it); the number of points checked.

    Raises :class:`SweepError` for the first point the core refuses: its parameters, the core's
    path-qualified message and, for a path the scenario does not hold, the paths that come close.
    """
    points = sweep.points()
    for point in points:
        try:
            _core.resolve_scenario(to_core_json(point_doc(sweep, point.params)))
        except (ScenarioError, _core.ScenarioError) as err:
            params = ", ".join(f"{k}={v!r}" for k, v in point.params.items()) or "every point"
            hint = _blame(sweep, str(err))
            raise SweepError(
                f"point {params}: {err}{f' ({hint})' if hint else ''}; no run was started"
            ) from None
    return len(points)
