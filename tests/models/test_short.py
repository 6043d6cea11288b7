"""Short-transfer latency: set-up, delayed-ACK slow start, Cardwell et al. and Sikdar et al.

Closed forms are checked against the sums and round-by-round counts they stand for; the latency
models against their lossless and bulk-transfer limits and their monotonicity.
"""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from farlink.models import short
from farlink.models.pftk import expected_timeout_sequence_s, pftk_full_throughput
from farlink.models.short import (
    cardwell_components,
    cardwell_latency_s,
    handshake_latency_s,
    linear_growth_rounds,
    sikdar_components,
    sikdar_latency_s,
    sikdar_lossless_rounds,
    sikdar_packets_sent,
    sikdar_packets_to_wmax,
    sikdar_rounds_to_wmax,
    sikdar_window,
    slow_start_growth_factor,
)

loss = st.floats(1e-5, 0.4)
rtt = st.floats(0.01, 60.0)
# An RTO is never shorter than the RTT it is computed from (RFC 6298), so T0 = k RTT with k >= 1.
rto_factor = st.floats(1.0, 20.0)
wmax = st.one_of(st.just(np.inf), st.floats(1.0, 1000.0))
growth = st.floats(1.05, 2.0)


def w_direct(n):
    return 2 ** ((n - 1) / 2) + 2 ** ((n - 2) / 2)


def lossless_rounds_direct(sizes, w_max):
    """Rounds of Σ min(w(n), W_max) needed to carry each size, adding one round at a time."""
    sent = [0.0]
    while sent[-1] < max(sizes):
        sent.append(sent[-1] + min(w_direct(len(sent)), w_max))
    # 30 rounds of 1.3 carry 39 packets, not the 38.999… of the running float sum.
    return np.searchsorted(np.array(sent), np.asarray(sizes) - 1e-9)


def linear_rounds_direct(packets, w_start, b, w_max):
    sent, rounds = 0.0, 0
    while sent < packets - 1e-9:
        sent += min(w_start + rounds / b, w_max)
        rounds += 1
    return rounds


# ---------------------------------------------------------------------------------------------
# Connection set-up


def test_handshake_equals_its_series():
    # E[L_h] = Σ_ij P_r^i (1−P_r) P_f^j (1−P_f) (RTT + (2^i + 2^j − 2) T_s).
    rtt_s, ts, pr, pf = 0.8, 3.0, 0.2, 0.3
    i = np.arange(200)[:, None]
    j = np.arange(200)[None, :]
    weights = pr**i * (1 - pr) * pf**j * (1 - pf)
    series = np.sum(weights * (rtt_s + (2.0**i + 2.0**j - 2) * ts))
    assert handshake_latency_s(rtt_s, ts, pr, pf) == pytest.approx(series, rel=1e-12)
    # With P_r = P_f = p it is the seed's T_setup = RTT + 2 T_s ((1−p)/(1−2p) − 1).
    assert handshake_latency_s(rtt_s, ts, 0.2) == pytest.approx(rtt_s + 2 * ts * (0.8 / 0.6 - 1))


def test_handshake_is_one_rtt_without_loss_and_grows_with_loss():
    assert handshake_latency_s(1.7, 3.0, 0.0) == 1.7
    assert handshake_latency_s(1.7, 3.0, 1e-12) == pytest.approx(1.7, rel=1e-10)
    t = handshake_latency_s(1.7, 3.0, np.linspace(0, 0.49, 50))
    assert np.all(np.diff(t) > 0)
    assert handshake_latency_s(1.7, 3.0, 0.1, 0.3) > handshake_latency_s(1.7, 3.0, 0.1, 0.2)


@pytest.mark.parametrize(
    ("kwargs", "name"), [({"p_syn": 0.5}, "p_syn"), ({"p_synack": 0.7}, "p_synack")]
)
def test_handshake_diverges_at_one_half(kwargs, name):
    args = {"rtt_s": 1.0, "ts_s": 3.0, "p_syn": 0.1} | kwargs
    with pytest.raises(ValueError, match=name):
        handshake_latency_s(**args)


# ---------------------------------------------------------------------------------------------
# Slow-start growth: eqs. 15–17, 19–21


