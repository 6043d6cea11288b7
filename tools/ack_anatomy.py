"""How the receiver of a capture's busiest connection acknowledged its data.

    python tools/ack_anatomy.py CAPTURE [CAPTURE ...]

For each capture, over the receiver's ACKs that advance the cumulative ACK and carry no SACK
block (the in-order flow, where the receiver chooses between acknowledging at once and
delaying): the share covering one segment, two, and more, and how long after the segment
they acknowledge (the one ending at the ACK) they crossed the tap; for the one-segment ACKs,
the share whose segment carried PSH, and when the last of the others crossed the tap (seconds
from the capture's start). Last, the share of the sender's data segments with PSH.

A receiver that delays its ACKs (RFC 1122: at least every second full segment) covers two
segments in nearly every such ACK; a one-segment ACK within the round trip is an ACK sent at
once. Linux's receiver sends one after reading a full segment that carried PSH
(``tcp_measure_rcv_mss`` sets ``ICSK_ACK_PUSHED``, ``tcp_cleanup_rbuf`` then ACKs at once,
since Linux 6.7); docs/captures.md reads the captures of ``make validate-captures`` with it.
"""

from __future__ import annotations

import sys

import numpy as np

from farlink.captures.analysis import analyze_capture


def anatomy(path: str) -> dict[str, float]:
    """The shares and delays above for ``path`` (fractions; delays in microseconds)."""
    _, conns = analyze_capture(path)
    c = max(conns, key=lambda c: c.delivered_bytes)
    st, ss, sl = c.seq["time_s"], c.seq["seq"], c.seq["len_bytes"]
    push = c.push if c.push is not None else np.zeros(len(st), dtype=bool)
    mss = c.mss_bytes or int(sl.max())
    # The copy of each segment end last sent before an ACK: its time and PSH.
    ends: dict[int, tuple[float, bool]] = {}
    covers: list[int] = []
    delays: list[float] = []
    after_push: list[bool] = []
    at_s: list[float] = []
    last_ack: int | None = None
    i = 0
    for t, a, blocks in zip(c.ack["time_s"], c.ack["ack"], c.sack, strict=True):
        while i < len(st) and st[i] <= t:
            ends[int(ss[i] + sl[i])] = (float(st[i]), bool(push[i]))
            i += 1
        a = int(a)
        if last_ack is not None and a > last_ack and not blocks and a in ends:
            sent_s, pushed = ends[a]
            covers.append(round((a - last_ack) / mss))
            delays.append((t - sent_s) * 1e6)
            after_push.append(pushed)
            at_s.append(float(t))
        last_ack = a if last_ack is None else max(last_ack, a)
    n = np.asarray(covers)
    d = np.asarray(delays)
    one = n == 1
    unpushed = one & ~np.asarray(after_push, dtype=bool)
    return {
        "acks": float(len(n)),
        "one_segment": float(one.mean()),
        "two_segments": float((n == 2).mean()),
        "more": float((n > 2).mean()),
        "one_segment_after_psh": float(np.asarray(after_push)[one].mean()) if one.any() else 0.0,
        "one_segment_without_psh_last_s": float(np.asarray(at_s)[unpushed].max())
        if unpushed.any()
        else 0.0,
        "one_segment_delay_median_us": float(np.median(d[one])) if one.any() else 0.0,
        "two_segment_delay_median_us": float(np.median(d[n == 2])) if (n == 2).any() else 0.0,
        "data_segments_with_psh": float(push.mean()) if len(push) else 0.0,
    }


def main(paths: list[str]) -> int:
    print(
        "capture  acks  one  two  more  one_after_psh  one_without_psh_until_s  one_delay_us  "
        "two_delay_us  data_with_psh"
    )
    for path in paths:
        a = anatomy(path)
        print(
            f"{path}  {a['acks']:.0f}  {a['one_segment']:.2f}  {a['two_segments']:.2f}  "
            f"{a['more']:.2f}  {a['one_segment_after_psh']:.2f}  "
            f"{a['one_segment_without_psh_last_s']:.2f}  "
            f"{a['one_segment_delay_median_us']:.0f}  {a['two_segment_delay_median_us']:.0f}  "
            f"{a['data_segments_with_psh']:.2f}"
        )
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1:]))
