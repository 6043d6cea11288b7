"""RTT samples of a captured TCP connection: tap to tap, and the sender's own where it shows.

**Tap to tap** (``rtt_method`` ``"tap-to-tap karn"``, or ``"tap-to-tap karn+timestamps"`` when
both ends use TCP timestamps): each ACK that advances the cumulative ACK to ``a`` gives at most
one sample, timed against the segment whose arrival released it. In order, that is the segment
holding the last byte the ACK covers (``a - 1``), the segment Wireshark's ``ack_rtt`` and
tcptrace time an ACK against; a segment larger than the MSS (TSO/GRO at the tap) is timed as a
whole. An ACK carrying SACK blocks was released by a segment in its first block (RFC 2018
section 4: an out-of-order arrival, which also flushes a delayed ACK), so it is timed against
the segment holding that block's last byte; one whose first block is a D-SACK (below the
cumulative ACK) was released by a duplicate and gives no sample. Karn's rule keeps the sample
unambiguous:

* the byte ``a - 1`` sent more than once before the ACK: no sample, unless timestamps say which
  copy it was (the ACK's TSecr equals the TSval of exactly one copy; a receiver echoes the
  segment that advanced its left edge, RFC 7323 section 4.3, and answers a retransmission at
  once, so the echo names the copy);
* a retransmission of earlier bytes sent after that segment and before the ACK: the ACK was
  released by the retransmission that filled the hole, not by the segment at ``a - 1``, which
  the receiver held already. Without timestamps, no sample; with them, the sample is timed
  against the last such retransmission whose TSval the ACK echoes.

Why not "the first segment carrying the echoed TSval" (RFC 7323's sender-side rule): Linux's
timestamp clock ticks once per millisecond, so tens of segments share a TSval, and the first of
them can have crossed the tap milliseconds before the segment that released the ACK. The
echoed TSval is used to choose between copies, never to time.

**Wireshark's rule** (``rtt_method`` ``"wireshark ack_rtt"``, :func:`wireshark_ack_rtt`), for a
reader who compares with Wireshark's ``tcp.analysis.ack_rtt``: every ACK (advancing or not)
whose number equals the end of a segment not yet acknowledged is timed against the earliest
copy of that segment, retransmissions and all, without Karn's rule. So an ACK after a timeout
is timed against the first copy, and an ACK a hole's filler released against the segment
before the hole. farlink's own samples above keep Karn's rule; these are reported beside them
(``rtt_wireshark_*``) so that the two tools can be checked against each other on one capture.

**The sender's own RTT** (what its RTO sees, the queue before the tap included) where the sender
uses timestamps: a TSval is the sender's clock when it sent the segment, so the tap time less
TSval / (the clock's rate) is the time the segment waited before the tap, plus a constant. The
least of it over the connection is taken as no wait; each tap-to-tap sample plus the wait of the
segment it was timed against is a sender sample. Its resolution is one tick of the sender's
clock (1 ms on Linux); the ACK's way back from the tap to the sender is not in it (taken as
negligible: ACKs are small and queue little).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from heapq import heappop, heappush

import numpy as np

__all__ = ["RttSamples", "sender_rtt", "tap_rtt", "wireshark_ack_rtt"]

# The clock rates a TCP timestamp runs at in practice (RFC 7323 asks for 1 ms to 1 s per tick;
# Linux uses 1 kHz, and 1 MHz for the usec_ts option).
_TS_CLOCK_HZ = (1.0, 10.0, 100.0, 250.0, 1000.0, 1_000_000.0)


@dataclass(frozen=True)
class RttSamples:
    """Samples (``time_s`` of the ACK, ``rtt_s``) and the index of the segment each is timed
    against."""

    time_s: np.ndarray
    rtt_s: np.ndarray
    segment: np.ndarray
    method: str

    def as_series(self) -> dict[str, np.ndarray]:
        return {"time_s": self.time_s, "rtt_s": self.rtt_s}


def tap_rtt(
    seg_t: np.ndarray,
    seq: np.ndarray,
    lens: np.ndarray,
    seg_ok: np.ndarray,
    seg_tsval: np.ndarray | None,
    ack_t: np.ndarray,
    ack: np.ndarray,
    ack_ok: np.ndarray,
    ack_tsecr: np.ndarray | None,
    ack_sack: list[tuple[tuple[int, int], ...]] | None = None,
) -> RttSamples:
    """Tap-to-tap samples (module notes). Segments and ACKs in capture order; ``*_ok`` False
    where the packet's time is a clock step; ``seg_tsval``/``ack_tsecr`` with -1 for none, or
    None when the connection does not use timestamps; ``ack_sack`` the SACK blocks (relative)."""
    ends = seq + lens
    by_end = np.argsort(ends, kind="stable")
    sorted_ends = ends[by_end]
    max_len = int(lens.max()) if len(lens) else 0
    high = np.maximum.accumulate(np.concatenate([[0], ends]))[:-1]
    retx = seq < high
    retx_idx = np.flatnonzero(retx)
    retx_t = seg_t[retx_idx]
    use_ts = seg_tsval is not None and ack_tsecr is not None
    times, rtts, segs = [], [], []
    highest = -1
    for j in range(len(ack)):
        a = int(ack[j])
        if a <= highest:
            continue
        highest = a
        t = float(ack_t[j])
        if not ack_ok[j]:
            continue
        blocks = ack_sack[j] if ack_sack is not None else ()
        if blocks and blocks[0][1] <= a:
            continue  # a D-SACK: a duplicate released this ACK
        # The last byte of what released it: of the first SACK block when there is one (RFC
        # 2018: the block holding the segment that triggered the ACK), else a - 1.
        last = blocks[0][1] if blocks else a
        # Copies of that byte sent before the ACK: segments ending in [last, last + max_len).
        lo = bisect_left(sorted_ends, last)
        hi = bisect_left(sorted_ends, last + max_len)
        copies = sorted(int(i) for i in by_end[lo:hi] if seq[i] < last and seg_t[i] <= t)
        if not copies:
            continue
        echo = int(ack_tsecr[j]) if use_ts else -1
        k = _released_by(copies, seq, ends, a, retx_idx, retx_t, seg_t, t, seg_tsval, echo)
        if k is None or not seg_ok[k]:
            continue
        times.append(t)
        rtts.append(t - float(seg_t[k]))
        segs.append(k)
    method = "tap-to-tap karn+timestamps" if use_ts else "tap-to-tap karn"
    return RttSamples(
        np.array(times, dtype=float),
        np.array(rtts, dtype=float),
        np.array(segs, dtype=np.int64),
        method,
    )


def wireshark_ack_rtt(
    seg_t: np.ndarray, seq: np.ndarray, lens: np.ndarray, ack_t: np.ndarray, ack: np.ndarray
) -> RttSamples:
    """Samples by Wireshark's ``ack_rtt`` rule (module notes). Segments and ACKs in capture
    order; a segment and an ACK at the same instant are taken segment first.

    Wireshark keeps a list of the segments not yet acknowledged; an ACK equal to an entry's end
    is timed against it (the oldest such, as its walk from the newest ends there), and every
    entry ending at or below the ACK leaves the list. Only the ends matter to the samples, so
    the earliest copy not yet acknowledged is kept per end, and a heap of the ends drops them."""
    earliest: dict[int, tuple[float, int]] = {}
    ends: list[int] = []
    times, rtts, segs = [], [], []
    i = 0
    for j in range(len(ack)):
        t = float(ack_t[j])
        while i < len(seg_t) and seg_t[i] <= t:
            end = int(seq[i] + lens[i])
            if lens[i] > 0 and end not in earliest:
                earliest[end] = (float(seg_t[i]), i)
                heappush(ends, end)
            i += 1
        a = int(ack[j])
        hit = earliest.get(a)
        while ends and ends[0] <= a:
            earliest.pop(heappop(ends), None)
        if hit is not None:
            times.append(t)
            rtts.append(t - hit[0])
            segs.append(hit[1])
    return RttSamples(
        np.array(times, dtype=float),
        np.array(rtts, dtype=float),
        np.array(segs, dtype=np.int64),
        "wireshark ack_rtt",
    )


def _released_by(
    copies: list[int],
    seq: np.ndarray,
    ends: np.ndarray,
    a: int,
    retx_idx: np.ndarray,
    retx_t: np.ndarray,
    seg_t: np.ndarray,
    t: float,
    tsval: np.ndarray | None,
    echo: int,
) -> int | None:
    """The segment whose arrival released the ACK to ``a``, or None where it is ambiguous."""
    # A retransmission of bytes below a - 1 between the first copy and the ACK filled a hole.
    lo = bisect_right(retx_t, float(seg_t[copies[0]]))
    hi = bisect_left(retx_t, t)
    copy_set = set(copies)
    fillers = [int(i) for i in retx_idx[lo:hi] if seq[i] < a and int(i) not in copy_set]
    if fillers:
        if echo < 0 or tsval is None:
            return None
        matching = [i for i in fillers if tsval[i] == echo]
        return matching[-1] if matching else None
    if len(copies) == 1:
        return copies[0]
    if echo < 0 or tsval is None:
        return None
    matching = [i for i in copies if tsval[i] == echo]
    return matching[0] if len(matching) == 1 else None


def segment_waits(
    seg_t: np.ndarray, seg_tsval: np.ndarray, seg_ok: np.ndarray
) -> tuple[np.ndarray, float] | None:
    """Each segment's wait before the tap, from its TSval (module notes), the least taken as
    none (NaN for a segment without a TSval or with a stepped time), and the TSval clock's
    rate; None with too few TSvals to tell that rate."""
    have = (seg_tsval >= 0) & seg_ok
    if have.sum() < 10:
        return None
    t, v = seg_t[have], seg_tsval[have].astype(float)
    # TSval is 32-bit and may wrap: unwrap in capture order.
    v = np.concatenate([[v[0]], v[0] + np.cumsum((np.diff(v) + 2**31) % 2**32 - 2**31)])
    span_t = float(t[-1] - t[0])
    if span_t <= 0:
        return None
    slope = float(v[-1] - v[0]) / span_t
    if slope <= 0:
        return None
    hz = min(_TS_CLOCK_HZ, key=lambda h: abs(np.log(slope / h)))
    wait_all = np.full(len(seg_t), np.nan)
    wait_all[have] = t - v / hz
    wait_all -= np.nanmin(wait_all)
    return wait_all, hz


def sender_rtt(
    tap: RttSamples, seg_t: np.ndarray, seg_tsval: np.ndarray, seg_ok: np.ndarray
) -> tuple[RttSamples, float] | None:
    """The sender's own samples from the tap-to-tap ones (module notes) and the TSval clock
    rate used; None without timestamps or with too few segments to tell the clock's rate."""
    waits = segment_waits(seg_t, seg_tsval, seg_ok)
    if waits is None or not len(tap.rtt_s):
        return None
    wait_all, hz = waits
    wait = wait_all[tap.segment]
    keep = ~np.isnan(wait)
    return (
        RttSamples(
            tap.time_s[keep],
            tap.rtt_s[keep] + wait[keep],
            tap.segment[keep],
            f"tap-to-tap + wait before the tap from TSval ({hz:g} Hz clock)",
        ),
        hz,
    )
