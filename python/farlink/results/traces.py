"""Which traces a run recorded: the scenario's ``trace`` table read as the core reads it.

The core hands back every trace table, zero-length when switched off; an empty table is then
either "nothing happened" or "not recorded". This module tells them apart, so that asking for a
trace that was not switched on says how to switch it on instead of returning empty arrays.
Tables and columns: docs/traces.md.
"""

from __future__ import annotations

from typing import Any

__all__ = ["NOT_IN_ALL", "TRACE_NAMES", "TraceNotRecorded", "how_to_switch_on", "switched_on"]

TRACE_NAMES = (
    "cwnd", "seq", "ack", "rtt", "rto", "queue", "drops", "goodput", "member_state", "capacity",
    "queue_delay", "aqm",
)  # fmt: skip
"""The core's trace tables (``TraceConfig`` in ``crates/farlink-core/src/scenario/trace.rs``)."""

NOT_IN_ALL = ("queue_delay", "aqm")
"""The tables ``trace.all`` does not switch on: each is asked for by name (a row per packet and
hop, or per AQM state change; they came after the presets, whose ``all = true`` runs stay as
they were)."""


class TraceNotRecorded(KeyError):
    """A trace the run did not record; the message says how to switch it on."""

    def __str__(self) -> str:
        return str(self.args[0])


def switched_on(scenario: dict[str, Any]) -> set[str]:
    """The traces a scenario switches on: ``trace.all`` is the default of every one but
    :data:`NOT_IN_ALL`, each may say otherwise (as the core's ``trace_config`` reads it); none
    without a ``trace`` table."""
    table = scenario.get("trace")
    if not isinstance(table, dict):
        return set()
    every = table.get("all") is True
    return {
        name for name in TRACE_NAMES if table.get(name, every and name not in NOT_IN_ALL) is True
    }


def how_to_switch_on(name: str) -> str:
    all_too = "" if name in NOT_IN_ALL else " (or all = true)"
    return (
        f"trace {name!r} was not switched on in this run: add trace = {{ {name} = true }}"
        f"{all_too} to the scenario, --set trace.{name}=true on the command line, or "
        f"sets=['trace.{name}=true'] in farlink.simulate"
    )
