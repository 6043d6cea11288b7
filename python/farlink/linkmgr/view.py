"""What the dashboard shows, as one JSON-ready dict built from a tracker.

The page at ``/`` and its live updates draw only from :func:`snapshot`, so the browser never
re-derives a figure: uptime, the primary, each member's state and signal, the state timeline
with the call drops on it, and the bundle's throughput (rates between successive byte-counter
samples, averaged into at most :data:`THROUGHPUT_BINS` bins).

State colours. Figure 7.12 of seed 000 ("each state is represented by a different color") did not
survive the extraction of the seed, so the colours are chosen here: a traffic-light order from
working to broken, with grey for a member not in use, and every state also written as a word so
that colour is never the only cue (:data:`STATE_COLORS`).
"""

from __future__ import annotations

import itertools
from typing import Any

from farlink.linkmgr.tracker import Tracker

__all__ = ["STATE_COLORS", "THROUGHPUT_BINS", "THROUGHPUT_WINDOW_S", "snapshot", "throughput_bps"]

STATE_COLORS = {
    "idle": "#9e9e9e",  # grey: not in use
    "connecting": "#f2c200",  # yellow: dialling
    "connected": "#2e9d3a",  # green: carrying the bundle
    "dropped": "#f07d1a",  # orange: call lost, waiting T_d to redial
    "failed": "#d32f2f",  # red: a dial failed, waiting T_f
    "blocked": "#6a3d9a",  # purple: too many failures, out for a long while
}
UNKNOWN_COLOR = "#455a64"
THROUGHPUT_BINS = 300
THROUGHPUT_WINDOW_S = 30.0
"""The current throughput is the rate over the last this many seconds of counter samples."""


def _totals_at(points: list[tuple[float, float, float]], t: float) -> tuple[float, float]:
    """Byte totals at time ``t``, linear between samples, held after the last one."""
    if t <= points[0][0]:
        return points[0][1], points[0][2]
    for (t0, tx0, rx0), (t1, tx1, rx1) in itertools.pairwise(points):
        if t0 <= t <= t1:
            f = (t - t0) / (t1 - t0) if t1 > t0 else 1.0
            return tx0 + f * (tx1 - tx0), rx0 + f * (rx1 - rx0)
    return points[-1][1], points[-1][2]


def throughput_bps(tracker: Tracker) -> tuple[float, float]:
    """(tx, rx) bundle rate in bit/s over the log's last :data:`THROUGHPUT_WINDOW_S`.

    The window ends at the log's last event, not at the last byte sample: the daemon samples a
    counter only while it changes, so a counter without recent samples has stood still.
    """
    points = tracker.throughput_points
    if len(points) < 2 or tracker.last_s is None:
        return 0.0, 0.0
    end = max(tracker.last_s, points[-1][0])
    start = max(end - THROUGHPUT_WINDOW_S, points[0][0])
    if end <= start:
        return 0.0, 0.0
    recent = [p for p in points if p[0] >= start - THROUGHPUT_WINDOW_S]
    tx0, rx0 = _totals_at(recent if len(recent) >= 2 else points, start)
    tx1, rx1 = points[-1][1], points[-1][2]
    return 8.0 * (tx1 - tx0) / (end - start), 8.0 * (rx1 - rx0) / (end - start)


def _series(tracker: Tracker, start: float) -> list[list[float]]:
    """Bundle throughput over the log: [t since start, tx bit/s, rx bit/s] per bin."""
    points = tracker.throughput_points
    if len(points) < 2:
        return []
    first, last = points[0][0], points[-1][0]
    width = max((last - first) / THROUGHPUT_BINS, 1.0)
    bins: dict[int, list[float]] = {}
    for (t0, tx0, rx0), (t1, tx1, rx1) in itertools.pairwise(points):
        if t1 <= t0:
            continue
        key = int((t1 - first) // width)
        acc = bins.setdefault(key, [0.0, 0.0, 0.0])
        acc[0] += t1 - t0
        acc[1] += tx1 - tx0
        acc[2] += rx1 - rx0
    series = [
        [round(first + (k + 0.5) * width - start, 3), 8 * tx / dt, 8 * rx / dt]
        for k, (dt, tx, rx) in sorted(bins.items())
    ]
    end = tracker.last_s or last
    if end - last > 2 * width:  # counters stood still since their last sample
        series += [[round(last + width - start, 3), 0.0, 0.0], [round(end - start, 3), 0.0, 0.0]]
    return series


def snapshot(tracker: Tracker, source: str = "") -> dict[str, Any]:
    """The dashboard's data (see the module docstring); times in seconds since the log began."""
    start = tracker.first_s or 0.0
    duration = tracker.duration_s
    tx_bps, rx_bps = throughput_bps(tracker)
    members = []
    for m in tracker.members:
        members.append(
            {
                "index": m.index,
                "name": m.name,
                "state": m.state,
                "color": STATE_COLORS.get(m.state, UNKNOWN_COLOR),
                "since_s": None if m.state_since_s is None else m.state_since_s - start,
                "signal_bars": m.signal_bars,
                "handover": m.handover,
                "reply_s": m.reply_s,
                "primary": m.index == tracker.primary,
                "uptime_fraction": tracker.up_s(m) / duration if duration > 0 else 0.0,
                "drops": m.drops,
                "dials": m.dials,
                "dials_connected": m.dials_connected,
                "tx_bytes": m.tx_bytes,
                "rx_bytes": m.rx_bytes,
                "held": m.held,
                "last_error": m.last_error,
                "segments": [[round(t - start, 3), s] for t, s in m.segments],
                "drop_times_s": [round(t - start, 3) for t in m.drop_times_s[-500:]],
            }
        )
    primary = tracker.primary
    return {
        "log": source,
        "id": tracker.last_id,
        "events": tracker.events,
        "start_unix_s": tracker.first_s,
        "last_unix_s": tracker.last_s,
        "duration_s": duration,
        "daemon": tracker.daemon_state,
        "primary": None if primary is None else tracker.member(primary).name,
        "all_up_fraction": tracker.all_up_s / duration if duration > 0 else 0.0,
        "any_up_fraction": tracker.any_up_s / duration if duration > 0 else 0.0,
        "members_up": sum(m.up for m in tracker.members),
        "primary_drops": tracker.primary_drops,
        "drops": sum(m.drops for m in tracker.members),
        "tx_bps": tx_bps,
        "rx_bps": rx_bps,
        "throughput": _series(tracker, start),
        "colors": STATE_COLORS,
        "members": members,
    }
