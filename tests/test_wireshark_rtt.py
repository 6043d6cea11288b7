"""farlink.captures.rtt.wireshark_ack_rtt: Wireshark's ack_rtt rule, which farlink reports
beside its own (Karn's) so that the two tools can be checked against each other."""

import numpy as np

from farlink.captures.rtt import wireshark_ack_rtt


def _run(segments, acks):
    seg_t, seq, lens = (np.array(x) for x in zip(*segments, strict=True))
    ack_t, ack = (np.array(x) for x in zip(*acks, strict=True))
    r = wireshark_ack_rtt(seg_t, seq, lens, ack_t, ack)
    return list(zip(r.time_s.round(6).tolist(), r.rtt_s.round(6).tolist(), strict=True))


def test_an_ack_is_timed_against_the_segment_ending_at_it():
    # Two segments, one ACK covering both (delayed): timed against the second only.
    got = _run([(0.0, 0, 1000), (0.1, 1000, 1000)], [(0.5, 2000)])
    assert got == [(0.5, 0.4)]


def test_without_karns_rule_the_first_copy_and_the_segment_before_the_hole_time_it():
    # Segment 1000-2000 lost, resent at 1.0 s; the ACK of everything at 1.1 s is timed by
    # Wireshark against the segment ending at it (2000-3000, sent at 0.2 s), the ACK of a
    # resent segment alone against its first copy; farlink's own rule gives neither.
    segments = [(0.0, 0, 1000), (0.1, 1000, 1000), (0.2, 2000, 1000), (1.0, 1000, 1000)]
    acks = [(0.3, 1000), (0.4, 1000), (1.1, 3000)]
    assert _run(segments, acks) == [(0.3, 0.3), (1.1, 0.9)]
    segments = [(0.0, 0, 1000), (1.0, 0, 1000)]
    assert _run(segments, [(1.1, 1000)]) == [(1.1, 1.1)]


def test_a_partial_ack_times_nothing_and_duplicates_time_nothing_more():
    # An ACK inside a segment (its first half) gives no sample; the segment stays listed and
    # its end is timed later; a repeated ACK finds nothing left.
    got = _run([(0.0, 0, 2000)], [(0.1, 1000), (0.2, 2000), (0.3, 2000)])
    assert got == [(0.2, 0.2)]