def test_gamma_is_one_plus_one_over_b():
    assert slow_start_growth_factor() == 1.5
    assert slow_start_growth_factor([1, 2, 4]) == pytest.approx([2.0, 1.5, 1.25])


def test_window_is_eq_16():
    n = np.arange(1, 30)
    assert sikdar_window(n) == pytest.approx(w_direct(n), rel=1e-14)


def test_packets_sent_is_the_sum_of_eq_16():
    k = np.arange(0, 60)
    direct = np.concatenate([[0.0], np.cumsum(w_direct(np.arange(1, 60)))])
    assert sikdar_packets_sent(k) == pytest.approx(direct, rel=1e-13, abs=1e-12)
    # The expanded form stated in the docstring.
    expanded = 2 ** ((k + 2) / 2) + 3 * 2 ** ((k - 1) / 2) - 2 - 3 * math.sqrt(2) / 2
    assert sikdar_packets_sent(k) == pytest.approx(expanded, rel=1e-12, abs=1e-12)


def test_printed_eq_17_is_not_the_sum():
    # What the seed prints: pkt(0) would be −0.39 and pkt(1) would differ from w(1).
    k = np.arange(0, 10)
    printed = 2 ** ((k + 1) / 2) + 3 * 2 ** ((4 * k - 3) / 8) - 2 - 3 * math.sqrt(2) / 2
    assert printed[0] == pytest.approx(-0.394, abs=1e-3)
    assert not np.allclose(printed, sikdar_packets_sent(k), rtol=1e-2)


@pytest.mark.parametrize("w_max", [1.0, 1.5, 1.71, 2.0, 2.414, 3.0, 7.9, 8.0, 33.1, 64.0, 1e4])
def test_rounds_to_wmax_is_the_first_round_reaching_it(w_max):
    n_wm = sikdar_rounds_to_wmax(w_max)
    first = next(n for n in range(1, 200) if w_direct(n) >= w_max)
    assert n_wm == first
    # N_exp: the uncapped rounds before n_wm, then one round at W_max.
    before = sum(w_direct(n) for n in range(1, first))
    assert sikdar_packets_to_wmax(w_max) == pytest.approx(before + w_max, rel=1e-12)


def test_no_window_limit_means_no_cap_round():
    assert sikdar_rounds_to_wmax(np.inf) == np.inf
    assert sikdar_packets_to_wmax(np.inf) == np.inf


def test_lossless_rounds_without_window_limit():
    sizes = np.arange(1, 3000)
    direct = lossless_rounds_direct(sizes, np.inf)
    assert np.array_equal(sikdar_lossless_rounds(sizes), direct)
    # The corrected closed form of eq. 21.
    closed = np.ceil(2 * np.log2((2 * sizes + 4 + 3 * math.sqrt(2)) / (4 + 3 * math.sqrt(2))))
    assert np.array_equal(sikdar_lossless_rounds(sizes), closed)


@pytest.mark.parametrize("w_max", [1.0, 1.3, 2.0, 3.0, 5.5, 8.0, 12.0, 44.0])
def test_lossless_rounds_window_limited_branch(w_max):
    sizes = np.arange(1, 1500)
    direct = lossless_rounds_direct(sizes, w_max)
    assert np.array_equal(sikdar_lossless_rounds(sizes, w_max), direct)
    # The second branch is the one in use beyond N_exp, and the two branches meet there.
    n_exp = sikdar_packets_to_wmax(w_max)
    n_wm = sikdar_rounds_to_wmax(w_max)
    assert sikdar_lossless_rounds(math.floor(n_exp), w_max) <= n_wm
    assert sikdar_lossless_rounds(1000, w_max) == n_wm + math.ceil((1000 - n_exp) / w_max)


def test_window_limit_slows_a_long_lossless_transfer():
    assert sikdar_lossless_rounds(500, 8) > sikdar_lossless_rounds(500)


@pytest.mark.parametrize("b", [1, 2, 3])
@pytest.mark.parametrize("w_max", [np.inf, 3.0, 10.0, 17.5])
def test_linear_growth_rounds_against_a_round_count(b, w_max):
    packets = np.arange(0, 400)
    for w_start in [1.0, 2.0, 2.5, 7.0, 20.0]:
        start = min(w_start, w_max)
        direct = [linear_rounds_direct(a, start, b, w_max) for a in packets]
        assert np.array_equal(linear_growth_rounds(packets, w_start, b, w_max), direct)


