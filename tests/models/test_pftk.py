"""PFTK and Mathis: closed forms against their derivations, and the invariants of the models."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from farlink.models import (
    expected_rounds_per_tdp,
    expected_timeout_sequence_s,
    expected_unconstrained_window,
    mathis_throughput,
    pftk_approx_throughput,
    pftk_full_throughput,
    pftk_no_timeout_throughput,
    timeout_probability,
)

loss = st.floats(1e-6, 0.3)
rtt = st.floats(1e-3, 60.0)
# An RTO is never shorter than the RTT it is computed from (RFC 6298: SRTT + 4 RTTVAR), so the
# invariants are stated on T0 = k RTT with k >= 1; PFTK itself assumes T0 well above RTT.
rto_factor = st.floats(1.0, 20.0)
wmax = st.one_of(st.just(np.inf), st.floats(1.0, 1e4))


def test_no_timeout_throughput_at_table_6_1_parameters_by_hand():
    # p = 5e-4, b = 2, RTT = 19 s, Wmax = 47.9 KB / 1448 B: window-limited branch of eq. 28.
    w = 47.9e3 / 1448
    packets = (1 - 5e-4) / 5e-4 + w
    period = 19 * (2 / 8 * w + (1 - 5e-4) / (5e-4 * w) + 2)
    assert pftk_no_timeout_throughput(5e-4, 19.0, 2, w) == pytest.approx(packets / period, 1e-12)


def test_unlimited_branch_is_eq_9():
    p, r, b = 0.01, 0.2, 2
    c = (2 + b) / (3 * b)
    ey = (1 - p) / p + c + np.sqrt(8 * (1 - p) / (3 * b * p) + c * c)
    d = (2 + b) / 6
    ea = r * (d + np.sqrt(2 * b * (1 - p) / (3 * p) + d * d) + 1)
    assert pftk_no_timeout_throughput(p, r, b) == pytest.approx(ey / ea, 1e-12)


@given(p=loss, b=st.sampled_from([1, 2, 3]))
def test_rounds_are_b_over_2_windows(p, b):
    # E[X] = (b/2) E[W_u]: eqs. 5 and 6 describe the same linear growth.
    assert expected_rounds_per_tdp(p, b) == pytest.approx(
        b / 2 * expected_unconstrained_window(p, b), rel=1e-9
    )


@pytest.mark.parametrize("p", [1e-4, 0.01, 0.1, 0.3])
def test_timeout_sequence_closed_form_equals_its_series(p):
    # Seed 000 section 4.2.1: L_k = (2^k − 1) T0 for k ≤ 6, (63 + 64 (k − 6)) T0 beyond,
    # P(R = k) = p^(k−1) (1 − p); E[Z^TO] = Σ L_k P(R = k) = T0 f(p) / (1 − p).
    k = np.arange(1, 400)
    lengths = np.where(k <= 6, 2.0**k - 1, 63 + 64 * (k - 6))
    series = np.sum(lengths * p ** (k - 1) * (1 - p))
    assert expected_timeout_sequence_s(p, 1.0) == pytest.approx(series, rel=1e-12)
    assert expected_timeout_sequence_s(p, 60.0) == pytest.approx(60 * series, rel=1e-12)


def test_q_hat_is_one_for_tiny_windows_and_about_3_over_w_for_small_p():
    assert timeout_probability(0.01, [1, 2, 3]).tolist() == [1.0, 1.0, 1.0]
    w = np.array([10.0, 30.0, 100.0])
    assert timeout_probability(1e-7, w) == pytest.approx(3 / w, rel=1e-3)


@given(p=loss, w=st.floats(1.0, 1e4))
def test_q_hat_is_a_probability(p, w):
    assert 0.0 <= timeout_probability(p, w) <= 1.0


def test_mathis_is_the_small_loss_limit_of_pftk():
    p = np.array([1e-6, 1e-5])
    ratio = pftk_no_timeout_throughput(p, 0.1) / mathis_throughput(p, 0.1)
    assert ratio == pytest.approx(1.0, abs=0.01)
    assert abs(ratio[0] - 1) < abs(ratio[1] - 1)


MODELS = {
    "full": lambda p, r, t, w: pftk_full_throughput(p, r, t, 2, w),
    "approx": lambda p, r, t, w: pftk_approx_throughput(p, r, t, 2, w),
    "no_timeout": lambda p, r, t, w: pftk_no_timeout_throughput(p, r, 2, w),
}


@pytest.mark.parametrize("name", sorted(MODELS))
@given(p1=loss, p2=loss, r=rtt, k=rto_factor, w=wmax)
def test_throughput_falls_with_loss(name, p1, p2, r, k, w):
    lo, hi = sorted((p1, p2))
    t = k * r
    model = MODELS[name]
    assert model(hi, r, t, w) <= model(lo, r, t, w) * (1 + 1e-12)


@pytest.mark.parametrize("name", sorted(MODELS))
@given(p=loss, r1=rtt, r2=rtt, k=rto_factor, w=wmax)
def test_throughput_falls_with_rtt(name, p, r1, r2, k, w):
    lo, hi = sorted((r1, r2))
    t = k * hi
    model = MODELS[name]
    assert model(p, hi, t, w) <= model(p, lo, t, w) * (1 + 1e-12)


@pytest.mark.parametrize("name", sorted(MODELS))
@given(p=loss, r=rtt, k=rto_factor, w=st.floats(1.0, 1e4))
def test_throughput_never_exceeds_window_over_rtt(name, p, r, k, w):
    t = k * r
    assert MODELS[name](p, r, t, w) <= w / r * (1 + 1e-12)


def test_full_model_is_below_no_timeout_model():
    p = np.geomspace(1e-4, 0.2, 50)
    assert np.all(pftk_full_throughput(p, 0.2, 1.0) < pftk_no_timeout_throughput(p, 0.2))


def test_vectorised_over_a_grid_and_scalar_in_scalar_out():
    grid = pftk_full_throughput(np.geomspace(1e-4, 0.1, 7)[:, None], [0.1, 1.0, 10.0], 1.0)
    assert grid.shape == (7, 3)
    scalar = pftk_full_throughput(0.01, 0.1, 1.0)
    assert np.ndim(scalar) == 0
    assert float(scalar) == pytest.approx(grid[np.isclose(np.geomspace(1e-4, 0.1, 7), 0.01)][0, 0])


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"p": 0.0, "rtt_s": 1.0, "t0_s": 1.0}, "p"),
        ({"p": 1.0, "rtt_s": 1.0, "t0_s": 1.0}, "p"),
        ({"p": 0.01, "rtt_s": -1.0, "t0_s": 1.0}, "rtt_s"),
        ({"p": 0.01, "rtt_s": 1.0, "t0_s": np.nan}, "t0_s"),
        ({"p": 0.01, "rtt_s": 1.0, "t0_s": 1.0, "wmax_pkts": 0.5}, "wmax_pkts"),
    ],
)
def test_bad_parameters_name_themselves(kwargs, name):
    with pytest.raises(ValueError, match=rf"^{name} must be"):
        pftk_full_throughput(**kwargs)


@pytest.mark.parametrize("wmax", [4.0, 40.0, 400.0])
def test_branches_of_eq_28_meet_where_the_window_limit_starts_to_bind(wmax):
    from scipy.optimize import brentq

    edge = brentq(lambda p: expected_unconstrained_window(p) - wmax, 1e-9, 0.999, xtol=1e-16)
    below, above = edge * (1 - 1e-9), edge * (1 + 1e-9)
    for model in (
        lambda p: pftk_no_timeout_throughput(p, 0.6, 2, wmax),
        lambda p: pftk_full_throughput(p, 0.6, 2.0, 2, wmax),
    ):
        assert model(below) == pytest.approx(model(above), rel=1e-6)
