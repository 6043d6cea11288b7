"""What the connection looked like at each retransmission timeout of a capture.

    python tools/timeout_anatomy.py CAPTURE

For the busiest connection of CAPTURE (best one taken at the sender, which sees every copy),
one line per timeout that ``farlink.captures.rto`` infers: the segments outstanding and SACKed
just before it, how many copies of the timed-out segment had crossed the tap before (2 or more:
its resend was lost too), and the largest number of segments outstanding between the timeout
and the next retransmission (how far the window grew before the next loss). Last, a count of
the timeouts by kind. docs/captures.md reads the heavy cases of ``make validate-captures`` with
it.
"""

from __future__ import annotations

import sys

import numpy as np

from farlink.captures.analysis import analyze_capture


def main(path: str) -> int:
    _, conns = analyze_capture(path)
    c = max(conns, key=lambda c: c.delivered_bytes)
    mss = c.mss_bytes or int(c.seq["len_bytes"].max())
    st, ss, sl, sr = c.seq["time_s"], c.seq["seq"], c.seq["len_bytes"], c.seq["retransmission"]
    at, aa = c.ack["time_s"], c.ack["ack"]
    ot, ob = c.outstanding["time_s"], c.outstanding["bytes"]
    print(f"{path}: {len(c.timeouts_s)} timeouts seen, {c.timeouts_unseen} unseen, MSS {mss}")
    print("time_s  outstanding  sacked  copies_before  largest_flight_until_next_retransmission")
    kinds: dict[str, int] = {}
    for t in c.timeouts_s:
        ia = int(np.searchsorted(at, t)) - 1
        cum = int(aa[ia]) if ia >= 0 else 0
        blocks = c.sack[ia] if ia >= 0 else ()
        before = int(np.searchsorted(st, t))
        high = int((ss[:before] + sl[:before]).max())
        sacked = sum(max(0, e - max(s, cum)) for s, e in blocks)
        copies = int(((ss[:before] <= cum) & (ss[:before] + sl[:before] > cum)).sum())
        later = np.nonzero(sr & (st > t))[0]
        # The timeout's own go-back resends come first; the next loss is a resend of new data.
        nxt = next((st[i] for i in later if ss[i] >= high), np.inf)
        span = (ot > t) & (ot < nxt)
        largest = int(ob[span].max() // mss) if span.any() else 0
        kind = "resend lost" if copies >= 2 else "first copy lost"
        kinds[kind] = kinds.get(kind, 0) + 1
        print(
            f"{t:7.3f}  {(high - cum) / mss:11.1f}  {sacked / mss:6.1f}  {copies:13d}  {largest:d}"
        )
    print(", ".join(f"{n} {k}" for k, n in sorted(kinds.items())))
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
