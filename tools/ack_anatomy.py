"""How the receiver of a capture's busiest connection acknowledged its data.

    python tools/ack_anatomy.py CAPTURE [CAPTURE ...]

For each capture, over the receiver's ACKs that advance the cumulative ACK and carry no SACK
block (the in-order flow, where the receiver chooses between acknowledging at once and
delaying): the share covering one segment, two, and more, and how long after the segment
they acknowledge (the one ending at the ACK) they crossed the tap; for the one-segment ACKs,
the share whose segment carried PSH. Last, the share of the sender's data segments with PSH.

A receiver that delays its ACKs (RFC 1122: at least every second full segment) covers two
segments in nearly every such ACK; a one-segment ACK within the round trip is an ACK sent at
once. Linux's receiver sends one after reading a full segment that carried PSH
(``tcp_measure_rcv_mss`` sets ``ICSK_ACK_PUSHED``, ``tcp_cleanup_rbuf`` then ACKs at once,
since Linux 6.7); docs/captures.md reads the captures of ``make validate-captures`` with it.
"""

from __future__ import annotations

import sys

import numpy as np

from farlink.captures.read import read_capture

PSH = 0x08


def anatomy(path: str) -> dict[str, float]:
    """The shares and delays above for ``path`` (fractions; delays in microseconds)."""
    packets = read_capture(path).packets
    volume: dict[tuple, int] = {}
    for p in packets:
        key = (p.src, p.sport, p.dst, p.dport)
        volume[key] = volume.get(key, 0) + p.payload
    src, sport, dst, dport = max(volume, key=volume.__getitem__)
    # Data segments by the sequence number they end at: the last copy's time and PSH.
    ends: dict[int, tuple[float, bool]] = {}
    pushed = data = 0
    mss = 0
    last_ack: int | None = None
    covers: list[int] = []
    delays: list[float] = []
    after_push: list[bool] = []
    for p in packets:
        if (p.src, p.sport, p.dst, p.dport) == (src, sport, dst, dport) and p.payload:
            data += 1
            pushed += bool(p.flags & PSH)
            mss = max(mss, p.payload)
            ends[p.seq + p.payload] = (p.time_s, bool(p.flags & PSH))
        elif (p.src, p.sport, p.dst, p.dport) == (dst, dport, src, sport) and p.has_ack:
            if last_ack is not None and p.ack > last_ack and not p.sack and p.ack in ends:
                sent_s, push = ends[p.ack]
                covers.append(round((p.ack - last_ack) / mss))
                delays.append((p.time_s - sent_s) * 1e6)
                after_push.append(push)
            last_ack = p.ack if last_ack is None else max(last_ack, p.ack)
    n = np.asarray(covers)
    d = np.asarray(delays)
    one = n == 1
    return {
        "acks": float(len(n)),
        "one_segment": float(one.mean()),
        "two_segments": float((n == 2).mean()),
        "more": float((n > 2).mean()),
        "one_segment_after_psh": float(np.asarray(after_push)[one].mean()) if one.any() else 0.0,
        "one_segment_delay_median_us": float(np.median(d[one])) if one.any() else 0.0,
        "two_segment_delay_median_us": float(np.median(d[n == 2])) if (n == 2).any() else 0.0,
        "data_segments_with_psh": pushed / data if data else 0.0,
    }


def main(paths: list[str]) -> int:
    print("capture  acks  one  two  more  one_after_psh  one_delay_us  two_delay_us  data_with_psh")
    for path in paths:
        a = anatomy(path)
        print(
            f"{path}  {a['acks']:.0f}  {a['one_segment']:.2f}  {a['two_segments']:.2f}  "
            f"{a['more']:.2f}  {a['one_segment_after_psh']:.2f}  "
            f"{a['one_segment_delay_median_us']:.0f}  {a['two_segment_delay_median_us']:.0f}  "
            f"{a['data_segments_with_psh']:.2f}"
        )
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1:]))
