"""Loss events of a TCP connection estimated from what the receiver's ACKs say it held.

Counting every retransmission (``retransmitted / first transmissions``) bounds the path's loss
from above: a go-back-N resend after a timeout, a retransmission that crossed the ACK of its
original and a timeout fired by a stalled (not lost) segment all count. :func:`estimate_loss`
counts instead the retransmissions that were *needed*: those whose data the receiver did not
already hold when the retransmission could have reached it. Each needed retransmission stands
for one lost copy of its data (the original, or an earlier retransmission), so their number is
the number of loss events, and their share of the data segments on the path is the loss rate.

A retransmission of bytes ``[s, e)`` sent (seen at the tap) at time ``t`` is **spurious** when

0. an ACK after it carries a D-SACK block (RFC 2883) covering ``[s, e)``: the receiver says it
   got the data twice; or
1. an ACK seen at the tap before ``t + rtt_min`` covered ``[s, e)``, by its cumulative ACK or
   one of its SACK blocks: such an ACK left the receiver before the retransmission could have
   arrived there (``rtt_min`` is the least RTT from the tap to the receiver and back), so the
   receiver held the data from an earlier copy; or
2. the cumulative ACK that first covered ``e`` jumped from ``a0 < s``, and the last copy of
   byte ``a0`` sent before that ACK could have been triggered (its time less ``rtt_min``) was
   sent before the retransmission. On a path that keeps order, that copy reached the receiver
   first, filled the hole at ``a0``, and the ACK it released already covered ``[s, e)``: the
   receiver held it before the retransmission arrived. This is what exposes the go-back-N
   resends of Reno after a timeout, which no ACK before them can reveal.

Rules 0 and 1 are the data's own arrival shown by the receiver; rule 2 infers it from order and
decides only where SACK blocks (rule 1) did not, which on a SACK connection is rare.

Every other retransmission is **needed**, including one whose covering ACK the capture never
saw (the end of the capture): the estimate errs towards loss where the evidence runs out.

**Where the loss happened.** A needed retransmission of data the tap had seen stands for a copy
lost *after* the tap (seen sent, never acknowledged): the latest copy seen holding its first
byte, counted once however many resends replace it (a lost super-segment, captured with
offloads on, is one copy resent as several segments). One of data the tap never saw stands for
a copy lost *before* it (the sender's own queue, a link upstream): one per hole in the data the
tap saw first, since the tap cannot tell how the sender cut a hole's bytes into segments (two
adjacent segments lost there count once). To those before the tap are added
the timer firings whose copies the tap never saw (:mod:`farlink.captures.rto`, from the backoff): a
segment lost k times before the tap counts k times when its timeouts show it. What stays
unseen: a fast-recovery resend lost before the tap and followed by another fast resend (no
timer to show it); so the count before the tap is a lower bound. ``loss_rate`` after the tap
is its copies over the data segments seen at the tap; before the tap, over those plus the
copies lost there.

The estimate fits a tap anywhere on the path. On a tap upstream of the losses (next to the
sender) every lost segment was seen at the tap and is followed by its needed retransmission.
On a tap downstream of (some of) the losses, a segment lost upstream never crosses the tap; its
retransmission does, carrying bytes the tap had not seen (``unseen_before``), and is needed by
rule 1 and 2 as well. The loss rate's denominator is every data segment that entered the lossy
part of the path: the data segments seen at the tap plus those lost before it.

What it gets wrong: a reordering path breaks rule 2's order argument (a spurious resend is
then taken for needed only if its ACK arrives after ``t + rtt_min``, otherwise it is still
recognised by rule 1); lost ACKs can merge two cumulative advances into one and hide a needed
retransmission behind rule 2 (counted as spurious: an underestimate of one event per merged
pair); a segment lost and never retransmitted (the capture ends first) is not counted. Without
DSACK (RFC 2883), a duplicate ACK released by a spurious retransmission says nothing new and is
not used; with SACK the blocks make rule 1 decide most cases before rule 2 is needed.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass
from typing import Any

import numpy as np

from farlink.captures.analysis import Connection
from farlink.captures.intervals import merge_interval

__all__ = ["LossEstimate", "estimate_loss"]


@dataclass(frozen=True)
class LossEstimate:
    """The loss figures of a connection, split by where the loss happened, and their counts."""

    data_segments: int
    first_transmissions: int
    retransmissions: int
    needed_retransmissions: int
    spurious_retransmissions: int
    unseen_before: int
    rtt_min_s: float
    lost_after_tap: int = 0
    unseen_timer_copies: int = 0
    dsack_spurious: int = 0
    lost_before_gaps: int | None = None
    # Each hole before the tap as the first transmission seen just below it (an index into
    # the connection's data segments), in sequence order: what farlink.captures.overflow reads.
    holes_before: tuple[int, ...] = ()
    # Each copy lost after the tap as the index of that copy among the connection's data
    # segments, in time order: what farlink.captures.overflow reads for the queue after the tap.
    lost_after_copies: tuple[int, ...] = ()

    @property
    def lost_before_tap(self) -> int:
        """Copies lost before the tap, at least: one per hole in what the tap saw first that a
        needed resend filled, and the timer firings backoff shows that never crossed it."""
        gaps = self.lost_before_gaps
        if gaps is None:  # built by hand without the split: every needed resend not after it
            gaps = self.needed_retransmissions - self.lost_after_tap
        return gaps + self.unseen_timer_copies

    @property
    def loss_rate_after_tap(self) -> float:
        """Copies lost after the tap / data segments seen at the tap."""
        return self.lost_after_tap / self.data_segments if self.data_segments else 0.0

    @property
    def loss_rate_before_tap(self) -> float:
        """Copies lost before the tap / data segments that reached that part of the path."""
        offered = self.data_segments + self.lost_before_tap
        return self.lost_before_tap / offered if offered else 0.0

    @property
    def loss_rate_path(self) -> float:
        """Both parts together: what one lossy link in place of the whole path would drop."""
        return 1 - (1 - self.loss_rate_before_tap) * (1 - self.loss_rate_after_tap)

    @property
    def upper_bound(self) -> float:
        """Retransmitted / first transmissions: every resend counted, spurious ones too."""
        return self.retransmissions / self.first_transmissions if self.first_transmissions else 0.0

    @property
    def loss_events(self) -> int:
        return self.needed_retransmissions

    @property
    def loss_rate(self) -> float:
        """Loss events / data segments that entered the lossy path (both parts of it)."""
        offered = self.data_segments + self.unseen_before
        return self.needed_retransmissions / offered if offered else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "loss_rate": self.loss_rate_after_tap,
            "loss_rate_before_tap": self.loss_rate_before_tap,
            "loss_rate_path": self.loss_rate_path,
            "lost_after_tap": self.lost_after_tap,
            "lost_before_tap": self.lost_before_tap,
            "loss_rate_upper_bound": self.upper_bound,
            "loss_events": self.loss_events,
            "data_segments": self.data_segments,
            "first_transmissions": self.first_transmissions,
            "retransmissions": self.retransmissions,
            "needed_retransmissions": self.needed_retransmissions,
            "spurious_retransmissions": self.spurious_retransmissions,
            "retransmissions_of_unseen_data": self.unseen_before,
            "unseen_timer_copies": self.unseen_timer_copies,
            "spurious_shown_by_dsack": self.dsack_spurious,
            "rtt_min_s": self.rtt_min_s,
        }


def estimate_loss(conn: Connection, rtt_min_s: float | None = None) -> LossEstimate:
    """Count the needed retransmissions of ``conn`` (module notes); ``rtt_min_s`` defaults to
    the least of the connection's RTT samples (0 without samples: rule 1 then only trusts ACKs
    seen before the retransmission itself)."""
    seg_t, seq, lens = conn.seq["time_s"], conn.seq["seq"], conn.seq["len_bytes"]
    retx = conn.seq["retransmission"]
    if rtt_min_s is None:
        samples = np.concatenate([conn.rtt["rtt_s"], conn.rtt_karn["rtt_s"]])
        rtt_min_s = float(samples.min()) if len(samples) else 0.0
    ack_t, ack = conn.ack["time_s"], conn.ack["ack"]
    # A D-SACK answers the copy it reports within an RTT: the longest the connection showed,
    # twice over for the delayed ACK and the queue.
    longest = conn.sender_rtt["rtt_s"] if conn.sender_rtt is not None else conn.rtt["rtt_s"]
    horizon_s = 2 * float(longest.max()) if len(longest) else 0.0
    evidence = _Evidence(ack_t, ack, conn.sack, seg_t, seq, lens)
    needed = unseen = dsack = 0
    lost_after: set[int] = set()  # the copies seen at the tap that the receiver never got
    gaps_before: set[int] = set()  # holes in what the tap saw first, one lost copy each at least
    originals = np.flatnonzero(~retx)  # first transmissions, in sequence order
    orig_seq = seq[originals]
    resent: list[int] = []
    seen: list[tuple[int, int]] = []  # byte ranges that crossed the tap so far
    first_sent: dict[int, float] = {}  # first time a segment starting there crossed the tap
    for i in range(len(seq)):
        s, e, t = int(seq[i]), int(seq[i] + lens[i]), float(seg_t[i])
        since = first_sent.setdefault(s, t)
        if retx[i]:
            was_seen = _covered(seen, s, e)
            if not was_seen:
                unseen += 1
            if evidence.dsack_after(s, e, t, horizon_s):
                dsack += 1
            elif not evidence.held_before(s, e, t, since, rtt_min_s):
                needed += 1
                below = int(originals[max(np.searchsorted(orig_seq, s, side="right") - 1, 0)])
                if was_seen:
                    lost_after.add(_copy_holding(s, below, resent, seq, lens))
                else:
                    gaps_before.add(below)
            resent.append(i)
        merge_interval(seen, s, e)
    total = len(seq)
    retransmitted = int(retx.sum())
    return LossEstimate(
        data_segments=total,
        first_transmissions=total - retransmitted,
        retransmissions=retransmitted,
        needed_retransmissions=needed,
        spurious_retransmissions=retransmitted - needed,
        unseen_before=unseen,
        rtt_min_s=rtt_min_s,
        lost_after_tap=len(lost_after),
        lost_before_gaps=len(gaps_before),
        holes_before=tuple(sorted(gaps_before)),
        lost_after_copies=tuple(sorted(lost_after)),
        unseen_timer_copies=conn.timeouts_unseen,
        dsack_spurious=dsack,
    )


class _Evidence:
    """What the ACKs seen at the tap say the receiver held, and when."""

    def __init__(self, ack_t, ack, sack, seg_t, seq, lens):
        self.ack_t = np.asarray(ack_t, dtype=float)
        self.raw_ack = ack
        self.high = np.maximum.accumulate(ack) if len(ack) else np.zeros(0, dtype=np.int64)
        self.sack = sack
        # SACK blocks by ACK, kept only for the ACKs that carry any.
        self.sack_idx = [i for i, blocks in enumerate(sack) if blocks]
        self.sack_t = [float(self.ack_t[i]) for i in self.sack_idx]
        self.seg_t, self.seq, self.ends = seg_t, seq, seq + lens

    def dsack_after(self, s: int, e: int, t: float, horizon_s: float) -> bool:
        """Rule 0: a D-SACK block (RFC 2883: a first block below the cumulative ACK, or inside
        the second) covering ``[s, e)`` in an ACK within ``horizon_s`` after ``t`` says the
        receiver got it twice."""
        k = bisect_left(self.sack_t, t)
        end = bisect_left(self.sack_t, t + horizon_s)
        for j in range(k, end):
            i = self.sack_idx[j]
            blocks = self.sack[i]
            lo, hi = blocks[0]
            first_is_dsack = hi <= self.raw_ack[i] or (
                len(blocks) > 1 and blocks[1][0] <= lo and hi <= blocks[1][1]
            )
            if first_is_dsack and lo <= s and e <= hi:
                return True
        return False

    def held_before(self, s: int, e: int, t: float, since: float, rtt_min_s: float) -> bool:
        """Whether the receiver held ``[s, e)`` before a resend at ``t`` reached it; ``since``
        is when the tap first saw a copy (no ACK before it can be about this data)."""
        horizon = t + rtt_min_s
        k = bisect_left(self.ack_t, horizon)  # ACKs strictly before the horizon
        if k and self.high[k - 1] >= e:
            return True  # rule 1, cumulative
        for j in range(bisect_left(self.sack_t, horizon) - 1, -1, -1):
            blocks = self.sack[self.sack_idx[j]]
            if any(lo <= s and e <= hi for lo, hi in blocks):
                return True  # rule 1, SACK
            if self.sack_t[j] < since:
                break  # older than the first copy: nothing there is about it
        return self._filled_earlier(s, e, t, rtt_min_s)

    def _filled_earlier(self, s: int, e: int, t: float, rtt_min_s: float) -> bool:
        """Rule 2: the ACK that first covered ``e`` was released by an earlier copy of its
        hole's first byte."""
        k = int(np.searchsorted(self.high, e, side="left"))
        if k >= len(self.high):
            return False  # never acknowledged in the capture
        a0 = int(self.high[k - 1]) if k else 0
        if a0 >= s:
            return False  # the hole began at this retransmission: it filled it
        trigger_by = float(self.ack_t[k]) - rtt_min_s
        # The last copy of byte a0 sent by then (segments are few per hole: scan backwards).
        j = bisect_left(self.seg_t, trigger_by, hi=len(self.seg_t)) - 1
        while j >= 0:
            if self.seq[j] <= a0 < self.ends[j]:
                return float(self.seg_t[j]) < t
            j -= 1
        return False


def _copy_holding(byte: int, original: int, resent: list[int], seq, lens) -> int:
    """The latest copy seen at the tap holding ``byte``: a resend of it, else its original."""
    for j in reversed(resent[-256:]):
        if seq[j] <= byte < seq[j] + lens[j]:
            return j
    return original


def _covered(intervals: list[tuple[int, int]], s: int, e: int) -> bool:
    """Whether ``[s, e)`` lies inside the union of the sorted, disjoint ``intervals``."""
    i = bisect_left(intervals, (s + 1,)) - 1
    return i >= 0 and intervals[i][0] <= s and e <= intervals[i][1]
