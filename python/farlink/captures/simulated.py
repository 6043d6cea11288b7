"""A simulation read like a capture: the same :class:`Connection` per flow, and its call drops.

``analyze_result(result)`` builds the connections from a run's ``seq``, ``ack`` and ``rtt``
traces; ``simulate_for_analysis(scenario)`` runs a scenario with those traces switched on, as
``farlink analyze --sim`` draws it beside a capture.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from farlink._core import MEMBER_STATE_NAMES
from farlink.captures.analysis import Connection, build_connection

__all__ = [
    "MEMBER_STATE_NAMES",
    "SimulatedRun",
    "analyze_result",
    "call_drop_times_s",
    "simulate_for_analysis",
]


def analyze_result(result: Any, *, min_rto_s: float | None = None) -> list[Connection]:
    """The same :class:`Connection` per flow from a ``farlink.simulate`` Result's traces.

    The retransmission flags and RTT samples are the sender's own (``seq`` and ``rtt`` traces);
    the ``ack`` trace holds the ACKs the sender took in, so no duplicate ACKs are seen.
    """
    seq_tr, ack_tr, rtt_tr = (result.trace(n) for n in ("seq", "ack", "rtt"))
    flows = result.names.get("flows", [])
    out = []
    for f in sorted(set(seq_tr["flow"].tolist())):
        s = seq_tr["flow"] == f
        a = ack_tr["flow"] == f
        r = rtt_tr["flow"] == f
        seg_t = seq_tr["time_ns"][s] / 1e9
        ack_t = ack_tr["time_ns"][a] / 1e9
        out.append(
            build_connection(
                name=flows[f] if f < len(flows) else f"flow {f}",
                source="simulation",
                seg_t=seg_t,
                seq=seq_tr["seq"][s].astype(np.int64),
                lens=seq_tr["len_bytes"][s].astype(np.int64),
                ack_t=ack_t,
                ack=ack_tr["ack"][a].astype(np.int64),
                retransmission=seq_tr["retransmission"][s],
                rtt={
                    "time_s": rtt_tr["time_ns"][r] / 1e9,
                    "rtt_s": rtt_tr["rtt_ns"][r] / 1e9,
                },
                rtt_method="sender",
                span=(0.0, max([*seg_t[-1:], *ack_t[-1:], 0.0])),
                min_rto_s=min_rto_s,
            )
        )
    return out


# Entered at the instant of a call drop (the core names the states, farlink._core exports them).
_CALL_LOST = MEMBER_STATE_NAMES.index("call_lost")


def call_drop_times_s(result: Any) -> np.ndarray:
    """Times (s) of the call drops of every bundle member in a simulation, from its
    ``member_state`` trace (empty when the scenario has no bundle or the trace is off)."""
    states = result.traces.get("member_state")
    if not states or not len(states["time_ns"]):
        return np.zeros(0)
    lost = states["state"] == _CALL_LOST
    return np.sort(states["time_ns"][lost] / 1e9)


@dataclass(frozen=True)
class SimulatedRun:
    """A scenario's run analysed like a capture."""

    scenario: str
    """The scenario's name (or what named it, when it has none)."""
    seed: int
    connections: list[Connection]
    """One per flow that sent data, named ``sim <flow>``."""
    drops_s: np.ndarray
    """Times of the call drops of every bundle member (s)."""


def simulate_for_analysis(
    scenario: str | Mapping[str, Any],
    *,
    sets: Sequence[str] = (),
    seed: int | None = None,
    min_rto_s: float | None = None,
) -> SimulatedRun:
    """Run ``scenario`` with the traces the analysis needs; its connections and call drops.

    Raises :class:`farlink.ScenarioError` for a scenario the core refuses and the core's
    ``ConservationError`` for a run that lost track of a packet.
    """
    from farlink.scenario import apply_overrides, load_scenario
    from farlink.sim import simulate

    doc = apply_overrides(load_scenario(scenario), seed=seed, sets=sets)
    trace = doc.get("trace") if isinstance(doc.get("trace"), dict) else {}
    if not trace.get("all"):
        # Only what the figures need: the sender's segments, ACKs, RTT, member states.
        doc["trace"] = {**trace, "seq": True, "ack": True, "rtt": True, "member_state": True}
    result = simulate(doc)
    connections = [
        replace(c, name=f"sim {c.name}") for c in analyze_result(result, min_rto_s=min_rto_s)
    ]
    return SimulatedRun(
        scenario=str(result.scenario.get("name") or scenario),
        seed=result.summary["seed"],
        connections=connections,
        drops_s=call_drop_times_s(result),
    )
