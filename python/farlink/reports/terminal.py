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


def print_rows(columns: list[str], rows: list[tuple], as_json: bool = False) -> None:
    """Rows of a query: a table for people, or a JSON list of objects."""
    if as_json:
        records = [dict(zip(columns, row, strict=True)) for row in rows]
        sys.stdout.write(json.dumps(plain(records), indent=2, default=str) + "\n")
        return
    table = Table(title_justify="left")
    for column in columns:
        table.add_column(column, justify="right")
    for row in rows:
        table.add_row(*(_format(value) for value in row))
    Console().print(table)


def _params_text(params: Mapping[str, Any]) -> str:
    return " ".join(f"{name}={_format(value)}" for name, value in params.items()) or "(one point)"


def print_sweep_report(sweep: Any, report: Any, as_json: bool) -> None:
    """What ``farlink sweep`` did (``farlink.sweeps.run.SweepReport``) and the failed runs."""
    payload = {
        "sweep": sweep.name,
        "out": str(report.out),
        "executor": report.executor,
        "points": report.points,
        "seeds": sweep.seeds,
        "runs": report.runs,
        "reused": report.reused,
        "computed": report.computed,
        "failed": report.failed,
        "wall_time_s": report.wall_time_s,
    }
    failures = [
        {"params": {a: row.get(a) for a in sweep.axes}, "replicate": row["replicate"],
         "seed": row["seed"], "error": row["error"]}
        for row in report.failures
    ]  # fmt: skip
    if as_json:
        print_json({**payload, "failures": failures})
        return
    print_quantities(f"sweep {sweep.name}", payload)
    _print_failures(failures)


def _print_failures(failures: list[dict[str, Any]], limit: int = 20) -> None:
    """One line per failed run (the first ``limit``), after the table."""
    for failure in failures[:limit]:
        where = _params_text(failure["params"])
        sys.stdout.write(f"failed: {where} replicate {failure['replicate']}: {failure['error']}\n")
    if len(failures) > limit:
        sys.stdout.write(f"... and {len(failures) - limit} more failed runs\n")


def print_sweep_summary(summary: Any, as_json: bool) -> None:
    """Mean ± half-width of the confidence interval per point and metric (``Summary``)."""
    if as_json:
        print_json(
            {
                "axes": summary.axes,
                "metrics": summary.metrics,
                "confidence": summary.confidence,
                "points": summary.points,
                "failures": summary.failures,
            }
        )
        return
    level = f"{summary.confidence:.0%}"
    table = Table(
        title=f"mean and {level} confidence interval (Student t) across seeds",
        title_justify="left",
    )
    for axis in summary.axes:
        table.add_column(axis, style="bold")
    width = max((len(metric) for metric in summary.metrics), default=6)
    table.add_column("metric", min_width=width, no_wrap=True)
    for column in ("runs", "n", "mean", "±"):
        table.add_column(column, justify="right")
    for point in summary.points:
        params = [_format(point["params"][axis]) for axis in summary.axes]
        runs = f"{point['runs']}" + (f" ({point['failed']} failed)" if point["failed"] else "")
        for k, metric in enumerate(summary.metrics):
            stat = point["metrics"][metric]
            half = stat["half_width"]
            table.add_row(
                *(params if k == 0 else [""] * len(params)),
                metric,
                runs if k == 0 else "",
                str(stat["n"]),
                _format(stat["mean"]),
                "-" if half is None else f"{half:.3g}",
                end_section=k == len(summary.metrics) - 1,
            )
    Console().print(table)
    _print_failures(summary.failures)
