"""TCP over a multilink PPP bundle whose members drop calls: the model of seed 000, chapter 6.

Each member link drops its call as a Poisson process of rate β (seed 000 section 5.3, Table 5.3:
β = 1/50 min between Greenland and Kansas); ``n`` independent members merge into one Poisson
process of rate λ = nβ. Every call drop costs the flow a timeout sequence (section 5.2), so the TCP
period S runs from one call drop to the next, E[S] = 1/λ, and

    B = [1 − λ T_0 f(p)/(1−p)] B_NT + λ/(1−p)                      (eq. 36)

where B_NT is the no-timeout throughput of eq. 29 and T_0 f(p)/(1−p) the mean timeout sequence
of eq. 31. The transfer time of a file of f_s bytes is ⌈f_s / MSS⌉ / B (eq. 24 corrected, below).

Assumptions (seed 000 section 6.1): losses that the link-layer ARQ does not recover are rare and
cause fast retransmits, never timeouts; every call drop causes exactly one timeout sequence; the
link is back before the flow leaves slow start, whose duration is ignored; the long-term mean RTT
stands for the whole transfer.

Where the model breaks: eq. 33 counts the triple-duplicate periods between two drops as
(1/λ − E[Z^TO]) / E[A], which turns negative once the mean time between drops 1/λ is shorter than
the mean timeout sequence E[Z^TO]; eq. 36 then gives B = λ/(1−p) and more frequent drops would
*raise* the throughput. Physically, a drop that arrives while the sender is already backing off
starts no new timeout sequence, so the period cannot be shorter than E[Z^TO]: farlink takes
E[S] = max(1/λ, E[Z^TO]), which leaves eq. 36 unchanged where it holds, is continuous at the
boundary, and there gives the floor B = 1/((1−p) E[Z^TO]), one timeout sequence's retransmissions
per sequence. The flag ``timeout_dominated`` of :func:`calldrop_prediction` marks such points;
predictions there are a bound of the model, not a measurement-backed figure.

Eq. 36 falls with λ only while B_NT E[Z^TO] (1−p) ≥ 1, that is while the flow would send at least
one packet in the time a timeout sequence lasts; otherwise each call drop's 1/(1−p) retransmissions
outweigh what it interrupts. That holds whenever T_0 ≥ RTT, as every RFC 6298 timeout is; the
property tests check the invariants on that domain.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from farlink.models import _arrays as ar
from farlink.models.pftk import (
    DEFAULT_B,
    expected_timeout_sequence_s,
    expected_unconstrained_window,
    pftk_no_timeout_throughput,
)

__all__ = [
    "CalldropPrediction",
    "bundle_drop_rate_per_s",
    "calldrop_prediction",
    "calldrop_throughput",
    "calldrop_transfer_time_s",
    "segments_in_file",
]


def bundle_drop_rate_per_s(n_links: ArrayLike, beta_per_s: ArrayLike) -> np.ndarray:
    """λ = nβ: the merged call-drop rate of ``n`` independent members (seed 000 section 5.3)."""
    n_links, beta = ar.broadcast(n_links=n_links, beta_per_s=beta_per_s)
    ar.positive("n_links", n_links)
    ar.non_negative("beta_per_s", beta)
    return ar.result(n_links * beta)


def segments_in_file(size_bytes: ArrayLike, mss_bytes: ArrayLike) -> np.ndarray:
    """⌈f_s / MSS⌉, the number of full or partial segments that carry a file."""
    size, mss = ar.broadcast(size_bytes=size_bytes, mss_bytes=mss_bytes)
    ar.positive("size_bytes", size)
    ar.positive("mss_bytes", mss)
    return ar.result(np.ceil(size / mss))


def calldrop_throughput(
    p: ArrayLike,
    rtt_s: ArrayLike,
    t0_s: ArrayLike,
    drop_rate_per_s: ArrayLike,
    b: ArrayLike = DEFAULT_B,
    wmax_pkts: ArrayLike = np.inf,
) -> np.ndarray:
    """B of seed 000 eq. 36, in packets per second.

    ``drop_rate_per_s`` is the bundle's rate λ (use :func:`bundle_drop_rate_per_s` for nβ).
    At λ = 0 this is exactly B_NT of eq. 29. See the module notes for λ E[Z^TO] ≥ 1.
    """
    p, rtt_s, t0_s, lam, b, wmax = ar.broadcast(
        p=p, rtt_s=rtt_s, t0_s=t0_s, drop_rate_per_s=drop_rate_per_s, b=b, wmax_pkts=wmax_pkts
    )
    ar.non_negative("drop_rate_per_s", lam)
    b_nt = pftk_no_timeout_throughput(p, rtt_s, b, wmax)
    z_to = expected_timeout_sequence_s(p, t0_s)
    return ar.result(_eq_36(p, lam, b_nt, z_to))


def _eq_36(p: np.ndarray, lam: np.ndarray, b_nt: np.ndarray, z_to: np.ndarray) -> np.ndarray:
    # A drop during a back-off starts no new timeout sequence: the period is at least E[Z^TO]
    # (module notes), so the effective period rate is min(λ, 1/E[Z^TO]).
    period_rate = np.minimum(lam, 1 / z_to)
    sending_share = 1 - period_rate * z_to  # share of the period in congestion avoidance (eq. 33)
    return sending_share * b_nt + period_rate / (1 - p)


def calldrop_transfer_time_s(
    size_bytes: ArrayLike,
    mss_bytes: ArrayLike,
    p: ArrayLike,
    rtt_s: ArrayLike,
    t0_s: ArrayLike,
    drop_rate_per_s: ArrayLike,
    b: ArrayLike = DEFAULT_B,
    wmax_pkts: ArrayLike = np.inf,
) -> np.ndarray:
    """T_d = ⌈f_s / MSS⌉ / B seconds (seed 000 eq. 24, corrected).

    Eq. 24 is printed as T_d = ⌈f_s/MSS⌉ · B, which multiplies a packet count by a throughput in
    packets per second; the dimensions, and the seed's own Tables 6.1 and 6.2, require the
    division implemented here.
    """
    segments = segments_in_file(size_bytes, mss_bytes)
    return ar.result(
        np.asarray(segments / calldrop_throughput(p, rtt_s, t0_s, drop_rate_per_s, b, wmax_pkts))
    )


@dataclass(frozen=True)
class CalldropPrediction:
    """Everything eq. 36 says about one or many points (arrays broadcast to one shape)."""

    transfer_time_s: np.ndarray
    throughput_pkts_per_s: np.ndarray
    throughput_bps: np.ndarray
    no_timeout_throughput_pkts_per_s: np.ndarray
    bundle_drop_rate_per_s: np.ndarray
    mean_timeout_sequence_s: np.ndarray
    segments: np.ndarray
    window_limited: np.ndarray
    timeout_dominated: np.ndarray


def calldrop_prediction(
    *,
    size_bytes: ArrayLike,
    n_links: ArrayLike,
    rtt_s: ArrayLike,
    p: ArrayLike,
    beta_per_s: ArrayLike,
    t0_s: ArrayLike,
    mss_bytes: ArrayLike,
    wmax_bytes: ArrayLike = np.inf,
    b: ArrayLike = DEFAULT_B,
) -> CalldropPrediction:
    """Predict a file transfer over an ``n``-member bundle with per-member drop rate β.

    Parameters are those of seed 000 Tables 6.1 and 6.2; the window limit is given in bytes and
    divided by the MSS (W_max in packets need not be whole: it is a mean window).
    """
    size, n, rtt, p_, beta, t0, mss, wmax_b, b_ = ar.broadcast(
        size_bytes=size_bytes,
        n_links=n_links,
        rtt_s=rtt_s,
        p=p,
        beta_per_s=beta_per_s,
        t0_s=t0_s,
        mss_bytes=mss_bytes,
        wmax_bytes=wmax_bytes,
        b=b,
    )
    lam = np.asarray(bundle_drop_rate_per_s(n, beta))
    segments = np.asarray(segments_in_file(size, mss))
    wmax_pkts = wmax_b / mss
    b_nt = np.asarray(pftk_no_timeout_throughput(p_, rtt, b_, wmax_pkts))
    z_to = np.asarray(expected_timeout_sequence_s(p_, t0))
    throughput = _eq_36(p_, lam, b_nt, z_to)
    return CalldropPrediction(
        transfer_time_s=segments / throughput,
        throughput_pkts_per_s=throughput,
        throughput_bps=throughput * mss * 8,
        no_timeout_throughput_pkts_per_s=b_nt,
        bundle_drop_rate_per_s=lam,
        mean_timeout_sequence_s=z_to,
        segments=segments,
        window_limited=np.asarray(expected_unconstrained_window(p_, b_)) >= wmax_pkts,
        timeout_dominated=lam * z_to >= 1,
    )
