"""Seed 003's remaining reproductions: the behaviours the thesis's text claims, or its departures.

Each runs in a second or two on the packet engine; the published values they print beside ours
are checked by reading the rows back by label.
"""

import math

import pytest

from farlink.reproduce import run


@pytest.fixture(scope="module")
def out_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("reproduce-stpd")


def rows_by_label(rep):
    return {row.label: row for row in rep.rows}


def find(rows, start):
    matches = [row for label, row in rows.items() if label.startswith(start)]
    assert len(matches) == 1, (start, list(rows))
    return matches[0]


def test_wired_stpd_holds_one_packet_and_reno_fills_the_buffer(out_dir):
    rep = run("stpd-fig-3.8-3.13", out_dir)
    rows = rows_by_label(rep)
    # ST-PD: window in the 10-12 band, one packet queued, whatever the buffer.
    for buffer in (14, 4):
        assert find(rows, f"ST-PD queue at R, {buffer}-packet buffer, mean").within_tolerance
    assert find(rows, "ST-PD cwnd, 14-packet buffer, mean").within_tolerance
    assert find(rows, "ST-PD cwnd, 4-packet buffer, mean").within_tolerance
    # Reno: its saw-tooth fills the 14-packet buffer and tops out just above 23.
    assert find(rows, "Reno queue at R, 14-packet buffer, highest").ours == 14
    assert find(rows, "Reno cwnd, 14-packet buffer, highest").within_tolerance
    # The small buffer costs Reno throughput, not ST-PD.
    reno14 = find(rows, "Reno throughput, 14-packet buffer (seed").ours
    reno4 = find(rows, "Reno throughput, 4-packet buffer (seed").ours
    stpd14 = find(rows, "ST-PD throughput, 14-packet buffer").ours
    stpd4 = find(rows, "ST-PD throughput, 4-packet buffer (seed").ours
    assert reno4 < reno14 - 0.03
    assert stpd4 == pytest.approx(stpd14, abs=0.005)
    assert find(rows, "Reno queue at R, 4-packet buffer, lowest").ours == 0
    assert len(rep.figures) == 2 and all(f.exists() for f in rep.figures)


def test_joining_flows_show_stpd_queue_low_alone_and_the_late_joiner_bias(out_dir):
    rows = rows_by_label(run("stpd-fig-3.15-3.17", out_dir))
    # Alone, ST-PD keeps about one packet queued; Reno keeps many more.
    assert find(rows, "ST-PD, 0-12 s (1 flows): mean queue").within_tolerance
    assert find(rows, "Reno, 0-12 s (1 flows): mean queue").ours > 5
    # Reno overflows more with more connections sharing the buffer (the thesis's words).
    assert (
        find(rows, "Reno, 24-36 s (3 flows): mean queue").ours
        > find(rows, "Reno, 0-12 s (1 flows): mean queue").ours
    )
    # The documented departure: ST-PD's queue grows with the connections (RTT_min bias).
    assert find(rows, "ST-PD, 24-36 s (3 flows): mean queue").ours > 2
    for label, row in rows.items():
        if "Jain" in label:
            assert 1 / 3 <= row.ours <= 1.0


def test_moving_bottleneck_queue_follows_the_bottleneck(out_dir):
    rows = rows_by_label(run("stpd-fig-3.19-3.20", out_dir))
    assert find(rows, "ST-PD queue at R2, 45-60 s").within_tolerance
    assert find(rows, "ST-PD queue at R1, 45-60 s").ours < 0.2
    assert find(rows, "ST-PD S3-D3, 45-60 s").within_tolerance
    assert find(rows, "ST-PD S1-D1, 45-60 s").within_tolerance
    # Reno's S1-D1 gets less than S2-D2, whose packets reach R1 over the 45 Mbps link.
    assert find(rows, "Reno S1-D1, 15-30 s").ours < find(rows, "Reno S2-D2, 15-30 s").ours


