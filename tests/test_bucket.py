"""A token bucket in front of the bottleneck from the ACKs' bursts (farlink.captures.bucket):
synthetic trains through a shaper and through a plain bottleneck, with delayed ACKs and
timestamp scatter; a wrong rate does not add up over a long transfer."""

import numpy as np
import pytest

from farlink.captures.bucket import MIN_BURST_PACKETS, burst_excess, token_bucket
from support import segment_train

MSS = 1460
PACKET = MSS + 40  # what the fit counts per segment: IP and TCP headers, no options
RATE_BPS = 2e6
SERIALISE_S = 8 * PACKET / RATE_BPS
LINE_S = 8 * PACKET / 1e9  # the device behind the shaper: 1 Gbit/s
RTT_S = 0.05


def _train(leave_s: np.ndarray, *, per_ack: int = 1) -> object:
    """Segments leaving the shaper at ``leave_s``, acknowledged ``RTT_S`` later, every
    ``per_ack`` of them."""
    acked = np.arange(per_ack - 1, len(leave_s), per_ack)
    return segment_train(leave_s, leave_s[acked] + RTT_S, (acked + 1) * MSS, mss_bytes=MSS)


def _shaped(burst_packets: int, busy_packets: int, start_s: float = 0.0) -> np.ndarray:
    """A full bucket's burst at line rate, then the shaper's sustained rate."""
    burst = start_s + np.arange(burst_packets) * LINE_S
    busy = burst[-1] + SERIALISE_S + np.arange(busy_packets) * SERIALISE_S
    return np.concatenate([burst, busy])


@pytest.mark.parametrize("per_ack", [1, 2])
def test_a_shapers_burst_is_its_bucket_less_what_the_rate_refilled(per_ack):
    # 40 packets at line rate, then 300 at the rate; idle spell, and a burst of only 20 (the
    # flow's window, not the bucket, ended it): the estimate is the largest burst.
    leave = np.concatenate([_shaped(40, 300), _shaped(20, 100, start_s=10.0)])
    fit = token_bucket(_train(leave, per_ack=per_ack), RATE_BPS, PACKET)
    # The first ACK of a burst comes after a gap at the rate, so a run holds the burst but its
    # first packet(s): 39 (or 38 with an ACK per two) packets, less the rate's refill over
    # the run's few microseconds.
    expected = (40 - per_ack) * PACKET
    assert fit.burst_bytes == pytest.approx(expected, rel=0.01)
    assert fit.excess_bytes == pytest.approx(expected, rel=0.01)
    assert fit.peak_rate_bps == pytest.approx(1e9, rel=0.01)
    assert fit.run_samples == (40 - per_ack) // per_ack


def test_a_plain_bottleneck_with_scatter_shows_no_bucket():
    # Every departure at the rate, each stamped up to 20 % of a packet time early or late.
    rng = np.random.default_rng(7)
    leave = np.arange(2000) * SERIALISE_S + rng.uniform(-0.2, 0.2, 2000) * SERIALISE_S
    fit = token_bucket(_train(np.sort(leave), per_ack=2), RATE_BPS, PACKET)
    assert fit.burst_bytes is None and fit.peak_rate_bps is None
    assert fit.excess_bytes < MIN_BURST_PACKETS * PACKET


def test_a_rate_a_little_low_does_not_add_up_over_a_long_transfer():
    # Ten minutes at the rate, judged against a rate 1 % low: a run of samples each faster
    # than the rate by more than its precision never forms, so no excess builds (a sum over
    # every interval would find 1 % of 150 MB, 1.5 MB).
    bits = np.full(100_000, 8.0 * PACKET)
    gaps = np.full(100_000, SERIALISE_S)
    excess_bits, *_ = burst_excess(bits, gaps, 0.99 * RATE_BPS)
    assert excess_bits == 0.0


def test_samples_stamped_at_one_instant_count_as_a_burst_without_a_peak():
    bits = np.array([8.0 * PACKET] * 10)
    gaps = np.array([SERIALISE_S] + [0.0] * 9)
    excess_bits, run_bits, run_s, n = burst_excess(bits, gaps, RATE_BPS)
    assert (n, run_s) == (9, 0.0)
    assert excess_bits == run_bits == 9 * 8 * PACKET


def test_a_hole_filled_without_sack_is_no_burst():
    # At the rate throughout; segment 100 is lost and resent after 30 more, so the receiver
    # sends 30 duplicate ACKs and then one ACK covering the 31 segments at once: its sample
    # spans the 30 packet times the hole was open, no faster than the rate.
    leave = np.arange(400) * SERIALISE_S
    ack_t = leave + RTT_S
    ack = (np.arange(400) + 1) * MSS
    ack[100:130] = 100 * MSS  # duplicates while the hole is open
    ack_t[130] = ack_t[129] + 1e-6  # the resend arrives: everything up to 131 at once
    conn = segment_train(leave, ack_t, ack, mss_bytes=MSS)
    assert conn.ack["dupack"][100:130].sum() >= 29
    fit = token_bucket(conn, RATE_BPS, PACKET)
    assert fit.burst_bytes is None, fit
