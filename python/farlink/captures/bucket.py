"""A token bucket in front of the bottleneck, from deliveries faster than its rate.

A token-bucket shaper (Linux's tbf, a cellular or ISP policer) carries its rate ``R`` on
average, but tokens gather while the flow sends less than ``R`` (a recovery, an idle spell, the
start of the transfer), up to the bucket's depth ``B``, and a burst of up to ``B`` bytes then
crosses at the speed of the device behind it. A bottleneck without a bucket cannot deliver
faster than its rate, but for a packet or two of timestamping scatter.

The ACKs show such bursts wherever the tap sits (they crossed the whole forward path): a *run*
of consecutive delivery samples (:func:`farlink.captures.dispersion.ack_samples`) each faster
than ``R`` by more than the rate's own precision (:data:`~farlink.captures.dispersion.MODE_WIDTH`).
An ACK that fills a hole without SACK covers at once the data the receiver held above it, but
its sample spans the time the hole was open (no ACK in between reported delivery), so it is
no faster than the rate.
Over a run of ``b`` bytes in ``g`` seconds the path delivered ``b - R g`` bytes more than its
rate allows, which it can only have held as tokens: the bucket is at least that deep. The
estimate is the largest run's excess, a lower bound (a burst the sender broke off, or one that
began with the bucket part full, shows less), and the run's own rate is the burst's speed, a
lower bound of the device's. Runs are taken whole, never spanning a sample at or below the
rate, so that an error in ``R`` cannot add up over a long transfer (0.2 % of 20 Mbit/s is
5 kB a second).

On real Linux TCP through a 20 Mbit/s tbf with an 80 kB bucket (``tc ... burst 80kb``: 81,920
bytes of Ethernet frames, 81,163 of IP packets), the captures of ``make validate-captures`` and
``make validate-captures-heavy`` give 74.8 to 79.7 kB of IP packets with offloads off and 72.6
to 73.5 kB with them on (a run of super-segments loses a whole one at its start).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from farlink.captures.dispersion import MODE_WIDTH, ack_samples

if TYPE_CHECKING:
    from farlink.captures.analysis import Connection

__all__ = ["MIN_BURST_PACKETS", "TokenBucketFit", "burst_excess", "token_bucket"]

# The least excess taken for a bucket: a packet or two of scatter (a delayed ACK sent late,
# then one on time) makes a run of one or two fast samples on any path; four full packets
# beyond the rate do not happen by chance.
MIN_BURST_PACKETS = 4


@dataclass(frozen=True)
class TokenBucketFit:
    """The bucket a capture shows: ``burst_bytes`` (a lower bound of its depth, IP bytes) and
    ``peak_rate_bps`` (the burst's own rate; None where its samples share one instant), or no
    bucket (``burst_bytes`` None), with the largest excess seen either way."""

    burst_bytes: int | None
    peak_rate_bps: float | None
    excess_bytes: float
    run_samples: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "burst_bytes": self.burst_bytes,
            "peak_rate_bps": self.peak_rate_bps,
            "burst_excess_bytes": self.excess_bytes,
            "burst_run_samples": self.run_samples,
        }


def burst_excess(
    bits: np.ndarray, gaps_s: np.ndarray, rate_bps: float
) -> tuple[float, float, float, int]:
    """The largest excess over ``rate_bps`` of a run of consecutive samples each faster than
    it by more than :data:`MODE_WIDTH` (module notes): (excess bits, the run's bits, its
    seconds, its samples). A sample with no gap is as fast as can be."""
    bits = np.asarray(bits, dtype=np.float64)
    gaps_s = np.asarray(gaps_s, dtype=np.float64)
    fast = bits > rate_bps * (1 + MODE_WIDTH) * gaps_s
    best = (0.0, 0.0, 0.0, 0)
    run_bits = run_s = 0.0
    run_n = 0
    for b, g, f in zip(bits, gaps_s, fast, strict=True):
        if not f:
            run_bits = run_s = 0.0
            run_n = 0
            continue
        run_bits += b
        run_s += g
        run_n += 1
        excess = run_bits - rate_bps * run_s
        if excess > best[0]:
            best = (excess, run_bits, run_s, run_n)
    return best


def token_bucket(conn: Connection, rate_bps: float, packet_bytes: int) -> TokenBucketFit:
    """The token bucket ``conn``'s ACKs show in front of a bottleneck of ``rate_bps``, counted
    in IP packets of ``packet_bytes`` as the fitted link carries them (module notes)."""
    excess_bits, run_bits, run_s, n = burst_excess(*ack_samples(conn), rate_bps)
    excess = excess_bits / 8
    if excess < MIN_BURST_PACKETS * packet_bytes:
        return TokenBucketFit(None, None, excess, n)
    peak = run_bits / run_s if run_s > 0 else None
    return TokenBucketFit(int(excess), peak, excess, n)