# ---------------------------------------------------------------------------------------------
# Cardwell, Savage and Anderson


def test_cardwell_lossless_limit_is_the_log_gamma_slow_start():
    d = np.arange(1, 2000)
    for w1, b in [(1, 2), (2, 2), (3, 1)]:
        gamma = 1 + 1 / b
        expected = 0.7 + 0.15 + 0.7 * np.log(d * (gamma - 1) / w1 + 1) / np.log(gamma)
        got = cardwell_latency_s(d, 1e-13, 0.7, 2.0, b=b, w1_pkts=w1, delack_s=0.15)
        assert got == pytest.approx(expected, rel=1e-9)


def test_cardwell_slow_start_packets_are_capped_at_the_transfer():
    # The printed E[d_ss] tends to d + 1 as p → 0; it is capped at d.
    parts = cardwell_components(np.arange(1, 100), 1e-9, 1.0, 3.0)
    assert np.array_equal(parts.slow_start_packets, np.arange(1, 100))
    assert np.all(parts.congestion_avoidance_s == 0)
    lossy = cardwell_components(1000, 0.01, 1.0, 3.0)
    expected = (1 - 0.99**1000) * 0.99 / 0.01 + 1
    assert lossy.slow_start_packets == pytest.approx(expected, rel=1e-12)


def test_cardwell_window_limited_slow_start_by_hand():
    # γ = 1.5, w1 = 1, W_max = 1.5³: windows 1, 1.5, 2.25, 3.375 carry 8.125 packets in four
    # rounds, then 3.375 per round: 15 packets take 4 + 6.875 / 3.375 rounds.
    parts = cardwell_components(15, 1e-13, 2.0, 6.0, wmax_pkts=3.375)
    assert parts.slow_start_s == pytest.approx(2.0 * (4 + 6.875 / 3.375), rel=1e-9)


def test_cardwell_slow_start_branches_meet_at_wmax():
    d, gamma, w1 = 200, 1.5, 2.0
    w_ss = (d * (gamma - 1) + w1) / gamma
    at = cardwell_components(d, 1e-13, 1.0, 3.0, wmax_pkts=w_ss * np.array([1 - 1e-9, 1 + 1e-9]))
    assert at.slow_start_s[0] == pytest.approx(at.slow_start_s[1], rel=1e-7)


def test_cardwell_components_add_up_and_follow_the_formulas():
    d, p, r, t0 = 300, 0.02, 1.5, 4.0
    parts = cardwell_components(d, p, r, t0)
    assert parts.total_s == pytest.approx(cardwell_latency_s(d, p, r, t0))
    assert parts.slow_start_loss_probability == pytest.approx(1 - (1 - p) ** d)
    w = parts.slow_start_window
    assert w == pytest.approx((parts.slow_start_packets * 0.5 + 1) / 1.5)
    q = parts.timeout_probability
    z = expected_timeout_sequence_s(p, t0)
    assert parts.loss_recovery_s == pytest.approx((1 - (1 - p) ** d) * (q * z + (1 - q) * r))
    rate = pftk_full_throughput(p, r, t0)
    assert parts.congestion_avoidance_s == pytest.approx((d - parts.slow_start_packets) / rate)


@pytest.mark.parametrize("w_max", [np.inf, 40.0])
@pytest.mark.parametrize("p", [1e-3, 0.02, 0.2])
def test_cardwell_bulk_limit_is_the_pftk_rate(p, w_max):
    rate = pftk_full_throughput(p, 2.0, 6.0, 2, w_max)
    for size, tol in [(1e6, 2e-3), (1e9, 2e-6)]:
        latency = cardwell_latency_s(size, p, 2.0, 6.0, wmax_pkts=w_max)
        assert latency * rate / size == pytest.approx(1.0, abs=tol)


