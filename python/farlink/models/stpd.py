"""The transient model of ST-PD TCP (seed 003 section 4.3) and the design of its fuzzy supervisor.

References
    Seed 003: the ST-PD controller (section 3.4, eqs. 3.2–3.5, the fuzzy supervisor of 3.4.3.2),
    its decoupled error control (4.2) and its transient analysis (4.3, eqs. 4.1–4.19, the mean
    gains and the four poles of 4.3.3). ``docs/stpd.md`` derives what is summarised here.

Notation (kp, kd broadcast over NumPy arrays; m is one integer)
    m      the feedback delay: the round trip in packet times of the bottleneck (seed: m = 3)
    kp, kd the gains of the PD law
    n      time in packet times; d(n) = 1 packet per packet time leaves the bottleneck (eq. 4.8)
    a(n)   packets arriving at the bottleneck per packet time, normalised to its rate
    b(n)   the queue at the bottleneck, r(n) its reference (one packet), e = r − b (eq. 4.2)

The three readings of eqs. 4.1–4.11 (``reading=``)
    "printed"    eq. 4.1 as printed: a(n) = a(n−1) + kp·e(n−m) + kd·(e(n−m) − e(n−m−1)), with the
                 linearised queue b(n) = b(n−1) + a(n) − d(n) (eq. 4.6). Eliminating b (eqs.
                 4.4–4.11) leaves the denominator 1 − z⁻¹ + z⁻ᵐ (1 − z⁻¹)⁻¹ (kp + kd(1 − z⁻¹)),
                 whose poles are the roots of
                     z^(m−1) (z − 1)² + (kp + kd) z − kd.
                 For m = 3, kp = 0.368, kd = 0.033 they are 1.1150 ± 0.5397i, −0.3014 and 0.0713:
                 two outside the unit circle, not the poles section 4.3.3 publishes.
    "published"  the same with kp and kd exchanged (kp on the difference of the error, kd on the
                 error): z^(m−1) (z − 1)² + (kp + kd) z − kp. For the same values its roots are
                 −0.5023, 0.8031 ± 0.4155i and 0.8961, the four poles of section 4.3.3, to the
                 digits printed. This is the reading that reproduces the seed's Figures 4.5 and 4.6.
    "window"     ours: the PD law of eq. 3.5 sets a window, not a rate. With the ACK clock the
                 arrival rate exceeds the departure rate by the window's increment, so
                 a(n) = d(n) + kp·e(n−m) + kd·(e(n−m) − e(n−m−1)) and the poles are the roots of
                     z^m (z − 1) + (kp + kd) z − kd.
                 Summed once, the published reading's a(n) is kp·e + kd·Σe: it shares the window
                 reading's dominant term kp·e(n−m) and differs by the small kd term, which is why
                 its poles are close to the window reading's (0.73 ± 0.43i, −0.55, 0.08 at the
                 published gains) and the printed reading's are not. ``docs/stpd.md`` checks all
                 three against the simulated controller: at section 4.3.3's operating point the
                 published and window readings settle as the simulation does and the printed one
                 grows without bound; on the seed's wired path only the window reading is stable,
                 as the simulated controller is.

A loss (eqs. 4.13–4.17)
    A packet lost after the bottleneck leaves the queue one packet short for a round trip: the
    error carries an extra +1 for the m + 1 packet times from the loss (eq. 4.15's
    Σ_{i=p}^{p+m} δ(n − i)). :func:`loss_response` is a(n) after such a loss from the steady
    state a = d = 1, b = r = 1; :func:`arrival_rate` is eq. 4.17 itself (start from an empty
    path at n = 0, the loss at ``loss_at``).

Normalised throughput (eq. 4.19)
    One packet in K = 1/p is lost; between losses the link carries min(a(i), 1) per packet time,
    so η(p) = (1/K) Σ_{i=0}^{K−1} min(a(i), 1) with a the loss response (the seed prints the sum
    to K; we take K terms so that a loss-free cycle gives exactly 1). K = 1/p need not be whole:
    the partial sum is interpolated linearly. Each cycle starts from the steady state, as in the
    seed, so the model ignores losses closer together than the response lasts, and it knows
    nothing of timeouts (seed 003 notes it overestimates for p above 10⁻²).

The fuzzy supervisor (section 3.4.3.2; the design is ours, the seed's figures did not survive)
    :func:`supervisor_design` recomputes the output terms ``crates/farlink-core/src/tcp/cc/
    stpd.rs`` holds; :func:`supervisor_gains` evaluates the supervisor as the controller does.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import minimize_scalar

from farlink.models import _arrays as ar

__all__ = [
    "EXAMPLE_M",
    "INPUT_PEAKS_SEGMENTS",
    "MAX_M",
    "MEAN_KD",
    "MEAN_KP",
    "PUBLISHED_POLES",
    "READINGS",
    "STABILITY_TOLERANCE",
    "SupervisorDesign",
    "arrival_rate",
    "characteristic_polynomial",
    "damping_optimal_kd",
    "fastest_stable_opening",
    "is_stable",
    "loss_response",
    "normalised_throughput",
    "poles",
    "spectral_radius",
    "supervisor_design",
    "supervisor_gains",
    "ultimate_gain",
]

READINGS = ("printed", "published", "window")
"""The readings of eqs. 4.1–4.11 (see the module's docstring)."""

EXAMPLE_M = 3
"""Section 4.3.3: RTT 16 ms at 1.5 Mbit/s with 1000-byte packets, 3 packet times."""
MEAN_KP = 0.368
"""Section 4.3.3: the mean proportional gain."""
MEAN_KD = 0.033
"""Section 4.3.3: the mean derivative gain."""
EXAMPLE_LOSS_AT = 100
"""Section 4.3.3: the loss disturbs the queue at p = 100."""
PUBLISHED_POLES = (-0.5023, 0.8031 + 0.4155j, 0.8031 - 0.4155j, 0.8961)
"""Section 4.3.3: "The four poles of equation (4.18)"."""

INPUT_PEAKS_SEGMENTS = (1.0, 3.0, 9.0, 27.0, 81.0)
"""Peaks of the terms ES, S, M, L, EL of the perceived bandwidth–RTT product (segments)."""
ZIEGLER_NICHOLS_FRACTION = 0.6
"""Ziegler and Nichols's proportional gain of a PID controller, as a fraction of K_u."""
KD_SCALE_ANCHOR_M = 3
"""The input peak where the derivative gain is section 4.3.3's 0.033 (the S term)."""

STABILITY_TOLERANCE = 1e-9
"""How far inside the unit circle the largest pole must be for :func:`is_stable`."""

# Longest response computed for the throughput; a stable response has died out long before.
_MAX_HORIZON = 200_000
# The response is followed until it is within this of its final value.
_SETTLE_TOLERANCE = 1e-13


MAX_M = 1000
"""The largest round trip, in packet times, the model accepts: the poles are the eigenvalues of
an (m + 1)-square companion matrix, whose memory grows as m² and whose cost as m³ (m = 1000 is
8 MB and seconds; the 10^8 a user once typed asked NumPy for 71 PiB)."""


def _check_m(m: int) -> int:
    if isinstance(m, bool) or int(m) != m or not 1 <= m <= MAX_M:
        raise ValueError(f"m must be a whole number of packet times from 1 to {MAX_M}")
    return int(m)


def _check_reading(reading: str) -> None:
    if reading not in READINGS:
        raise ValueError(f"reading must be one of {', '.join(READINGS)}; got {reading!r}")


def _gains(kp: ArrayLike, kd: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    kp, kd = ar.broadcast(kp=kp, kd=kd)
    ar.require(np.isfinite(kp), "kp", "finite")
    ar.require(np.isfinite(kd), "kd", "finite")
    return kp, kd


def characteristic_polynomial(
    m: int, kp: ArrayLike, kd: ArrayLike, reading: str = "published"
) -> np.ndarray:
    """Coefficients, highest power first, of the polynomial whose roots are the poles.

    Shape ``(..., m + 2)`` for gains of shape ``(...)``: degree m + 1 in every reading.
    """
    m = _check_m(m)
    _check_reading(reading)
    kp, kd = _gains(kp, kd)
    coeffs = np.zeros((*kp.shape, m + 2))
    if reading == "window":
        # z^m (z − 1) + (kp + kd) z − kd
        coeffs[..., 0] = 1.0
        coeffs[..., 1] = -1.0
        level, difference = kp, kd
    else:
        # z^(m−1) (z − 1)² + (k_e + k_Δ) z − k_Δ, k_e on the error, k_Δ on its difference
        coeffs[..., 0] = 1.0
        coeffs[..., 1] = -2.0
        coeffs[..., 2] += 1.0
        level, difference = (kp, kd) if reading == "printed" else (kd, kp)
    coeffs[..., m] += level + difference
    coeffs[..., m + 1] -= difference
    return coeffs


def poles(m: int, kp: ArrayLike, kd: ArrayLike, reading: str = "published") -> np.ndarray:
    """The m + 1 poles (complex), shape ``(..., m + 1)``, sorted by real then imaginary part."""
    coeffs = characteristic_polynomial(m, kp, kd, reading)
    degree = coeffs.shape[-1] - 1
    companion = np.zeros((*coeffs.shape[:-1], degree, degree))
    companion[..., 0, :] = -coeffs[..., 1:]
    companion[..., np.arange(1, degree), np.arange(degree - 1)] = 1.0
    roots = np.linalg.eigvals(companion).astype(np.complex128)
    return np.sort_complex(roots)


def spectral_radius(m: int, kp: ArrayLike, kd: ArrayLike, reading: str = "published") -> np.ndarray:
    """The largest pole magnitude: the response decays as spectral_radius**n."""
    return ar.result(np.max(np.abs(poles(m, kp, kd, reading)), axis=-1))


def is_stable(m: int, kp: ArrayLike, kd: ArrayLike, reading: str = "published") -> np.ndarray:
    """Every pole strictly inside the unit circle (a bounded a(n), section 4.3.3).

    "Strictly" by more than ``STABILITY_TOLERANCE``: a pole on the circle (the published reading
    with kd = 0 has one at z = 1) comes out of the eigenvalue computation a rounding error away.
    """
    return ar.result(np.asarray(spectral_radius(m, kp, kd, reading)) < 1.0 - STABILITY_TOLERANCE)


def _respond(
    m: int,
    kp: np.ndarray,
    kd: np.ndarray,
    reading: str,
    reference: np.ndarray,
    departures: np.ndarray,
) -> np.ndarray:
    """Runs eqs. 4.1/4.2/4.6 (or the window reading) from zero state; a(n), shape (..., n)."""
    steps = reference.shape[-1]
    a = np.zeros((*kp.shape, steps))
    e = np.zeros((*kp.shape, steps))
    b_prev = np.zeros(kp.shape)
    a_prev = np.zeros(kp.shape)
    level, difference = (kd, kp) if reading == "published" else (kp, kd)
    with np.errstate(over="ignore", invalid="ignore"):
        for n in range(steps):
            e_m = e[..., n - m] if n >= m else 0.0
            e_m1 = e[..., n - m - 1] if n >= m + 1 else 0.0
            action = level * e_m + difference * (e_m - e_m1)
            a_n = departures[n] + action if reading == "window" else a_prev + action
            b_prev = b_prev + a_n - departures[n]
            e[..., n] = reference[n] - b_prev
            a[..., n] = a_n
            a_prev = a_n
    return a


def arrival_rate(
    steps: int,
    m: int = EXAMPLE_M,
    kp: ArrayLike = MEAN_KP,
    kd: ArrayLike = MEAN_KD,
    reading: str = "published",
    loss_at: int | None = EXAMPLE_LOSS_AT,
) -> np.ndarray:
    """a(n), n = 0 … steps − 1: the inverse z-transform of eq. 4.17 (of 4.11 if no ``loss_at``).

    The path starts empty at n = 0 with the reference one packet (r = u(n)) and the bottleneck
    serving one packet per packet time (d = u(n)); a loss at ``loss_at`` adds eq. 4.15's +1 to
    the reference for m + 1 packet times. With the defaults this is the seed's Figure 4.5.
    Shape ``(..., steps)``; an unstable reading grows without bound (to inf, then NaN).
    """
    m = _check_m(m)
    _check_reading(reading)
    kp, kd = _gains(kp, kd)
    if steps < 1:
        raise ValueError("steps must be at least 1")
    reference = np.ones(steps)
    if loss_at is not None:
        if loss_at < 0:
            raise ValueError("loss_at must be zero or positive")
        reference[loss_at : loss_at + m + 1] += 1.0
    return ar.result(_respond(m, kp, kd, reading, reference, np.ones(steps)))


def loss_response(
    steps: int,
    m: int = EXAMPLE_M,
    kp: ArrayLike = MEAN_KP,
    kd: ArrayLike = MEAN_KD,
    reading: str = "published",
) -> np.ndarray:
    """a(n) after one loss at n = 0 from the steady state a = d = 1, b = r = 1; shape (..., steps).

    The part of eq. 4.17 the loss contributes: 1 plus the response to eq. 4.15's disturbance.
    """
    m = _check_m(m)
    _check_reading(reading)
    kp, kd = _gains(kp, kd)
    if steps < 1:
        raise ValueError("steps must be at least 1")
    disturbance = np.zeros(steps)
    disturbance[: m + 1] = 1.0
    return ar.result(1.0 + _respond(m, kp, kd, reading, disturbance, np.zeros(steps)))


def _horizon(m: int, radius: np.ndarray) -> int:
    """Packet times until a response decaying as radius**n is below the tolerance."""
    stable = radius[radius < 1.0 - STABILITY_TOLERANCE]
    if stable.size == 0:
        return 4 * (m + 1)
    worst = float(np.max(stable))
    if worst <= 0.0:
        return 4 * (m + 1)
    # Poles of multiplicity > 1 decay as n·ρ^n: a margin of a few hundred steps covers them.
    steps = np.log(_SETTLE_TOLERANCE) / np.log(worst)
    return int(min(_MAX_HORIZON, 4 * (m + 1) + 2 * np.ceil(steps) + 200))


def normalised_throughput(
    p: ArrayLike,
    m: int = EXAMPLE_M,
    kp: ArrayLike = MEAN_KP,
    kd: ArrayLike = MEAN_KD,
    reading: str = "published",
) -> np.ndarray:
    """η(p) of eq. 4.19 for a packet error probability p in (0, 1); the seed's Figure 4.6.

    Broadcast over p, kp and kd. NaN where the reading is unstable for the gains (a(n) is then
    unbounded and eq. 4.19 meaningless); :func:`is_stable` tells which.
    """
    m = _check_m(m)
    _check_reading(reading)
    p, kp, kd = ar.broadcast(p=p, kp=kp, kd=kd)
    ar.probability("p", p)
    ar.require(np.isfinite(kp) & np.isfinite(kd), "kp and kd", "finite")
    radius = np.asarray(spectral_radius(m, kp, kd, reading), dtype=np.float64)
    stable = radius < 1.0 - STABILITY_TOLERANCE
    horizon = _horizon(m, radius)
    # Compute each distinct gain pair once (p usually varies, the gains do not).
    pairs, inverse = np.unique(
        np.stack([kp.ravel(), kd.ravel()], axis=-1), axis=0, return_inverse=True
    )
    response = loss_response(horizon, m, pairs[:, 0], pairs[:, 1], reading)
    response = np.asarray(response).reshape(len(pairs), horizon)
    deficit = np.concatenate(
        [np.zeros((len(pairs), 1)), np.cumsum(1.0 - np.minimum(response, 1.0), axis=-1)], axis=-1
    )
    k = 1.0 / p.ravel()
    rows = inverse.ravel()
    whole = np.minimum(np.floor(k), horizon).astype(np.int64)
    frac = np.where(k < horizon, k - np.floor(k), 0.0)
    nxt = np.minimum(whole + 1, horizon)
    lost = deficit[rows, whole] + frac * (deficit[rows, nxt] - deficit[rows, whole])
    eta = (1.0 - lost / k).reshape(p.shape)
    return ar.result(np.where(stable, eta, np.nan))


# ------------------------------------------------------------------------------------------------
# The fuzzy supervisor
# ------------------------------------------------------------------------------------------------


def ultimate_gain(m: ArrayLike) -> np.ndarray:
    """K_u(M) = 2 sin(π / (2(2M − 1))): the kp (kd = 0) at which the per-ACK loop oscillates.

    The window reading with feedback delay M ACKs, z^M (z − 1) + K z, has a pair of poles on the
    unit circle at angle ω = π/(2M − 1) when K = 2 sin(ω/2); below it every pole is inside.
    """
    m = np.asarray(m, dtype=np.float64)
    ar.require(m >= 1, "m", "at least 1")
    return ar.result(2.0 * np.sin(np.pi / (2.0 * (2.0 * m - 1.0))))


def damping_optimal_kd(m: int, kp: float) -> float:
    """The kd ≥ 0 that minimises the window reading's spectral radius for delay m and gain kp."""
    grid = np.linspace(0.0, 1.0, 1001)
    radii = np.asarray(spectral_radius(m, kp, grid, "window"))
    best = float(grid[int(np.argmin(radii))])
    lo, hi = max(0.0, best - 1e-3), best + 1e-3
    found = minimize_scalar(
        lambda x: float(spectral_radius(m, kp, x, "window")),
        bounds=(lo, hi),
        method="bounded",
        options={"xatol": 1e-10},
    )
    return float(found.x) if found.fun <= radii.min() else best


def fastest_stable_opening(m: int) -> tuple[float, float]:
    """The most segments per round trip eq. 3.5 can add on an empty queue, stably; and its kd.

    On an empty queue eq. 3.3 reads buf = 0 (RTT(n) cannot fall below RTT_min), so err = ref =
    1 on every ACK: each of the M ACKs of a round trip adds k_p, and the derivative term adds
    nothing (err does not change). The window opens by k_p·M segments per round trip. Where
    the window settles, M ACKs of delay, the loop (window reading) must be stable; this is the
    largest k_p·M for which some kd ≥ 0 (a grid of [0, 1] in steps of 0.005) leaves every pole
    inside the unit circle. It is 2 at M = 1 and falls towards about 1.82 for large M.
    """
    m = _check_m(m)
    kd = np.linspace(0.0, 1.0, 201)
    # For each kd, k_p is stable on an interval (0, k_max): bisect all of them at once.
    lo = np.zeros_like(kd)
    hi = np.full_like(kd, 4.0 / m)
    for _ in range(30):
        mid = 0.5 * (lo + hi)
        ok = np.asarray(is_stable(m, mid, kd, "window"))
        lo = np.where(ok, mid, lo)
        hi = np.where(ok, hi, mid)
    best = int(np.argmax(lo))
    return float(lo[best] * m), float(kd[best])


class SupervisorDesign(NamedTuple):
    """The supervisor's terms: input peaks, and the k_p and k_d output terms ES … EL."""

    input_peaks_segments: tuple[float, ...]
    kp_terms: tuple[float, ...]
    kd_terms: tuple[float, ...]
    kd_scale: float


def supervisor_design() -> SupervisorDesign:
    """Recomputes the output terms of ``stpd.rs`` from the design rules of ``docs/stpd.md``.

    k_p: Ziegler–Nichols 0.6·K_u(M) at each input peak M, assigned through the rule base
    (BDP ES → k_p EL, …, EL → ES). k_d: the damping-optimal derivative gain at each peak with
    that k_p, times one factor that makes the S term (M = 3, section 4.3.3's connection) equal
    section 4.3.3's mean 0.033; rule base BDP ES → k_d ES, …, EL → EL.
    """
    peaks = INPUT_PEAKS_SEGMENTS
    kp_at_peak = [ZIEGLER_NICHOLS_FRACTION * float(ultimate_gain(m)) for m in peaks]
    kd_opt = [damping_optimal_kd(int(m), k) for m, k in zip(peaks, kp_at_peak, strict=True)]
    scale = MEAN_KD / kd_opt[peaks.index(KD_SCALE_ANCHOR_M)]
    kp_terms = tuple(reversed(kp_at_peak))  # output term ES is the rule for input EL
    kd_terms = tuple(scale * k for k in kd_opt)
    return SupervisorDesign(peaks, kp_terms, kd_terms, scale)


def supervisor_gains(
    bdp_segments: ArrayLike, design: SupervisorDesign | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(k_p, k_d) for a perceived bandwidth–RTT product, as the controller computes them.

    Fuzzification by triangles on log₃ of the product peaking at the input peaks (ES below
    the first peak and EL above the last hold at one), rule bases of section 3.4.3.2, and
    centre-of-maximum defuzzification: the output terms' maxima weighted by the degrees.
    """
    design = design or supervisor_design()
    bdp = np.asarray(bdp_segments, dtype=np.float64)
    x = np.where(bdp > 1.0, np.log(np.where(bdp > 1.0, bdp, 1.0)) / np.log(3.0), 0.0)
    x = np.clip(np.nan_to_num(x, nan=0.0, posinf=4.0), 0.0, 4.0)
    terms = np.arange(5)
    mu = np.clip(1.0 - np.abs(x[..., None] - terms), 0.0, 1.0)
    kp_rule = np.asarray(design.kp_terms)[::-1]  # input term j fires k_p term 4 − j
    kd_rule = np.asarray(design.kd_terms)
    total = mu.sum(axis=-1)
    return (
        ar.result((mu * kp_rule).sum(axis=-1) / total),
        ar.result((mu * kd_rule).sum(axis=-1) / total),
    )
