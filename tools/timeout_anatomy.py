"""What the connection looked like at each retransmission timeout of a capture.

    python tools/timeout_anatomy.py CAPTURE

For the busiest connection of CAPTURE (best one taken at the sender, which sees every copy),
one line per timeout that ``farlink.captures.rto`` infers: the segments outstanding and SACKed
just before it, how many copies of the timed-out segment had crossed the tap before (2 or more:
its resend was lost too), and the largest number of segments outstanding between the timeout
and the next retransmission (how far the window grew before the next loss). Last, a count of
the timeouts by kind. The rule is ``farlink.captures.anatomy``; docs/captures.md reads the
heavy cases of ``make validate-captures`` with it.
"""

from __future__ import annotations

import sys

from farlink.captures.analysis import analyze_capture
from farlink.captures.anatomy import timeout_views


def main(path: str) -> int:
    _, conns = analyze_capture(path)
    c = max(conns, key=lambda c: c.delivered_bytes)
    mss = c.mss_bytes or int(c.seq["len_bytes"].max())
    views = timeout_views(c)
    print(f"{path}: {len(views)} timeouts seen, {c.timeouts_unseen} unseen, MSS {mss}")
    print("time_s  outstanding  sacked  copies_before  largest_flight_until_next_retransmission")
    kinds: dict[str, int] = {}
    for v in views:
        kinds[v.kind] = kinds.get(v.kind, 0) + 1
        print(
            f"{v.time_s:7.3f}  {v.outstanding_bytes / mss:11.1f}  {v.sacked_bytes / mss:6.1f}  "
            f"{v.copies_before:13d}  {v.largest_flight_bytes // mss:d}"
        )
    print(", ".join(f"{n} {k}" for k, n in sorted(kinds.items())))
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
