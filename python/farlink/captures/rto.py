"""Retransmission timeouts inferred from what a capture shows, not from a guessed minimum RTO.

The capture is replayed in time order, keeping the cumulative ACK ``snd_una``, the highest byte
sent ``snd_max``, the duplicate ACKs and SACK blocks since ``snd_una`` last advanced, and the
current recovery episode (fast or timeout) with its recovery point (``snd_max`` when it began)
and the bytes retransmitted in it. A retransmission is a **timeout** when it resends the oldest
outstanding byte (``snd_una``) and either

1. no episode is under way and nothing explains it: fewer than three duplicate ACKs and no SACK
   block since ``snd_una`` last advanced (a fast retransmit or RACK needs them), and the timer
   has run longer than the longest RTT since that advance (an RTO is never shorter: srtt +
   4 rttvar; this also keeps out a tail loss probe sent two smoothed RTTs after the last
   ACK); or
2. it comes after a silence: no ACK of any kind for longer than the longest RTT the connection
   showed (the sender's own where timestamps tell it, else tap to tap). Fast recovery, RACK and
   the go-back-N resends after a timeout all answer an arriving ACK within an RTT; only the
   timer resends the oldest byte after the ACKs have stopped. This catches a timeout inside a
   recovery episode: the timer firing again for a lost retransmission (backoff), or for a fast
   retransmission lost before the tap, which the tap never saw; or
3. it resends, inside an episode, a byte already retransmitted there, more than 1.5 times the
   longest RTT after both the previous copy and the last ACK that advanced, though duplicate
   ACKs kept arriving (they do not restart the timer): RACK resends a lost retransmission
   about an RTT and a quarter after it, the timer an RTO after it, and a go-back resend
   follows an advancing ACK at once.

**On the sender's clock.** Where the tap is at the sender (the ACKs it sees are those the sender
has: :attr:`farlink.captures.tap.TapPosition.acks_reach_sender_at_once`) and the sender stamps
its segments (TCP timestamps), the rules are judged at the time TCP sent each segment, not the
time it crossed the tap: its TSval at the rate of the sender's TSval clock
(:func:`farlink.captures.rtt.segment_waits`), to one tick of that clock, and the ACKs the sender
had by then. A tap below a local shaper (a tbf on the sender's own interface) sees a resend only
after the queue in front of it drains, and by then the ACKs that queue's data released have kept
the wire busy and brought SACK blocks: on the tap's clock no silence, no late resend, and a
timeout looks like recovery. On the sender's clock it is what it was: the oldest outstanding
byte resent an RTO after the ACK that last advanced, however busy the wire.

A timeout opens a timeout episode; its go-back-N resends of the following segments, each after
an ACK, are recovery, not timeouts.

Backoff tells how many timer firings the tap did not see (their copies lost before the tap):
consecutive timeouts of one byte are ``2r, 4r, ...`` apart when ``r`` was the interval before
the first; a gap ``G`` after an interval ``r`` spans ``n = log2(G / r + 2) - 1`` firings,
rounded, of which ``n - 1`` were unseen. Likewise before an episode's first seen timeout: with
``r`` the shortest wait from a restart to a first timeout in the connection (one firing), a
wait ``W`` spans ``n = log2(W / r + 1)`` firings, rounded. Both assume the RTO itself stayed
put between episodes (Linux's 200 ms floor holds it on a short path).

``min_rto_s``, when given, is a hint only: a candidate that comes sooner than it after the
timer's last restart (the last ACK that advanced) is not counted. A tail loss probe that resends
the only segment outstanding after more than the longest RTT (Linux waits at least 200 ms when
one segment is outstanding) looks like rule 1 and is counted as a timeout.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from dataclasses import dataclass, field

import numpy as np

from farlink.captures.intervals import merge_interval

__all__ = ["TimeoutEstimate", "infer_timeouts", "sender_times"]

TIMEOUT_TOLERANCE = 0.98  # a capture's clock and the sender's timer differ by a little
DUPTHRESH = 3
# A lost retransmission resent by RACK comes about an RTT and a quarter after it (the SACK of a
# later segment, plus the reordering window); a timer's resend an RTO after it, srtt + 4 rttvar
# and at least 200 ms on Linux, 1 s by RFC 6298.
REPEAT_FACTOR = 1.5


@dataclass(frozen=True)
class TimeoutEstimate:
    """Timeouts seen at the tap (times, and which data segments they were), and firings
    inferred from backoff that it did not see."""

    times_s: np.ndarray
    unseen: int
    first_waits_s: np.ndarray = field(default_factory=lambda: np.zeros(0))
    segments: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    @property
    def count(self) -> int:
        return len(self.times_s) + self.unseen


@dataclass
class _Episode:
    kind: str  # "fast" or "timeout"
    recover: int
    resent: list[tuple[int, int]] = field(default_factory=list)
    last_copy_t: dict[int, float] = field(default_factory=dict)
    interval_s: float = 0.0  # between the last two timer firings (for backoff)


def infer_timeouts(
    seg_t: np.ndarray,
    seq: np.ndarray,
    lens: np.ndarray,
    retx: np.ndarray,
    ack_t: np.ndarray,
    ack: np.ndarray,
    sack: list[tuple[tuple[int, int], ...]],
    *,
    longest_rtt_s: float,
    min_rto_s: float | None = None,
) -> TimeoutEstimate:
    """Apply the module's rules to a connection's data segments and ACKs (time-ordered)."""
    replay = _Replay(ack_t, ack, sack, float(seg_t[0]) if len(seg_t) else 0.0)
    found: list[int] = []
    for i in range(len(seq)):
        t = float(seg_t[i])
        replay.acks_until(t)
        s, e = int(seq[i]), int(seq[i] + lens[i])
        if retx[i]:
            if replay.retransmission(t, s, e, longest_rtt_s, min_rto_s):
                found.append(i)
        else:
            replay.new_data(t, e)
    unseen = replay.unseen + replay.unseen_first_firings()
    waits = np.array([w for w in replay.first_waits if w > 0], dtype=float)
    segments = np.array(found, dtype=np.int64)
    return TimeoutEstimate(np.array(replay.found, dtype=float), unseen, waits, segments)


def sender_times(seg_t: np.ndarray, seg_wait_s: np.ndarray, ts_clock_hz: float) -> np.ndarray:
    """Each data segment's time as TCP sent it, on the tap's clock (module notes, "On the
    sender's clock"): its tap time less its wait before the tap, plus one tick of the TSval
    clock (a TSval is the tick's start, and the ACK that released the segment may have come
    within that tick), never later than the tap saw it; the tap time where it has no TSval."""
    waits = np.nan_to_num(seg_wait_s, nan=0.0)
    return np.minimum(seg_t, seg_t - waits + 1 / ts_clock_hz)


class _Replay:
    """The sender's state as the tap shows it, and the timeouts found so far."""

    def __init__(self, ack_t: np.ndarray, ack: np.ndarray, sack: list, first_t: float):
        self.ack_t, self.ack, self.sack = ack_t, ack, sack
        self.j = 0
        self.snd_una = self.snd_max = 0
        self.dupacks, self.sacked = 0, False
        self.restart_t = first_t
        self.episode: _Episode | None = None
        self.found: list[float] = []
        self.unseen = 0
        self.first_waits: list[float] = []  # from the timer's restart to each episode's first

    def unseen_first_firings(self) -> int:
        """Firings before an episode's first seen timeout whose copies the tap never saw: a
        wait of ``(2**n - 1) r`` from the restart is ``n`` firings when the shortest wait of
        the connection, ``r``, is one."""
        waits = [w for w in self.first_waits if w > 0]
        if not waits:
            return 0
        r = min(waits)
        return sum(max(1, round(math.log2(w / r + 1))) - 1 for w in waits)

    def acks_until(self, t: float) -> None:
        while self.j < len(self.ack) and self.ack_t[self.j] <= t:
            a = int(self.ack[self.j])
            if a > self.snd_una:
                self.snd_una, self.dupacks, self.sacked = a, 0, False
                self.restart_t = float(self.ack_t[self.j])
                if self.episode is not None and a >= self.episode.recover:
                    self.episode = None
            elif a == self.snd_una and self.snd_max > self.snd_una:
                self.dupacks += 1
                self.sacked = self.sacked or bool(self.sack[self.j])
            self.j += 1

    def new_data(self, t: float, e: int) -> None:
        if self.snd_max <= self.snd_una:
            self.restart_t = t  # the timer starts with the first segment outstanding
        self.snd_max = max(self.snd_max, e)

    def retransmission(
        self, t: float, s: int, e: int, longest_rtt_s: float, min_rto_s: float | None
    ) -> bool:
        """Replay a retransmission at ``t``; True when it is a timeout."""
        una = self.snd_una
        head = s <= una < e
        last_ack_t = float(self.ack_t[self.j - 1]) if self.j else self.restart_t
        ep = self.episode
        # The timer runs at least an RTT from its restart: nothing sooner is the timer's.
        waited = t - self.restart_t > longest_rtt_s
        unexplained = ep is None and self.dupacks < DUPTHRESH and not self.sacked and waited
        silent = t - last_ack_t > longest_rtt_s
        previous = ep.last_copy_t.get(una) if ep is not None else None
        if ep is None or previous is None or not _covered(ep.resent, una):
            previous = None
        since = max(previous, self.restart_t) if previous is not None else t
        late_repeat = t - since > REPEAT_FACTOR * longest_rtt_s
        timer = unexplained or silent or late_repeat
        is_timeout = head and timer and _hint_ok(t, self.restart_t, min_rto_s)
        if is_timeout:
            if ep is not None and previous is not None:
                self._backoff(ep, t - previous)
                ep.kind = "timeout"
                ep.recover = max(ep.recover, self.snd_max)
            else:
                ep = _Episode("timeout", self.snd_max, interval_s=t - self.restart_t)
                self.first_waits.append(t - self.restart_t)
            self.found.append(t)
        elif ep is None and head:
            ep = _Episode("fast", self.snd_max)
        self.episode = ep
        if ep is not None:
            merge_interval(ep.resent, s, e)
            ep.last_copy_t[s] = t
            if head:
                ep.last_copy_t[una] = t
        return is_timeout

    def _backoff(self, ep: _Episode, gap: float) -> None:
        """Count the firings between two seen copies that the tap did not see."""
        if ep.interval_s > 0:
            n = max(1, round(math.log2(gap / ep.interval_s + 2) - 1))
            self.unseen += n - 1
            ep.interval_s *= 2**n


def _hint_ok(t: float, restart_t: float, min_rto_s: float | None) -> bool:
    return min_rto_s is None or t - restart_t >= TIMEOUT_TOLERANCE * min_rto_s


def _covered(intervals: list[tuple[int, int]], byte: int) -> bool:
    i = bisect_right(intervals, (byte, 1 << 62)) - 1
    return i >= 0 and intervals[i][0] <= byte < intervals[i][1]