@settings(max_examples=150)
@given(
    size=st.integers(1, 5000),
    p=loss,
    r=rtt,
    k=rto_factor,
    w_max=wmax,
    w1=st.sampled_from([1, 2, 3, 4]),
    b=st.sampled_from([1, 2]),
    up=growth,
)
def test_cardwell_grows_with_size_loss_and_rtt(size, p, r, k, w_max, w1, b, up):
    def t(size_, p_, r_):
        return cardwell_latency_s(size_, p_, r_, k * r, b, w_max, w1)

    base = t(size, p, r)
    assert t(size + 1, p, r) >= base
    assert t(size, min(p * up, 0.49), r) >= base
    # T0 stays fixed while the RTT grows, so both checks may fail independently.
    assert cardwell_latency_s(size, p, r * up, k * r, b, w_max, w1) >= base


# ---------------------------------------------------------------------------------------------
# Sikdar, Kalyanaraman and Vastola


@pytest.mark.parametrize("w_max", [np.inf, 1.0, 6.0, 30.0])
def test_sikdar_lossless_limit_is_eq_21(w_max):
    sizes = np.arange(1, 400)
    got = sikdar_latency_s(sizes, 1e-15, 0.7, 2.0, wmax_pkts=w_max, ts_s=3.0, delack_s=0.15)
    expected = 0.7 + 0.15 + 0.7 * lossless_rounds_direct(sizes, w_max)
    assert got == pytest.approx(expected, rel=1e-10)


def test_sikdar_one_packet_by_hand():
    # One packet: lost with probability p, then a timeout sequence and one more round.
    p, r, t0 = 0.05, 1.2, 3.0
    z = expected_timeout_sequence_s(p, t0)
    setup = handshake_latency_s(r, 3.0, p)
    expected = setup + 0.1 + (1 - p) * r + p * (z + r)
    assert sikdar_latency_s(1, p, r, t0) == pytest.approx(expected, rel=1e-12)


def test_sikdar_two_packets_single_loss_by_hand():
    # Either packet alone in its round: the loss times out (one round earlier for packet 2, whose
    # round's ACK clock came from packet 1), then the window restarts at one.
    p, r, t0 = 0.05, 1.2, 3.0
    z = expected_timeout_sequence_s(p, t0)
    parts = sikdar_components(2, p, r, t0)
    assert parts.single_loss_s == pytest.approx(2 * r + z, rel=1e-12)
    assert parts.single_loss_timeout_share == 1.0


def single_loss_direct(n_pkts, w_max, rtt_s, z_to, b):
    """E{t_sl(N)} and its timeout share, from explicit rounds (module notes of short.py)."""
    sent = [0.0]
    while sent[-1] < n_pkts:
        sent.append(sent[-1] + min(w_direct(len(sent)), w_max))
    bounds = [math.floor(x + 1e-9) for x in sent]
    times, timeouts = [], 0
    for i in range(1, n_pkts + 1):
        k = next(r for r in range(1, len(bounds)) if bounds[r] >= i)
        before, end = bounds[k - 1], bounds[k]
        last = min(end, n_pkts)
        nu, lost = i - 1 - before, last - i + 1
        window = max(end - before, min(w_max, end - before + (math.sqrt(2) - 1) * nu))
        new = max(0, min(math.floor(window - lost + 1e-9), n_pkts - last))
        ssthresh = min(w_max, max(2.0, (lost + new) / 2))
        left = n_pkts - last - new
        if new >= 3:  # fast retransmit: dup-ACK round, 1 or 2 recovery rounds, then linear
            rounds = k + 1 + math.ceil(lost / ssthresh - 1e-9)
            rounds += linear_rounds_direct(left, ssthresh, b, w_max)
            times.append(rounds * rtt_s)
            continue
        # Timeout: armed one round earlier if the lost packet opened its round; then slow start
        # from one while w(r) < ssthresh, then linear growth from ssthresh.
        timeouts += 1
        slow_rounds = next(j for j in range(1, 100) if w_direct(j) >= ssthresh) - 1
        rounds, todo, r = k - (nu == 0), lost + left, 0
        while todo > 1e-9:
            r += 1
            if r <= slow_rounds:
                todo -= w_direct(r)
            else:
                todo -= min(ssthresh + (r - slow_rounds - 1) / b, w_max)
            rounds += 1
        times.append(rounds * rtt_s + z_to)
    return np.mean(times), timeouts / n_pkts


