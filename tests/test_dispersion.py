"""The bottleneck rate from packet dispersion (farlink.captures.dispersion): synthetic packet
trains through a busy bottleneck, with token-bucket bursts, delayed ACKs, idle gaps and SACK
recovery; a simulated capture tapped before its bottleneck; the fit's fallback and warning."""

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from farlink import simulate
from farlink.captures.dispersion import (
    MIN_MODE_SAMPLES,
    MODE_WIDTH,
    ack_dispersion,
    data_dispersion,
    fitted_rate,
    modal_rate,
    train_mode,
)
from farlink.captures.fit import fit_path
from farlink.cli.app import main
from farlink.results.result import write_pcaps
from support import segment_train

MSS = 1460
PACKET = MSS + 40  # IP and TCP headers, no options: what the fit counts per segment
RATE_BPS = 2e6
SERIALISE_S = 8 * PACKET / RATE_BPS  # one packet's time at the bottleneck
RTT_S = 0.05


def _connection(seg_t: np.ndarray, ack_t: np.ndarray, ack: np.ndarray, sack=None) -> object:
    return segment_train(seg_t, ack_t, ack, mss_bytes=MSS, sack=sack)


def _train(leave_s: np.ndarray, *, per_ack: int = 1) -> object:
    """A connection whose segments cross the tap at ``leave_s`` (after the bottleneck) and are
    acknowledged ``RTT_S`` later, every ``per_ack`` of them."""
    acked = np.arange(per_ack - 1, len(leave_s), per_ack)
    return _connection(leave_s, leave_s[acked] + RTT_S, (acked + 1) * MSS)


def test_a_busy_bottleneck_spaces_data_and_acks_by_its_rate():
    conn = _train(np.arange(400) * SERIALISE_S)
    for est in (ack_dispersion(conn), data_dispersion(conn)):
        assert est.rate_bps == pytest.approx(RATE_BPS, rel=1e-9)
        assert est.samples == est.pairs == 399


def test_bursts_through_a_token_bucket_delayed_acks_and_idle_gaps_leave_the_mode():
    # A bucket's burst at line rate (2 µs apart), then the bottleneck busy, four idle seconds
    # (timeouts), another burst and busy period; the receiver acknowledges every second segment.
    burst = np.arange(40) * 2e-6
    busy = burst[-1] + SERIALISE_S + np.arange(300) * SERIALISE_S
    again = busy[-1] + 4.0 + np.arange(40) * 2e-6
    busy2 = again[-1] + SERIALISE_S + np.arange(300) * SERIALISE_S
    conn = _train(np.concatenate([burst, busy, again, busy2]), per_ack=2)
    est = ack_dispersion(conn)
    assert est.rate_bps == pytest.approx(RATE_BPS, rel=0.01)
    assert est.samples >= 290
    assert data_dispersion(conn).rate_bps == pytest.approx(RATE_BPS, rel=0.01)
    # The goodput, what the fit took before, is far below: the idle second and the bursts.
    goodput = 8 * conn.delivered_bytes / conn.duration_s
    assert goodput < 0.6 * RATE_BPS


def test_a_tap_before_the_bottleneck_shows_the_senders_spacing_and_the_acks_the_paths():
    # At the sender: two segments at once (1 to 20 µs apart) for each delayed ACK, the ACKs
    # spaced by the bottleneck's two packet times. Data dispersion is the sender's (half the
    # rate); the ACKs crossed the whole path.
    pair_s = np.arange(300) * 2 * SERIALISE_S
    apart_s = np.random.default_rng(1).uniform(1e-6, 20e-6, len(pair_s))
    sent = np.sort(np.concatenate([pair_s, pair_s + apart_s]))
    conn = _connection(sent, pair_s + RTT_S + 2 * SERIALISE_S, (np.arange(300) + 1) * 2 * MSS)
    assert ack_dispersion(conn).rate_bps == pytest.approx(RATE_BPS, rel=1e-9)
    assert data_dispersion(conn).rate_bps == pytest.approx(RATE_BPS / 2, rel=0.01)