def test_telnet_rtt_is_bounded_under_stpd_and_not_under_reno(out_dir):
    rows = rows_by_label(run("stpd-fig-3.22-3.24", out_dir))
    stpd_max = find(rows, "ST-PD telnet RTT, highest").ours
    assert 0.063 < stpd_max <= 0.127 * 1.1
    assert find(rows, "ST-PD telnet RTT, lowest").ours >= 0.063
    reno_max = find(rows, "Reno telnet RTT, highest").ours
    assert reno_max > 5 * stpd_max
    assert find(rows, "Reno telnet RTT, highest").within_tolerance  # about 0.894 s


def test_bursty_losses_two_readings_and_modern_columns(out_dir):
    rep = run("stpd-fig-4.13-4.17", out_dir)
    rows = rows_by_label(rep)
    for reading in ("per packet", "in time"):
        for name in ("Reno", "ST-PD", "Hybla", "Westwood+", "CUBIC", "BBR"):
            row = find(rows, f"{name}, channel {reading}: normalised")
            assert 0 < row.ours <= 1.0, row
    # Stepped per packet, a burst can swallow retransmissions: some runs stall for minutes,
    # which the channel in time never produces.
    per_packet_low = find(rows, "Reno, channel per packet: normalised").label
    in_time_low = find(rows, "Reno, channel in time: normalised").label
    lowest = [
        float(label.split("lowest ")[1].rstrip(")")) for label in (per_packet_low, in_time_low)
    ]
    assert lowest[0] < 0.3 < lowest[1]
    assert find(rows, "Reno, channel per packet: normalised").published == 0.14
    assert find(rows, "ST-PD, channel per packet: normalised").published == 0.96
    assert len(rep.figures) == 2


def test_geo_burst_of_two_losses_and_the_stpd_opening(out_dir):
    rep = run("stpd-fig-4.19-4.22", out_dir)
    rows = rows_by_label(rep)
    gap = find(rows, "in-order segments: ST-PD minus Reno")
    assert gap.published == 1861.0
    # The documented departure: ST-PD's slow opening leaves it behind Reno here.
    assert gap.ours < 0 and gap.within_tolerance is False
    assert any("opening" in note for note in rep.notes)
    # The scripted losses hit both at the 2000th packet; ST-PD rides them out without timeout.
    assert find(rows, "ST-PD: lowest window within 5 s").ours > 30
    assert find(rows, "Reno: lowest usable window within 5 s").ours < 10
    for name in ("Tahoe", "Reno", "NewReno", "Vegas", "ST-PD", "CUBIC", "BBR"):
        assert find(rows, f"{name}: in-order segments delivered").ours > 1000


def test_testbed_transfer_times(out_dir):
    rep = run("stpd-testbed-5.4", out_dir)
    rows = rows_by_label(rep)
    # 1000 packets of 152 bytes at 3840 bytes/s: 39.6 s is the floor at 38.4 kbps.
    for label, row in rows.items():
        assert not math.isnan(row.ours), label
        if "38.4 kbps" in label:
            assert row.ours > 39.5, label
    # Lossless links: ST-PD takes less time than Reno in all three cases (sec. 5.4.1).
    for case in ("115.2 kbps, 0ms, PER 0", "38.4 kbps, 80ms, PER 0", "38.4 kbps, 250ms, PER 0"):
        reno = find(rows, f"Reno, {case}: transfer time, emulator").ours
        stpd = find(rows, f"ST-PD, {case}: transfer time, emulator").ours
        assert stpd < reno, case
    # Two connections: under Reno the first finishes last; under ST-PD the later one takes the
    # larger share (the documented RTT_min bias), so it needs less time than the first.
    first = find(rows, "ST-PD, two connections, 38.4 kbps, 180ms: H1-H3").ours
    later = find(rows, "ST-PD, two connections, 38.4 kbps, 180ms: H2-H3").ours
    assert later < first
    # The worst case of sec. 5.4.2: Reno takes more than 180 s, as published.
    assert find(rows, "Reno, 38.4 kbps, 250ms, PER 0.1: transfer time, emulator").ours > 180
