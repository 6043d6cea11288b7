"""Run every reproduction and write their tables as one Markdown document.

``farlink reproduce --all`` calls :func:`run_all` then :func:`write_markdown`; the document is
written by that command, never by hand, so each number in it comes from a run anyone can repeat.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from farlink.reproduce import Entry, Reproduction, Row, entries, run

__all__ = ["FAST_SIM", "Outcome", "is_fast", "run_all", "write_markdown"]

# Simulations quick enough to run by default beside the closed-form reproductions: seed 003's
# (a few flows for seconds to minutes of simulated time each), seed 002's, and one Iridium trace.
FAST_SIM = frozenset(
    {
        "marchese-2.8mb",
        "marchese-table-1",
        "stpd-fig-3.8-3.13",
        "stpd-fig-3.15-3.17",
        "stpd-fig-3.19-3.20",
        "stpd-fig-3.22-3.24",
        "stpd-fig-4.8",
        "stpd-fig-4.13-4.17",
        "stpd-fig-4.19-4.22",
        "stpd-testbed-5.4",
        "zaghloul-fig-5.1",
    }
)


def is_fast(entry: Entry) -> bool:
    return entry.engine == "model" or entry.id in FAST_SIM


@dataclass(frozen=True)
class Outcome:
    """One reproduction's result, or the error that stopped it, and its wall time."""

    entry: Entry
    reproduction: Reproduction | None
    error: str | None
    seconds: float


def run_all(
    out_dir: Path,
    include_slow: bool = False,
    on_done: Callable[[Outcome], None] | None = None,
) -> list[Outcome]:
    """Run the fast reproductions (all with ``include_slow``), writing under ``out_dir``."""
    outcomes = []
    for entry in entries():
        if not (include_slow or is_fast(entry)):
            continue
        start = time.perf_counter()
        try:
            rep, error = run(entry.id, out_dir), None
        except Exception as err:  # a failed reproduction is reported, not fatal
            rep, error = None, f"{type(err).__name__}: {err}"
        outcome = Outcome(entry, rep, error, time.perf_counter() - start)
        outcomes.append(outcome)
        if on_done is not None:
            on_done(outcome)
    return outcomes


def _number(value: float | None) -> str:
    return "–" if value is None or value != value else f"{value:.4g}"


def _cells(row: Row) -> list[str]:
    error = row.relative_error
    within = {None: "–", True: "yes", False: "**no**"}[row.within_tolerance]
    if row.tolerance_rel is not None:
        within += f" (±{row.tolerance_rel:.0%})"
    difference = "–" if error is None else f"{error:+.1%}"
    label = row.label.replace("|", "\\|")
    return [label, row.unit, _number(row.published), _number(row.ours), difference, within]


def _tally(rep: Reproduction) -> str:
    checked = [r.within_tolerance for r in rep.rows if r.within_tolerance is not None]
    return f"{sum(checked)} of {len(checked)}" if checked else "–"


def write_markdown(outcomes: list[Outcome], path: Path, command: str) -> Path:
    """Write ``path``: an index, then per reproduction its table, notes and figure links."""
    from farlink import __version__

    # No clock and no timings in the document: the same core gives the same bytes.
    lines = [
        "# Reproductions of the seeds' tables and figures",
        "",
        f"Written by `{command}` (farlink {__version__}); do not edit by hand, run the",
        "command again. Each table puts the published number beside farlink's; *difference* is",
        "(ours − published) / published, and *within tolerance* compares it with the tolerance",
        "the reproduction declares (– where the paper gives no number or none is declared).",
        "",
        "| id | engine | rows | within tolerance (of rows checked) |",
        "|---|---|---:|---:|",
    ]
    for o in outcomes:
        rows = "failed" if o.reproduction is None else str(len(o.reproduction.rows))
        tally = "–" if o.reproduction is None else _tally(o.reproduction)
        anchor = o.entry.id.replace(".", "")
        lines.append(f"| [{o.entry.id}](#{anchor}) | {o.entry.engine} | {rows} | {tally} |")
    for o in outcomes:
        lines += ["", f"## {o.entry.id}", "", f"{o.entry.title} [{o.entry.source}]", ""]
        if o.reproduction is None:
            lines += [f"The reproduction failed: `{o.error}`"]
            continue
        lines += [
            "| label | unit | published | ours | difference | within tolerance |",
            "|---|---|---:|---:|---:|---|",
        ]
        lines += ["| " + " | ".join(_cells(row)) + " |" for row in o.reproduction.rows]
        if o.reproduction.notes:
            lines += ["", *(f"- {note}" for note in o.reproduction.notes)]
        for figure in o.reproduction.figures:
            link = Path(os.path.relpath(figure, path.parent)).as_posix()
            lines += ["", f"![{o.entry.id}: {figure.name}]({link})"]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
