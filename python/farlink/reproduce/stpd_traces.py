"""Reading seed 003's quantities off the packet engine's traces.

The thesis plots, per run, congestion windows in packets, the bottleneck router's queue in
packets, per-connection throughput over fixed intervals and round-trip times. These helpers turn
the engine's columnar traces (recorded on change, in nanoseconds) into those series, and hold the
TCP settings that make the engine's TCP behave like the ns-2 agents the thesis ran.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from farlink.results.result import Result

__all__ = [
    "PACKET_BYTES",
    "jain_index",
    "ns2_like_tcp",
    "queue_steps",
    "rtt_samples",
    "throughput_per_interval",
    "time_weighted_max",
    "time_weighted_mean",
    "window_steps",
]

# Seed 003's packets are 1000 bytes with headers (MSS 960 in the presets, no options).
PACKET_BYTES = 1000


def ns2_like_tcp(n_flows: int) -> list[str]:
    """Overrides giving every flow ns-2's TCP as the thesis ran it.

    One ACK per segment (ns-2's TCPSink), an initial window of one segment, neither SACK nor
    timestamps (so 1000-byte packets carry 960 bytes), window growth per ACK. The receive buffer
    is 1 MiB so that only the network limits the window, as in ns-2's default agents.
    """
    sets = []
    for i in range(n_flows):
        sets += [
            f"flows[{i}].tcp.delayed_ack=false",
            f"flows[{i}].tcp.initial_window_segments=1",
            f"flows[{i}].tcp.sack=false",
            f"flows[{i}].tcp.timestamps=false",
            f'flows[{i}].tcp.growth="per-ack"',
            f'flows[{i}].tcp.receive_buffer="1MiB"',
        ]
    return sets


def _link_index(result: Result, link: str) -> int:
    names = result.names["links"]
    if link not in names:
        raise KeyError(f"no link {link!r} in this result (links: {', '.join(names)})")
    return names.index(link)


def queue_steps(result: Result, link: str, forward: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """(time_s, packets waiting) of one link direction's queue, a step function from t = 0."""
    q = result.trace("queue")
    mask = (q["link"] == _link_index(result, link)) & (q["forward"] == forward)
    t = np.concatenate([[0.0], q["time_ns"][mask] / 1e9])
    v = np.concatenate([[0.0], q["pkts"][mask].astype(float)])
    return _hold_to_end(result, t, v)


def window_steps(
    result: Result, flow: int, packet_payload_bytes: int
) -> tuple[np.ndarray, np.ndarray]:
    """(time_s, congestion window in packets) of one flow, as the controller sets it."""
    c = result.trace("cwnd")
    mask = c["flow"] == flow
    t, v = c["time_ns"][mask] / 1e9, c["cwnd_bytes"][mask] / packet_payload_bytes
    return _hold_to_end(result, t, v)


def _hold_to_end(result: Result, t: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The step function with its last value repeated at the end of the run, so that a trace
    recorded on change covers the whole run when drawn."""
    end_s = float(result.summary["sim_time_s"])
    if len(t) == 0 or t[-1] >= end_s:
        return t, v
    return np.append(t, end_s), np.append(v, v[-1])


def time_weighted_mean(t: np.ndarray, v: np.ndarray, t0: float, t1: float) -> float:
    """Mean over [t0, t1] of the step function that holds v[i] from t[i] to t[i + 1]."""
    if t1 <= t0:
        raise ValueError(f"empty interval [{t0}, {t1}]")
    edges = np.clip(np.append(t, max(t1, t[-1])), t0, t1)
    return float(np.sum(v * np.diff(edges)) / (t1 - t0))


def time_weighted_max(t: np.ndarray, v: np.ndarray, t0: float, t1: float) -> float:
    """Largest value the step function takes inside [t0, t1]."""
    held = np.append(t[1:], np.inf) > t0
    inside = held & (t <= t1)
    return float(np.max(v[inside]))


def throughput_per_interval(
    result: Result, flow: int, interval_s: float, end_s: float, bytes_per_payload: float = 1.0
) -> tuple[np.ndarray, np.ndarray]:
    """(interval end, bit/s) of payload delivered to one flow's receiver per interval, scaled by
    ``bytes_per_payload`` (1000/960 counts the thesis's 1000-byte packets with their headers).

    Read from the goodput trace (cumulative bytes at multiples of its interval from the flow's
    start), so ``interval_s`` must be a multiple of the scenario's ``goodput_interval``.
    """
    g = result.trace("goodput")
    mask = g["flow"] == flow
    t = g["time_ns"][mask] / 1e9
    cum = g["delivered_bytes"][mask].astype(float)
    edges = np.arange(interval_s, end_s + 1e-9, interval_s)
    # Cumulative bytes at each edge: the last sample at or before it (0 before the flow starts).
    idx = np.searchsorted(t, edges + 1e-9, side="right") - 1
    at_edge = np.where(idx >= 0, cum[np.maximum(idx, 0)], 0.0)
    delivered = np.diff(np.concatenate([[0.0], at_edge]))
    return edges, delivered * 8 * bytes_per_payload / interval_s


def rtt_samples(result: Result, flow: int) -> tuple[np.ndarray, np.ndarray]:
    """(time_s, RTT in s) of every sample the flow's sender took."""
    r = result.trace("rtt")
    mask = r["flow"] == flow
    return r["time_ns"][mask] / 1e9, r["rtt_ns"][mask] / 1e9


def jain_index(x: Sequence[float]) -> float:
    """Jain's fairness index (sum x)^2 / (n sum x^2) of the active connections' throughputs."""
    a = np.asarray(x, dtype=float)
    if a.size == 0 or not np.any(a):
        return float("nan")
    return float(a.sum() ** 2 / (a.size * np.sum(a**2)))
