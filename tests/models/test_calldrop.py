"""The call-drop model of seed 000 chapter 6 (eqs. 24–36)."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from farlink.models import (
    bundle_drop_rate_per_s,
    calldrop_prediction,
    calldrop_throughput,
    calldrop_transfer_time_s,
    expected_timeout_sequence_s,
    pftk_no_timeout_throughput,
)

loss = st.floats(1e-5, 0.05)
rtt = st.floats(0.05, 60.0)
t0 = st.floats(1.0, 120.0)
# An RTO is never shorter than the RTT it is computed from (RFC 6298: SRTT + 4 RTTVAR); the
# invariants below are stated on that physical domain, T0 = k * RTT with k >= 1.
rto_factor = st.floats(1.0, 20.0)
drop_rate = st.floats(0.0, 1e-2)
wmax = st.one_of(st.just(np.inf), st.floats(2.0, 500.0))


def test_eq_36_by_hand_at_table_6_1():
    # λ = 8/50 min; B = [1 − λ T0 f(p)/(1−p)] B_NT + λ/(1−p).
    lam = 8 / 3000
    p = 5e-4
    f = 1 + p + 2 * p**2 + 4 * p**3 + 8 * p**4 + 16 * p**5 + 32 * p**6
    b_nt = pftk_no_timeout_throughput(p, 19.0, 2, 47.9e3 / 1448)
    expected = (1 - lam * 60 * f / (1 - p)) * b_nt + lam / (1 - p)
    assert calldrop_throughput(p, 19.0, 60.0, lam, 2, 47.9e3 / 1448) == pytest.approx(expected)


def test_transfer_time_divides_segments_by_throughput():
    # Eq. 24 as printed multiplies; the division is what the tables need.
    t = calldrop_transfer_time_s(20.6e6, 1448, 5e-4, 19.0, 60.0, 8 / 3000, 2, 47.9e3 / 1448)
    b = calldrop_throughput(5e-4, 19.0, 60.0, 8 / 3000, 2, 47.9e3 / 1448)
    assert t == pytest.approx(np.ceil(20.6e6 / 1448) / b)
    assert t / 60 == pytest.approx(187, rel=0.01)  # seed 000 Table 6.1, predicted row


@given(p=loss, r=rtt, t=t0, w=wmax)
def test_eq_36_equals_eq_29_without_call_drops(p, r, t, w):
    assert calldrop_throughput(p, r, t, 0.0, 2, w) == pytest.approx(
        pftk_no_timeout_throughput(p, r, 2, w), rel=1e-12
    )


@given(p1=loss, p2=loss, r=rtt, k=rto_factor, lam=drop_rate, w=wmax)
def test_throughput_falls_with_loss(p1, p2, r, k, lam, w):
    lo, hi = sorted((p1, p2))
    t = k * r
    assert calldrop_throughput(hi, r, t, lam, 2, w) <= calldrop_throughput(lo, r, t, lam, 2, w) * (
        1 + 1e-9
    )


@given(p=loss, r1=rtt, r2=rtt, k=rto_factor, lam=drop_rate, w=wmax)
def test_throughput_falls_with_rtt(p, r1, r2, k, lam, w):
    lo, hi = sorted((r1, r2))
    t = k * max(r1, r2)
    assert calldrop_throughput(p, hi, t, lam, 2, w) <= calldrop_throughput(p, lo, t, lam, 2, w) * (
        1 + 1e-12
    )


@given(p=loss, r=rtt, k=rto_factor, lam1=drop_rate, lam2=drop_rate, w=wmax)
def test_throughput_falls_with_drop_rate(p, r, k, lam1, lam2, w):
    lo, hi = sorted((lam1, lam2))
    t = k * r
    assert calldrop_throughput(p, r, t, hi, 2, w) <= calldrop_throughput(p, r, t, lo, 2, w) * (
        1 + 1e-12
    )


@given(p=loss, r=rtt, k=rto_factor, lam=drop_rate, w=st.floats(2.0, 500.0))
def test_throughput_never_exceeds_window_over_rtt(p, r, k, lam, w):
    t = k * r
    assert calldrop_throughput(p, r, t, lam, 2, w) <= w / r


def test_timeout_dominated_regime_is_continuous_and_flat():
    p, t0 = 5e-4, 60.0
    z = expected_timeout_sequence_s(p, t0)
    edge = 1 / z
    lams = np.array([edge * 0.999999, edge, edge * 1.000001, edge * 10])
    b = calldrop_throughput(p, 19.0, t0, lams, 2, 33.0)
    floor = 1 / ((1 - p) * z)
    assert b[1:] == pytest.approx(np.full(3, floor))
    assert b[0] == pytest.approx(floor, rel=1e-4)
    flags = calldrop_prediction(
        size_bytes=1e6,
        n_links=1,
        rtt_s=19.0,
        p=p,
        beta_per_s=lams,
        t0_s=t0,
        mss_bytes=1448,
        wmax_bytes=47.9e3,
    ).timeout_dominated
    assert flags.tolist() == [False, True, True, True]


def test_bundle_rate_merges_poisson_members():
    assert bundle_drop_rate_per_s(8, 1 / 3000) == pytest.approx(8 / 3000)
    with pytest.raises(ValueError, match="beta_per_s"):
        bundle_drop_rate_per_s(8, -1.0)


def test_prediction_broadcasts_sizes_against_rates():
    result = calldrop_prediction(
        size_bytes=np.array([1e6, 2e6, 4e6])[:, None],
        n_links=8,
        rtt_s=19.0,
        p=5e-4,
        beta_per_s=np.array([1 / 3000, 1 / 1800]),
        t0_s=60.0,
        mss_bytes=1448,
        wmax_bytes=47.9e3,
    )
    assert result.transfer_time_s.shape == (3, 2)
    # Time grows with the segment count at a fixed throughput, and with the drop rate.
    assert np.all(np.diff(result.transfer_time_s, axis=0) > 0)
    assert np.all(np.diff(result.transfer_time_s, axis=1) > 0)
    assert np.all(result.window_limited)


@pytest.mark.parametrize(
    ("override", "name"),
    [
        ({"size_bytes": 0.0}, "size_bytes"),
        ({"p": 1.5}, "p"),
        ({"mss_bytes": -1.0}, "mss_bytes"),
        ({"beta_per_s": -1.0}, "beta_per_s"),
        ({"n_links": 0}, "n_links"),
    ],
)
def test_bad_input_names_the_parameter(override, name):
    params = dict(
        size_bytes=1e6,
        n_links=8,
        rtt_s=19.0,
        p=5e-4,
        beta_per_s=1 / 3000,
        t0_s=60.0,
        mss_bytes=1448,
    )
    params.update(override)
    with pytest.raises(ValueError, match=name):
        calldrop_prediction(**params)