@pytest.mark.parametrize("w_max", [np.inf, 1.0, 2.5, 6.0, 16.0])
@pytest.mark.parametrize("n_pkts", [1, 2, 5, 13, 40, 97, 200])
def test_sikdar_single_loss_against_explicit_rounds(n_pkts, w_max):
    p, r, t0, b = 0.01, 0.9, 2.5, 2
    z = expected_timeout_sequence_s(p, t0)
    mean, share = single_loss_direct(n_pkts, w_max, r, z, b)
    parts = sikdar_components(n_pkts, p, r, t0, b, w_max)
    assert parts.single_loss_s == pytest.approx(mean, rel=1e-12)
    assert parts.single_loss_timeout_share == pytest.approx(share, rel=1e-12)


@settings(max_examples=30, deadline=None)
@given(size=st.integers(1, 256), p=loss, r=rtt, k=rto_factor, w_max=wmax)
def test_sikdar_more_losses_take_longer(size, p, r, k, w_max):
    # t_nl ≤ E{t_sl} ≤ t_ml: a second loss event never makes a transfer faster on average.
    parts = sikdar_components(size, p, r, k * r, 2, w_max)
    assert parts.single_loss_s >= parts.no_loss_s
    if size > 1:
        assert parts.multi_loss_s >= parts.single_loss_s


def test_sikdar_weights_are_binomial():
    n, p = np.array([1, 2, 5, 40, 300]), 0.03
    parts = sikdar_components(n, p, 1.0, 3.0)
    assert parts.no_loss_probability == pytest.approx((1 - p) ** n)
    assert parts.single_loss_probability == pytest.approx(n * p * (1 - p) ** (n - 1))
    total = parts.no_loss_probability + parts.single_loss_probability
    assert total + parts.multi_loss_probability == pytest.approx(np.ones(5), abs=1e-12)
    assert parts.multi_loss_s[0] == 0.0  # no second loss in a one-packet transfer


@pytest.mark.parametrize(("n", "p"), [(2, 0.1), (12, 0.2), (60, 0.01), (300, 0.05)])
def test_sikdar_loss_count_and_second_loss_against_enumeration(n, p):
    k = np.arange(n + 1)
    pmf = np.array([math.comb(n, int(i)) for i in k]) * p**k * (1 - p) ** (n - k)
    several = pmf[2:].sum()
    j = np.arange(2, n + 1)
    second = np.sum(j * (j - 1) * p**2 * (1 - p) ** (j - 2)) / several
    parts = sikdar_components(n, p, 1.0, 3.0)
    assert parts.multi_loss_probability == pytest.approx(several, rel=1e-10)
    assert parts.expected_losses == pytest.approx(np.sum(k[2:] * pmf[2:]) / several, rel=1e-10)
    assert parts.second_loss_position == pytest.approx(second, rel=1e-10)


def test_sikdar_loss_count_tends_to_two_as_losses_vanish():
    parts = sikdar_components(np.array([5, 50, 500]), 1e-12, 1.0, 3.0)
    assert parts.expected_losses == pytest.approx([2, 2, 2], rel=1e-6)
    assert parts.second_loss_position == pytest.approx(2 * np.array([6, 51, 501]) / 3, rel=1e-6)


def test_sikdar_arrays_match_scalars():
    sizes = np.array([[1, 7, 300], [40, 2, 1000]])
    p = np.array([[0.01], [0.2]])
    w_max = np.array([np.inf, 5.0, 30.0])
    got = sikdar_latency_s(sizes, p, 0.5, 2.0, wmax_pkts=w_max)
    assert got.shape == (2, 3)
    for i in range(2):
        for j in range(3):
            one = sikdar_latency_s(sizes[i, j], p[i, 0], 0.5, 2.0, wmax_pkts=w_max[j])
            assert got[i, j] == pytest.approx(one, rel=1e-13)


@pytest.mark.parametrize("w_max", [np.inf, 10.0, 31.5])
def test_sikdar_sampled_positions_match_every_position(monkeypatch, w_max):
    # 2560 packets in 256 strata put one sample every 10 packets, the round length at W_max = 10:
    # evenly spaced samples would all fall at the same place in their rounds.
    sizes = np.array([300, 1000, 2560, 3000])
    sampled = sikdar_components(sizes, 1e-3, 1.0, 8.0, wmax_pkts=w_max)
    monkeypatch.setattr(short, "_MAX_POSITIONS", 10**6)
    exact = sikdar_components(sizes, 1e-3, 1.0, 8.0, wmax_pkts=w_max)
    assert sampled.single_loss_s == pytest.approx(exact.single_loss_s, rel=1e-2)
    # The timeout share is an indicator average: 256 samples pin it to a few hundredths.
    assert sampled.single_loss_timeout_share == pytest.approx(
        exact.single_loss_timeout_share, abs=0.05
    )