def test_sack_recovery_delivers_bytes_the_cumulative_ack_does_not():
    # Segment 100 is lost: the 60 ACKs after it repeat the cumulative ACK and carry a SACK
    # block that grows by a segment each, at the bottleneck's spacing, until the resend fills
    # the hole. Counted with the SACK blocks, every one of them is a sample at the rate.
    n, lost = 200, 100
    t = np.arange(n) * SERIALISE_S
    ack_t = t + RTT_S
    ack = (np.arange(n) + 1) * MSS
    sack: list[tuple[tuple[int, int], ...]] = [() for _ in range(n)]
    ack[lost:] = lost * MSS
    for i in range(lost + 1, n):
        sack[i] = (((lost + 1) * MSS, (i + 1) * MSS),)
    conn = _connection(t, ack_t, ack, sack)
    est = ack_dispersion(conn)
    assert est.rate_bps == pytest.approx(RATE_BPS, rel=1e-9)
    # Each ACK after the first reports one segment delivered, but for the duplicate without a
    # block in the lost segment's place: lost - 1 samples before the hole, n - lost - 1 after.
    assert est.pairs == (lost - 1) + (n - lost - 1)


def test_too_few_samples_or_a_mode_below_the_goodput_fall_back_to_the_goodput():
    few = _train(np.arange(MIN_MODE_SAMPLES) * SERIALISE_S)
    fitted = fitted_rate(few, 1.5e6, "largest goodput over a 10 s window")
    assert fitted.rate_bps == 1.5e6 and fitted.basis == "largest goodput over a 10 s window"
    assert fitted.warning is not None and f"fewer than {MIN_MODE_SAMPLES}" in fitted.warning
    busy = _train(np.arange(200) * SERIALISE_S)
    assert fitted_rate(busy, 1.5e6, "goodput").rate_bps == pytest.approx(RATE_BPS)
    below = fitted_rate(busy, 3e6, "goodput")
    assert below.rate_bps == 3e6 and "below the goodput" in (below.warning or "")
    # A mode within its own width below the goodput is the bottleneck's: a short transfer's
    # mean goodput can stand that far above its sustained rate (a token bucket's burst).
    within = fitted_rate(busy, RATE_BPS * (1 + MODE_WIDTH) * 0.999, "mean goodput")
    assert within.rate_bps == pytest.approx(RATE_BPS) and within.warning is None
    beyond = fitted_rate(busy, RATE_BPS * (1 + MODE_WIDTH) * 1.001, "mean goodput")
    assert beyond.rate_bps > RATE_BPS and "below the goodput" in (beyond.warning or "")


def test_parallel_channels_are_measured_over_a_train_as_long_as_their_number():
    # Eight busy channels side by side, each sending one packet after another at 2,400 bit/s
    # from its own phase (a bundle's members): pairs of deliveries in a row came from two
    # channels at unrelated phases and scatter; trains of eight span a round of all of them.
    channels, per_channel_bps, packet_bits = 8, 2400.0, 8.0 * 300
    phases = np.random.default_rng(7).uniform(0, packet_bits / per_channel_bps, channels)
    jitter = np.random.default_rng(8).normal(0, 0.002, (channels, 200))
    ends = phases[:, None] + np.arange(1, 201) * packet_bits / per_channel_bps + jitter
    t = np.sort(ends.ravel())
    bits, gaps = np.full(len(t) - 1, packet_bits), np.diff(t)
    est = train_mode(bits, gaps, "ack dispersion")
    assert est.train >= 4
    assert est.rate_bps == pytest.approx(channels * per_channel_bps, rel=MODE_WIDTH)
    pairs = modal_rate(bits, gaps, "ack dispersion")
    assert abs(pairs.rate_bps / (channels * per_channel_bps) - 1) > MODE_WIDTH


def test_one_busy_channel_keeps_its_pairs():
    conn = _train(np.arange(400) * SERIALISE_S)
    assert ack_dispersion(conn).train == 1


def test_fit_of_an_iridium_bundle_takes_the_members_summed_rate(tmp_path):
    # An hour over eight bonded 2,400 bit/s modems with call drops (seed 1): the pairs' mode is
    # three times the bundle, a 10 s goodput window over its bursty reassembly two and a half.
    result = simulate(
        "iridium-greenland-8",
        duration="1h",
        sets=['flows[0].app={kind="unbounded"}', 'pcap=["iridium"]', "trace={}"],
    )
    write_pcaps(result, tmp_path)
    fit = fit_path(tmp_path / "iridium.pcap")
    assert fit.rate_bps == pytest.approx(8 * 2400, rel=MODE_WIDTH)
    assert fit.rate_basis.startswith("ACK dispersion") and "trains of" in fit.rate_basis
    assert not fit.warnings


