"""The run budget as the command line words it: the options read, the estimate shown, the
lines for a refused run and for one stopped early (``docs/scenarios.md``, "Run budget").

The budget itself (the estimate, the bounds, the checks while running) is the core's
(``crates/farlink-core/src/world/budget.rs``); this module only reads and writes its text.
"""

from __future__ import annotations

import math
import sys
from typing import Annotated, Any

import typer

from farlink import units
from farlink.cli.options import EXIT_BAD_INPUT, SizeOpt, read

__all__ = [
    "EXIT_INTERRUPTED",
    "estimate_payload",
    "parse_event_count",
    "refusal_options",
    "stop_line",
]

# The shell's convention for a process ended by SIGINT (128 + 2).
EXIT_INTERRUPTED = 130


def parse_event_count(text: str) -> int:
    """A number of events, ``5000000000`` or ``5e9``."""
    try:
        value = float(text)
    except ValueError:
        raise units.UnitError(f"cannot read {text!r}: expected a number of events") from None
    if not (1 <= value < 2**64) or value != int(value):
        raise units.UnitError(f"{text!r}: expected a whole number of events from 1 to 2**64 - 1")
    return int(value)


def estimate_payload(
    cost: dict[str, Any],
    budget_events: int | None,
    budget_memory_bytes: int | None,
    budget_disk_bytes: int | None = None,
) -> dict[str, Any]:
    """The core's estimate beside the budget it would be held to (the default unless given);
    the disk figures for a run that streams its traces to a folder."""
    events = budget_events or cost["default_max_events"]
    memory = budget_memory_bytes or cost["default_max_memory_bytes"]
    disk = budget_disk_bytes or cost["default_max_disk_bytes"]
    payload = {
        "events": cost["events"],
        "trace_rows": cost["trace_rows"],
        "memory_bytes": cost["memory_bytes"],
        "budget_events": events,
        "budget_memory_bytes": memory,
    }
    if cost["disk_bytes"] > 0:
        payload.update(disk_bytes=cost["disk_bytes"], budget_disk_bytes=disk)
    payload["within_budget"] = (
        cost["events"] <= events and cost["memory_bytes"] <= memory and cost["disk_bytes"] <= disk
    )
    return payload


def refusal_options(err: Any) -> str:
    """The options that would admit a refused run (``_core.BudgetError``): each bound it
    passes, raised to its estimate rounded up to one significant digit."""
    options = []
    if err.events > err.max_events:
        events = f"{_round_up(err.events):.0e}".replace("e+0", "e").replace("e+", "e")
        options.append(f"--budget-events {events}")
    if err.memory_bytes > err.max_memory_bytes:
        options.append(f"--budget-memory {_round_up(err.memory_bytes / 2**30):.0f}GiB")
    if err.disk_bytes > err.max_disk_bytes:
        options.append(f"--budget-disk {_round_up(err.disk_bytes / 2**30):.0f}GiB")
    return " ".join(options)


def stop_line(partial: str) -> tuple[str, bool]:
    """The line for a run stopped before its end (the summary's ``partial``), and whether it
    was interrupted (a warning) rather than stopped by its budget (an error)."""
    if partial.startswith("interrupted"):
        return f"farlink: warning: run {partial}; the result written is partial", True
    return (
        f"farlink: error: run stopped: {partial}; the result written is partial "
        "(raise the budget with --budget-events / --budget-memory / --budget-disk)",
        False,
    )


def _round_up(x: float) -> float:
    """x rounded up to one significant digit (a budget a little above an estimate)."""
    if x <= 0:
        return 1.0
    scale = 10 ** math.floor(math.log10(x))
    return math.ceil(x / scale) * scale


BudgetEventsOpt = Annotated[
    str | None,
    typer.Option(
        "--budget-events",
        help="Most events the run may take (default 1e9, a few minutes), e.g. 5e9.",
    ),
]
BudgetMemoryOpt = Annotated[
    str | None,
    typer.Option(
        "--budget-memory",
        help=f"Most memory the run may hold, traces included (default 2GiB). {SizeOpt}",
    ),
]
BudgetDiskOpt = Annotated[
    str | None,
    typer.Option(
        "--budget-disk",
        help=f"Most disk the run's traces may fill in its folder (default 16GiB). {SizeOpt}",
    ),
]


def budget_options(events: str | None, memory: str | None) -> dict[str, int | None]:
    """The run budget options as ``simulate`` takes them; None keeps the default."""
    return {
        "budget_events": None
        if events is None
        else read("--budget-events", parse_event_count, events),
        "budget_memory_bytes": None
        if memory is None
        else int(read("--budget-memory", units.parse_size_bytes, memory)),
    }


def stopped_early(partial: str) -> None:
    """A run stopped before its end: exit 130 for an interrupt, 2 for its budget."""
    line, interrupted = stop_line(partial)
    print(line, file=sys.stderr)
    raise typer.Exit(EXIT_INTERRUPTED if interrupted else EXIT_BAD_INPUT)
