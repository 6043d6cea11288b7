"""Which losses were a full queue's overflows, and which struck at random, before the tap and
after it.

The tap cannot see a copy lost before it, only the hole it leaves in the data it saw first
(:mod:`farlink.captures.loss`). Where the sender stamps its segments (TCP timestamps), each
segment's wait before the tap is known (:func:`farlink.captures.rtt.segment_waits`), and with
it the level of the queue before the tap when a hole was made. A tail-drop queue drops an
arrival only when it is full, so the segments admitted just before and just after the dropped
ones waited its whole length: the longest wait the connection shows. A random loss (a noisy
link, a policer's coin) strikes at any level of the queue.

**The rule.** The queue's full level is the wait the longest-waiting 1 % of the segments
reached (its 99th percentile: the longest wait itself is one segment's, pushed further by a
shaper's timer that fired late or by the tap's own scheduling). A hole is *at a full queue*
when the segment seen just below it or just above it waited at least that level less one tick
of the sender's TSval clock (the waits' resolution) and one packet's time at the bottleneck
(the queue drains one packet between the drop and the next admission; with offloads on, a
packet is the largest super-segment, which the queue admits or drops whole). Random losses fall at
a full queue too, as often as segments pass it: let ``f`` be the share of two consecutive
first transmissions of which one waited that long. Without overflows, the holes at a full
queue, ``h_in`` of ``h``, are binomial ``(h, f)``; an excess of less than two standard
deviations over ``h f`` is chance, and no hole is taken for an overflow (a window-limited
sender's queue stands at its highest without overflowing). Otherwise the holes below the
full level, ``h_out``, are all random, those at it are expected to number
``h_out f / (1 - f)``, and the overflows are ``h_in`` less that. Without timestamps no hole
is classified: all count as random, as the fit counted them before.

**After the tap.** A copy seen at the tap and never acknowledged was lost after it; the level
of the queues after the tap when it passed is the tap-to-tap RTT of the segments around it
(:func:`segment_tap_rtt`; a tail-drop queue after the tap overflows at the RTT's ceiling). The
same rule holds with that RTT for the wait: the full level is its 99th percentile over the
first transmissions an ACK was timed against, a lost copy is at a full queue when the segment
timed nearest before it or after it came within one packet's time at the bottleneck of that
level (the tap's clock needs no tick), and the chance correction is the same
(:func:`queue_overflows_after_tap`). A tap at the sender sees every loss after it, so there the
split is whole.

``farlink fit`` gives its one link the random losses only: its queue (the standing queue the
RTT showed, ``queue_bytes``) overflows by itself where the captured one did, and a loss rate
that held the overflows too would spread them over the whole transfer and drop them again.

What it gets wrong: the count is an estimate, not a list (which of the holes at a full queue
were the random ones is not known); random loss that depends on the queue's level breaks the
correction; a queue that overflowed at several levels (a limit in packets with segments of
several sizes) shows the lower overflows as random.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Sequence

    from farlink.captures.analysis import Connection

__all__ = [
    "FULL_PERCENTILE",
    "QueueOverflows",
    "queue_overflows",
    "queue_overflows_after_tap",
    "segment_tap_rtt",
]

FULL_PERCENTILE = 99.0  # the full level: the wait the longest-waiting 1 % of segments reached


@dataclass(frozen=True)
class QueueOverflows:
    """Of ``holes`` before the tap, ``overflows`` made by a full queue (module notes); the
    longest wait before the tap and the band below it that counts as full, in seconds."""

    holes: int
    overflows: int
    full_wait_s: float | None = None
    band_s: float | None = None
    at_full: int = 0  # holes at a full queue
    chance_at_full: float = 0.0  # expected there without overflows (binomial mean)
    chance_sd: float = 0.0  # and its standard deviation
    # "before" the tap (the level is the wait before it, from the TSvals) or "after" it (the
    # tap-to-tap RTT above its least); full_wait_s is the queue's wait when full either way.
    where: str = "before"

    def to_dict(self) -> dict[str, Any]:
        if self.where == "after":
            return {
                "lost_after_tap_overflows": self.overflows,
                "queue_after_tap_full_wait_s": self.full_wait_s,
                "queue_after_tap_full_band_s": self.band_s,
                "lost_after_tap_at_full_queue": self.at_full,
                "lost_after_tap_at_full_queue_by_chance": self.chance_at_full,
                "lost_after_tap_at_full_queue_by_chance_sd": self.chance_sd,
            }
        return {
            "lost_before_tap_overflows": self.overflows,
            "queue_full_wait_s": self.full_wait_s,
            "queue_full_band_s": self.band_s,
            "holes_before_tap_at_full_queue": self.at_full,
            "holes_at_full_queue_by_chance": self.chance_at_full,
            "holes_at_full_queue_by_chance_sd": self.chance_sd,
        }


def queue_overflows(
    conn: Connection, holes_before: Sequence[int], packet_s: float
) -> QueueOverflows:
    """Classify the holes before the tap of ``conn`` (each the index of the first transmission
    seen just below it) by the rule of the module notes; ``packet_s`` is one packet's time at
    the bottleneck."""
    waits = conn.seg_wait_s
    if waits is None or conn.ts_clock_hz is None or not len(holes_before):
        return QueueOverflows(len(holes_before), 0)
    originals = np.flatnonzero(~conn.seq["retransmission"])
    first_waits = waits[originals]
    known = first_waits[~np.isnan(first_waits)]
    full = float(np.percentile(known, FULL_PERCENTILE))
    band = 1 / conn.ts_clock_hz + packet_s
    # A hole is judged by the two first transmissions around it; so is the share ``f``, over
    # every two consecutive ones, so that both count alike.
    pairs = np.fmax(first_waits[:-1], first_waits[1:])
    share = float(np.mean(pairs[~np.isnan(pairs)] >= full - band)) if len(pairs) else 0.0
    at_full = 0
    for below in holes_before:
        k = int(np.searchsorted(originals, below))
        around = waits[[below, *originals[k + 1 : k + 2]]]
        at_full += bool(np.nanmax(around, initial=-np.inf) >= full - band)
    stats = _at_full_statistics(len(holes_before), at_full, share)
    return QueueOverflows(len(holes_before), stats[0], full, band, at_full, *stats[1:])


def _at_full_statistics(holes: int, at_full: int, share: float) -> tuple[int, float, float]:
    """The overflows among ``holes`` losses of which ``at_full`` came at a full queue, where
    ``share`` of the connection's segments pass it full (module notes), and the number chance
    puts there, with its standard deviation."""
    # Without overflows, at_full is binomial (holes, share): an excess within two of its
    # standard deviations is chance.
    mean, sd = holes * share, float(np.sqrt(holes * share * (1 - share)))
    random_at_full = (holes - at_full) * share / (1 - share) if share < 1 else 0.0
    overflows = max(0, round(at_full - random_at_full)) if at_full > mean + 2 * sd else 0
    return overflows, mean, sd


def segment_tap_rtt(conn: Connection) -> np.ndarray:
    """Each data segment's tap-to-tap RTT (NaN where no ACK was timed against it): the time
    the queues after the tap held it, plus a constant."""
    levels = np.full(len(conn.seq["time_s"]), np.nan)
    seg_t = conn.seq["time_s"]
    if not len(seg_t) or not len(conn.rtt["rtt_s"]):
        return levels
    sent_t = conn.rtt["time_s"] - conn.rtt["rtt_s"]
    # Each sample was timed against one segment: the one sent at the ACK's time less the RTT
    # (the nearest, for the rounding of that subtraction).
    k = np.clip(np.searchsorted(seg_t, sent_t), 1, max(len(seg_t) - 1, 1))
    nearer_below = np.abs(seg_t[k - 1] - sent_t) <= np.abs(
        seg_t[np.minimum(k, len(seg_t) - 1)] - sent_t
    )
    k = np.where(nearer_below, k - 1, np.minimum(k, len(seg_t) - 1))
    levels[k] = conn.rtt["rtt_s"]
    return levels


def queue_overflows_after_tap(
    conn: Connection, lost_copies: Sequence[int], packet_s: float
) -> QueueOverflows:
    """Classify the copies lost after the tap of ``conn`` (each the index of the lost copy
    among its data segments): the rule of the module notes with the tap-to-tap RTT as the level
    of the queue after the tap (its ceiling, where a tail-drop queue after the tap overflows)
    and the segments timed nearest before and after each lost copy as its neighbours."""
    if not len(lost_copies):
        return QueueOverflows(0, 0, where="after")
    levels = segment_tap_rtt(conn)
    sampled = np.flatnonzero(~np.isnan(levels) & ~conn.seq["retransmission"])
    if len(sampled) < 2:
        return QueueOverflows(len(lost_copies), 0, where="after")
    values = levels[sampled]
    full = float(np.percentile(values, FULL_PERCENTILE))
    # The tap's clock is fine; the level moves by one packet's time at the bottleneck between
    # a drop and the next admission.
    band = packet_s
    pairs = np.fmax(values[:-1], values[1:])
    share = float(np.mean(pairs >= full - band))
    at_full = 0
    for copy in lost_copies:
        k = int(np.searchsorted(sampled, copy))
        around = values[max(k - 1, 0) : k + 1]
        at_full += bool(around.max(initial=-np.inf) >= full - band)
    stats = _at_full_statistics(len(lost_copies), at_full, share)
    base = float(np.nanmin(levels))
    return QueueOverflows(
        len(lost_copies), stats[0], full - base, band, at_full, *stats[1:], where="after"
    )
