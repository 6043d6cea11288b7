"""Competing traffic's front-end part (docs/traffic.md): a short-flow class's size CDF given as
a file (``size = { cdf = "FILE" }``) is read here into the points the core takes,
``[[size_bytes, cumulative_probability], ...]``. The core reads no file.

The file has two columns, a size in bytes and its cumulative probability (0 to 1), separated
by spaces, tabs or a comma, one point a line; blank lines and lines starting with ``#`` are
skipped. A relative name is relative to the scenario file's folder.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from farlink._core import ScenarioError

__all__ = ["read_cdf", "read_size_cdfs"]

_SPLIT = re.compile(r"[\s,]+")


def _error(where: str, message: str) -> ScenarioError:
    err = ScenarioError(f"{where}: {message}")
    err.path, err.message = where, message
    return err


def read_cdf(path: Path, where: str) -> list[list[float]]:
    """The points of the CDF file at ``path``; ``where`` names the field in errors."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise _error(where, f"cannot read {path} ({err.strerror})") from None
    points = []
    for n, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        cols = _SPLIT.split(line)
        try:
            if len(cols) != 2:
                raise ValueError
            points.append([float(cols[0]), float(cols[1])])
        except ValueError:
            raise _error(
                where,
                f"{path}:{n}: expected two numbers, a size in bytes and its cumulative "
                f"probability, got {line!r}",
            ) from None
    return points


def read_size_cdfs(doc: dict[str, Any], base: Path) -> dict[str, Any]:
    """``doc`` with every flow's ``app.size.cdf`` file name replaced by the file's points."""
    flows = doc.get("flows")
    if not isinstance(flows, list):
        return doc
    for i, flow in enumerate(flows):
        app = flow.get("app") if isinstance(flow, dict) else None
        size = app.get("size") if isinstance(app, dict) else None
        if isinstance(size, dict) and isinstance(size.get("cdf"), str):
            where = f"flows[{i}].app.size.cdf"
            size["cdf"] = read_cdf(base / size["cdf"], where)
    return doc