def test_sikdar_tail_loss_times_out_until_three_packets_follow():
    # Round 8 ends at packet ⌊pkt(8)⌋ = 61. With 63 packets a loss in round 8 leaves at most two
    # packets to return duplicate ACKs, so it times out; with 64 most of round 8 recovers by fast
    # retransmit, and the longer transfer is faster on average when T0 is large.
    assert math.floor(sikdar_packets_sent(8)) == 61
    parts = sikdar_components(np.array([63, 64]), 3e-3, 1.0, 10.0)
    assert parts.single_loss_timeout_share[1] < parts.single_loss_timeout_share[0] - 0.2
    assert parts.total_s[1] < parts.total_s[0]


@pytest.mark.parametrize("p", [1e-3, 0.02, 0.2])
def test_sikdar_bulk_limit_is_close_to_the_pftk_rate(p):
    rate = pftk_full_throughput(p, 2.0, 6.0)
    latency = sikdar_latency_s(1e6, p, 2.0, 6.0)
    assert latency * rate / 1e6 == pytest.approx(1.0, abs=2e-3)


@settings(max_examples=40, deadline=None)
@given(
    size=st.integers(1, 256),
    p=loss,
    r=rtt,
    k=rto_factor,
    w_max=wmax,
    b=st.sampled_from([1, 2]),
    up=growth,
)
def test_sikdar_grows_with_size_loss_and_rtt(size, p, r, k, w_max, b, up):
    # Adding a few packets can shorten a transfer (test above), so size is doubled here.
    sizes = np.array([size, 2 * size, size, size])
    losses = np.array([p, p, min(p * up, 0.49), p])
    rtts = np.array([r, r, r, r * up])
    t = sikdar_latency_s(sizes, losses, rtts, k * r, b, w_max)
    assert np.all(t[1:] >= t[0])


# ---------------------------------------------------------------------------------------------
# Input checks

GOOD = {"size_pkts": 10, "p": 0.01, "rtt_s": 1.0, "t0_s": 3.0}


@pytest.mark.parametrize("model", [cardwell_latency_s, sikdar_latency_s])
@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("size_pkts", 0),
        ("size_pkts", np.nan),
        ("size_pkts", np.inf),
        ("p", 0.0),
        ("p", 0.5),
        ("p", np.nan),
        ("rtt_s", 0.0),
        ("rtt_s", -1.0),
        ("t0_s", 0.0),
        ("b", 0.0),
        ("wmax_pkts", 0.5),
        ("ts_s", -1.0),
        ("delack_s", -0.1),
    ],
)
def test_bad_inputs_name_the_parameter(model, name, value):
    with pytest.raises(ValueError, match=name):
        model(**(GOOD | {name: value}))


def test_bad_initial_window_is_named():
    with pytest.raises(ValueError, match="w1_pkts"):
        cardwell_latency_s(**GOOD, w1_pkts=0.5)


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: handshake_latency_s(0.0, 3.0, 0.1), "rtt_s"),
        (lambda: handshake_latency_s(1.0, -3.0, 0.1), "ts_s"),
        (lambda: handshake_latency_s(1.0, 3.0, -0.1), "p_syn"),
        (lambda: slow_start_growth_factor(0), "b"),
        (lambda: sikdar_window(0), "n"),
        (lambda: sikdar_packets_sent(-1), "k"),
        (lambda: sikdar_rounds_to_wmax(0.5), "wmax_pkts"),
        (lambda: sikdar_lossless_rounds(0), "size_pkts"),
        (lambda: linear_growth_rounds(-1, 2), "packets"),
        (lambda: linear_growth_rounds(5, 0.5), "w_start_pkts"),
        (lambda: cardwell_latency_s([1, 2], [0.1, 0.2, 0.3], 1.0, 3.0), "cannot be broadcast"),
    ],
)
def test_other_bad_inputs_name_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()
