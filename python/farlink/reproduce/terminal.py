"""A reproduction's verdict on the terminal: every column ``--json`` and docs/reproductions.md
carry (tolerance, within tolerance), what each published number is, the spread across seeds, and
where the JSON was written."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.table import Table

from farlink.reproduce import PUBLISHED_KINDS, Reproduction, Row

__all__ = ["print_verdict"]

COLUMNS = (
    "label", "unit", "published", "published is", "ours", "seeds: least-greatest",
    "difference", "tolerance", "within",
)  # fmt: skip


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def _cells(row: Row) -> tuple[str, ...]:
    error = row.relative_error
    within = {True: "yes", False: "[red]no[/red]", None: "-"}[row.within_tolerance]
    difference = "-" if error is None else f"{error:+.1%}"
    if row.within_tolerance is False:
        difference = f"[red]{difference}[/red]"
    spread = "-"
    if row.seeds is not None:
        low, high = row.spread if row.spread is not None else (None, None)
        spread = f"{row.seeds}: {_number(low)}-{_number(high)}"
    return (
        row.label,
        row.unit,
        _number(row.published),
        "-" if row.published is None else (row.published_kind or "-"),
        _number(row.ours),
        spread,
        difference,
        "-" if row.tolerance_rel is None else f"±{row.tolerance_rel:.0%}",
        within,
    )


def verdict(rep: Reproduction) -> str:
    """One sentence: how many checked rows are within their tolerance."""
    checked = [r.within_tolerance for r in rep.rows if r.within_tolerance is not None]
    if not checked:
        return "verdict: no row has both a published number and a tolerance to check"
    return f"verdict: {sum(checked)} of {len(checked)} checked rows within tolerance"


def print_verdict(rep: Reproduction, json_path: Path | None = None) -> None:
    """The reproduction's table, its verdict, notes, figures and the JSON file's path."""
    table = Table(title=f"{rep.id}: {rep.title}\n({rep.source})", title_justify="left")
    for column in COLUMNS:
        table.add_column(column, justify="left" if column in ("label", "published is") else "right")
    for row in rep.rows:
        table.add_row(*_cells(row))
    console = Console()
    console.print(table)
    console.print(verdict(rep), highlight=False)
    kinds = sorted({r.published_kind for r in rep.rows if r.published is not None} - {None})
    for kind in kinds:
        console.print(f"published is {kind}: {PUBLISHED_KINDS[kind]}", highlight=False)
    for note in rep.notes:
        console.print(f"- {note}", highlight=False)
    for figure in rep.figures:
        console.print(f"figure: {figure}", highlight=False)
    if json_path is not None:
        console.print(f"json: {json_path}", highlight=False)
