"""Steady-state throughput of a bulk TCP Reno flow: Padhye et al. (PFTK) and Mathis et al.

References
    [PFTK] J. Padhye, V. Firoiu, D. Towsley, J. Kurose, "Modeling TCP Reno performance: a simple
        model and its empirical validation", IEEE/ACM Trans. Networking 8(2), 2000 (SIGCOMM '98).
    [Mathis] M. Mathis, J. Semke, J. Mahdavi, T. Ott, "The macroscopic behavior of the TCP
        congestion avoidance algorithm", ACM CCR 27(3), 1997.
    Seed 000, section 4.2.3 (eqs. 1–14) and section 6.2 (eqs. 25–29), which restate PFTK with the
    notation used here.

Notation (all broadcast over NumPy arrays):
    p          probability that a packet is lost, independently per round after the first loss
               (PFTK's correlated-within-a-round loss model), in (0, 1)
    rtt_s      mean round-trip time, seconds
    t0_s       initial retransmission timeout T_0, seconds (doubled per back-off, up to 64 T_0)
    b          packets acknowledged per ACK (2 with delayed ACKs, the default throughout farlink)
    wmax_pkts  receiver-window limit W_max in packets (bytes / MSS); ``inf`` for none

Every throughput is in packets (segments) per second; multiply by ``8 * mss_bytes`` for bit/s.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from farlink.models import _arrays as ar

__all__ = [
    "MODELLED_CONTROLLERS",
    "expected_rounds_per_tdp",
    "expected_timeout_sequence_s",
    "expected_unconstrained_window",
    "mathis_throughput",
    "pftk_approx_throughput",
    "pftk_full_throughput",
    "pftk_no_timeout_throughput",
    "timeout_backoff_factor",
    "timeout_probability",
]

DEFAULT_B = 2

MODELLED_CONTROLLERS = frozenset({"reno"})
"""The congestion controllers (scenario ``tcp.cc``) whose flows these models describe: Reno's
loss-driven AIMD (one segment per round in congestion avoidance, the window halved at a triple
duplicate ACK), under any of farlink's loss recoveries. Delay-based (Vegas, ST-PD), rate-based
(BBR) and other window laws (CUBIC, BIC, Hybla, Westwood+) are outside them."""


def expected_unconstrained_window(p: ArrayLike, b: ArrayLike = DEFAULT_B) -> np.ndarray:
    """E[W_u], the mean window at the end of a triple-duplicate period (seed 000 eqs. 5 and 27)."""
    p, b = ar.broadcast(p=p, b=b)
    ar.probability("p", p)
    ar.positive("b", b)
    c = (2 + b) / (3 * b)
    return ar.result(c + np.sqrt(8 * (1 - p) / (3 * b * p) + c * c))


def expected_rounds_per_tdp(p: ArrayLike, b: ArrayLike = DEFAULT_B) -> np.ndarray:
    """E[X], the mean number of rounds in a triple-duplicate period (seed 000 eq. 6)."""
    p, b = ar.broadcast(p=p, b=b)
    ar.probability("p", p)
    ar.positive("b", b)
    c = (2 + b) / 6
    return ar.result(c + np.sqrt(2 * b * (1 - p) / (3 * p) + c * c))


def timeout_backoff_factor(p: ArrayLike) -> np.ndarray:
    """f(p) = 1 + p + 2p² + 4p³ + 8p⁴ + 16p⁵ + 32p⁶ ([PFTK]; seed 000 section 4.2.1, eq. 31).

    The back-off doubles the timeout six times and then holds it at 64 T_0, the cap the seeds use.
    """
    p = np.asarray(p, dtype=np.float64)
    return ar.result(1 + p * (1 + p * (2 + p * (4 + p * (8 + p * (16 + 32 * p))))))


def expected_timeout_sequence_s(p: ArrayLike, t0_s: ArrayLike) -> np.ndarray:
    """E[Z^TO] = T_0 f(p) / (1 − p), the mean length of a sequence of timeouts (seed 000 eq. 31)."""
    p, t0_s = ar.broadcast(p=p, t0_s=t0_s)
    ar.probability("p", p)
    ar.positive("t0_s", t0_s)
    return ar.result(t0_s * timeout_backoff_factor(p) / (1 - p))


def timeout_probability(p: ArrayLike, w: ArrayLike) -> np.ndarray:
    """Q̂(p, w): probability that a loss in a window of ``w`` packets ends in a timeout [PFTK].

    Q̂ = min(1, (1 − (1−p)³)(1 + (1−p)³(1 − (1−p)^(w−3))) / (1 − (1−p)^w)), and 1 for w ≤ 3,
    where fewer than three packets can follow the loss and no triple duplicate ACK can arrive.
    """
    p, w = ar.broadcast(p=p, w=w)
    ar.probability("p", p)
    log_q = np.log1p(-p)  # (1 − p)^k = exp(k log(1 − p)), accurate for tiny p
    q3 = np.exp(3 * log_q)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        numerator = -np.expm1(3 * log_q) * (1 + q3 * -np.expm1((w - 3) * log_q))
        q_hat = np.minimum(1.0, numerator / -np.expm1(w * log_q))
    return ar.result(np.where(w <= 3, 1.0, q_hat))


def _window_limited_tdp(
    p: np.ndarray, rtt_s: np.ndarray, b: np.ndarray, wmax_pkts: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """E[Y] and E[A] when the window sits at W_max (seed 000 eq. 28, second branch)."""
    with np.errstate(invalid="ignore", over="ignore"):
        packets = (1 - p) / p + wmax_pkts
        duration = rtt_s * (b / 8 * wmax_pkts + (1 - p) / (p * wmax_pkts) + 2)
    return packets, duration


def _checked(p: ArrayLike, rtt_s: ArrayLike, b: ArrayLike, wmax_pkts: ArrayLike, **more: ArrayLike):
    arrays = ar.broadcast(p=p, rtt_s=rtt_s, b=b, wmax_pkts=wmax_pkts, **more)
    ar.probability("p", arrays[0])
    ar.positive("rtt_s", arrays[1])
    ar.positive("b", arrays[2])
    ar.window("wmax_pkts", arrays[3])
    for name, value in zip(more, arrays[4:], strict=True):
        ar.positive(name, value)
    return arrays


def pftk_no_timeout_throughput(
    p: ArrayLike, rtt_s: ArrayLike, b: ArrayLike = DEFAULT_B, wmax_pkts: ArrayLike = np.inf
) -> np.ndarray:
    """B_NT: throughput of a flow that never times out (seed 000 eqs. 9 and 29).

    The first branch of eq. 29 (E[W_u] < W_max) is PFTK's eq. 9; the second holds the window at
    W_max and uses the window-limited period of eq. 28. Packets per second.
    """
    p, rtt_s, b, wmax = _checked(p, rtt_s, b, wmax_pkts)
    w_u = expected_unconstrained_window(p, b)
    x = expected_rounds_per_tdp(p, b)
    free = ((1 - p) / p + w_u) / (rtt_s * (x + 1))
    # Clamping keeps the unused branch finite when W_max is inf.
    y_lim, a_lim = _window_limited_tdp(p, rtt_s, b, np.minimum(wmax, w_u))
    return ar.result(np.where(w_u < wmax, free, y_lim / a_lim))


def pftk_full_throughput(
    p: ArrayLike,
    rtt_s: ArrayLike,
    t0_s: ArrayLike,
    b: ArrayLike = DEFAULT_B,
    wmax_pkts: ArrayLike = np.inf,
) -> np.ndarray:
    """The full PFTK model with timeouts and the receiver-window limit ([PFTK] eq. 31).

    B = (E[Y] + Q̂ E[R]) / (E[A] + Q̂ E[Z^TO]), with E[R] = 1/(1−p) packets sent in a timeout
    sequence, evaluated with the unconstrained window when E[W_u] < W_max and with the window
    held at W_max otherwise. Packets per second.
    """
    p, rtt_s, b, wmax, t0_s = _checked(p, rtt_s, b, wmax_pkts, t0_s=t0_s)
    w_u = expected_unconstrained_window(p, b)
    x = expected_rounds_per_tdp(p, b)
    z_to = expected_timeout_sequence_s(p, t0_s)
    e_r = 1 / (1 - p)

    q_free = timeout_probability(p, w_u)
    free = ((1 - p) / p + w_u + q_free * e_r) / (rtt_s * (x + 1) + q_free * z_to)

    w_clamped = np.minimum(wmax, w_u)  # keeps the unused branch finite when W_max is inf
    q_lim = timeout_probability(p, w_clamped)
    y_lim, a_lim = _window_limited_tdp(p, rtt_s, b, w_clamped)
    limited = (y_lim + q_lim * e_r) / (a_lim + q_lim * z_to)
    return ar.result(np.where(w_u < wmax, free, limited))


def pftk_approx_throughput(
    p: ArrayLike,
    rtt_s: ArrayLike,
    t0_s: ArrayLike,
    b: ArrayLike = DEFAULT_B,
    wmax_pkts: ArrayLike = np.inf,
) -> np.ndarray:
    """The approximate PFTK model (seed 000 eq. 14; [PFTK] eq. 33 with the window limit).

    B ≈ min(W_max / RTT, 1 / (RTT √(2bp/3) + T_0 min(1, 3√(3bp/8)) p (1 + 32p²))).
    Seed 000 prints eq. 14 without the W_max/RTT term; it is [PFTK]'s and is applied here
    (with W_max = inf it vanishes). Packets per second.
    """
    p, rtt_s, b, wmax, t0_s = _checked(p, rtt_s, b, wmax_pkts, t0_s=t0_s)
    timeouts = t0_s * np.minimum(1.0, 3 * np.sqrt(3 * b * p / 8)) * p * (1 + 32 * p * p)
    return ar.result(np.minimum(wmax / rtt_s, 1 / (rtt_s * np.sqrt(2 * b * p / 3) + timeouts)))


def mathis_throughput(p: ArrayLike, rtt_s: ArrayLike, b: ArrayLike = DEFAULT_B) -> np.ndarray:
    """Mathis et al.: B = (1/RTT) √(3 / (2bp)) packets per second ([Mathis]).

    The constant √(3/(2b)) is 1.22 without delayed ACKs (b = 1) and 0.87 with them (b = 2). The
    model has no timeouts and no window limit, so it overestimates lossy long-delay paths.
    """
    p, rtt_s, b = ar.broadcast(p=p, rtt_s=rtt_s, b=b)
    ar.probability("p", p)
    ar.positive("rtt_s", rtt_s)
    ar.positive("b", b)
    return ar.result(np.sqrt(3 / (2 * b * p)) / rtt_s)
