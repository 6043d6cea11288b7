"""What a connection looked like at each retransmission timeout its capture shows.

For each timeout :mod:`farlink.captures.rto` infers: the bytes outstanding and SACKed just
before it, how many copies of the timed-out segment (the one at the cumulative ACK) had
crossed the tap before it (two or more: its resend was lost too, with nothing sent behind it
for RACK to see the loss by), and the largest flight between the timeout and the next
retransmission of new data (how far the window grew before the next loss). Best read on a
capture taken at the sender, which sees every copy. ``tools/timeout_anatomy.py`` prints it;
``make validate-captures-heavy`` counts the kinds for the kernel's sender and the fitted flow.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from farlink.captures.analysis import Connection

FIRST_COPY_LOST = "first copy lost"
RESEND_LOST = "resend lost"


@dataclass(frozen=True)
class TimeoutView:
    """One timeout: when, what was outstanding and SACKed (bytes), the copies of the timed-out
    segment sent before it, the largest flight (bytes) until the next loss, and its kind."""

    time_s: float
    outstanding_bytes: int
    sacked_bytes: int
    copies_before: int
    largest_flight_bytes: int

    @property
    def kind(self) -> str:
        return RESEND_LOST if self.copies_before >= 2 else FIRST_COPY_LOST


def timeout_views(c: Connection) -> list[TimeoutView]:
    """The connection's timeouts, in time order (module notes)."""
    st, ss, sl, sr = c.seq["time_s"], c.seq["seq"], c.seq["len_bytes"], c.seq["retransmission"]
    at, aa = c.ack["time_s"], c.ack["ack"]
    ot, ob = c.outstanding["time_s"], c.outstanding["bytes"]
    views = []
    for t in c.timeouts_s:
        ia = int(np.searchsorted(at, t)) - 1
        cum = int(aa[ia]) if ia >= 0 else 0
        blocks = c.sack[ia] if ia >= 0 else ()
        before = int(np.searchsorted(st, t))
        high = int((ss[:before] + sl[:before]).max()) if before else cum
        sacked = sum(max(0, e - max(s, cum)) for s, e in blocks)
        copies = int(((ss[:before] <= cum) & (ss[:before] + sl[:before] > cum)).sum())
        later = np.nonzero(sr & (st > t))[0]
        # The timeout's own go-back resends come first; the next loss is a resend of new data.
        nxt = next((st[i] for i in later if ss[i] >= high), np.inf)
        span = (ot > t) & (ot < nxt)
        largest = int(ob[span].max()) if span.any() else 0
        views.append(TimeoutView(float(t), high - cum, sacked, copies, largest))
    return views


def timeout_kinds(c: Connection) -> dict[str, int]:
    """How many of the connection's timeouts were of each kind."""
    kinds = {FIRST_COPY_LOST: 0, RESEND_LOST: 0}
    for v in timeout_views(c):
        kinds[v.kind] += 1
    return kinds