def test_no_sample_gives_no_rate():
    est = modal_rate(np.array([8e3, 8e3]), np.array([0.0, 0.0]), "ack dispersion")
    assert est.rate_bps is None and est.samples == est.pairs == 0


@settings(max_examples=60, deadline=None)
@given(
    rate_bps=st.floats(1e4, 1e10),
    sizes=st.lists(st.integers(60, 1500), min_size=30, max_size=200),
    noise=st.lists(
        st.tuples(st.floats(0.01, 1 / (1 + 2 * MODE_WIDTH)), st.integers(60, 1500)), max_size=29
    ),
    faster=st.lists(st.floats(1 + 2 * MODE_WIDTH, 1e3), max_size=29),
    seed=st.integers(0, 2**32 - 1),
)
def test_the_busy_pairs_mode_is_the_rate_whatever_else_scatters(
    rate_bps, sizes, noise, faster, seed
):
    # Busy-bottleneck pairs (each spaced by its own size at the rate) outnumber the rest, whose
    # rates lie outside the mode's window, slower (idle gaps) or faster (bursts): the estimate
    # is the rate, in any order; and spacing every sample k times wider divides it by k.
    bits = [8.0 * s for s in sizes]
    gaps = [b / rate_bps for b in bits]
    for share, size in noise:
        bits.append(8.0 * size)
        gaps.append(8.0 * size / (share * rate_bps))
    for factor in faster[: max(0, len(sizes) - len(noise) - 1)]:
        bits.append(12000.0)
        gaps.append(12000.0 / (factor * rate_bps))
    order = np.random.default_rng(seed).permutation(len(bits))
    b, g = np.array(bits)[order], np.array(gaps)[order]
    est = modal_rate(b, g, "ack dispersion")
    assert est.rate_bps == pytest.approx(rate_bps, rel=1e-9)
    assert est.samples == len(sizes)
    assert modal_rate(b, 3 * g, "ack dispersion").rate_bps == pytest.approx(rate_bps / 3)


@pytest.fixture(scope="module")
def upstream_capture(tmp_path_factory):
    # Seed 003's wireless path, tapped on S-R (10 Mbit/s), upstream of its 1.5 Mbit/s R-D hop.
    out = tmp_path_factory.mktemp("disp")
    result = simulate("stpd-wireless", loss=0.01, duration="20s", sets=['pcap=["S-R"]'])
    write_pcaps(result, out)
    return out / "S-R.pcap"


def test_fit_takes_the_bottleneck_behind_the_tap_from_the_acks(upstream_capture, capsys):
    fit = fit_path(upstream_capture)
    assert fit.rate_bps == pytest.approx(1.5e6, rel=0.01)
    assert fit.rate_basis.startswith("ACK dispersion")
    report = fit.to_dict()
    # The data at this tap are spaced by S-R itself, ahead of the bottleneck.
    assert report["data_dispersion_rate_bps"] == pytest.approx(10e6, rel=0.01)
    assert report["goodput_rate_bps"] < fit.rate_bps
    assert report["bottleneck_rate_samples"] >= MIN_MODE_SAMPLES
    assert not fit.warnings


def test_cli_fit_reports_the_rate_and_warns_when_it_falls_back(tmp_path, capsys):
    result = simulate("stpd-wireless", size="12000B", sets=['pcap=["S-R"]'])
    write_pcaps(result, tmp_path)
    out = tmp_path / "fitted.toml"
    assert main(["fit", str(tmp_path / "S-R.pcap"), "--out", str(out), "--json"]) == 0
    printed = capsys.readouterr()
    report = json.loads(printed.out)
    assert report["bottleneck_rate_method"] == "ack dispersion"
    assert report["bottleneck_rate_samples"] < MIN_MODE_SAMPLES
    assert report["rate_bps"] == report["goodput_rate_bps"]
    warnings = [line for line in printed.err.splitlines() if "bottleneck rate" in line]
    assert len(warnings) == 1 and warnings[0].startswith("farlink: warning: ")
    assert "mean goodput" in out.read_text()
