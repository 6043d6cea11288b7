"""Output of the command line: one JSON object for machines, a rich table for people."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Mapping
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from farlink.reproduce import Reproduction


def plain(value: Any) -> Any:
    """Convert NumPy scalars and arrays to JSON-ready Python values (NaN and inf become None)."""
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return plain(value.tolist())
    if isinstance(value, np.bool_ | bool):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating | float):
        number = float(value)
        return number if math.isfinite(number) else None
    return value


def print_json(obj: Mapping[str, Any]) -> None:
    sys.stdout.write(json.dumps(plain(obj), indent=2, allow_nan=False) + "\n")


def _format(value: Any) -> str:
    value = plain(value)
    if isinstance(value, float):
        return f"{value:.6g}"
    if value is None:
        return "-"
    return str(value)


def print_quantities(title: str, quantities: Mapping[str, Any]) -> None:
    """A two-column table of named quantities (names carry their units)."""
    table = Table(title=title, show_header=False, title_justify="left")
    table.add_column("quantity", style="bold")
    table.add_column("value", justify="right")
    for name, value in quantities.items():
        table.add_row(name, _format(value))
    Console().print(table)


def print_reproduction(rep: Reproduction) -> None:
    table = Table(title=f"{rep.id}: {rep.title}\n({rep.source})", title_justify="left")
    for column in ("label", "unit", "published", "ours", "difference"):
        table.add_column(column, justify="left" if column == "label" else "right")
    for row in rep.rows:
        error = row.relative_error
        difference = "-" if error is None else f"{error:+.1%}"
        if row.within_tolerance is False:
            difference = f"[red]{difference}[/red]"
        table.add_row(row.label, row.unit, _format(row.published), _format(row.ours), difference)
    console = Console()
    console.print(table)
    for note in rep.notes:
        console.print(f"- {note}", highlight=False)
    for figure in rep.figures:
        console.print(f"figure: {figure}", highlight=False)
