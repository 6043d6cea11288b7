"""Latency of short TCP transfers: connection set-up, slow start, and the first few losses.

References
    [CSA] N. Cardwell, S. Savage, T. Anderson, "Modeling TCP latency", IEEE INFOCOM 2000.
    [SKV] B. Sikdar, S. Kalyanaraman, K. S. Vastola, "Analytic models for the latency and
        steady-state throughput of TCP Tahoe, Reno and SACK", IEEE/ACM Trans. Networking 11(6),
        2003.
    [PFTK] the steady-state model of :mod:`farlink.models.pftk`.
    Seed 000, section 4.2.1 (set-up time, delayed ACKs in slow start, expected timeouts), 4.2.2
    (the correlated "drop-tail" loss model), 4.2.4 (short transfers, eqs. 15–23) and 4.3.

Notation (all broadcast over NumPy arrays, as in :mod:`farlink.models.pftk`):
    size_pkts  transfer size N (or d) in segments; a partial segment counts as one (⌈size⌉)
    p          per-packet loss probability, in (0, 1/2) because the same p loses SYNs (below)
    rtt_s      round-trip time; t0_s the initial retransmission timeout T_0; ts_s the initial SYN
               timeout T_s; delack_s the mean delayed-ACK wait for the first segment
    b          packets per ACK (2); wmax_pkts the receiver window W_max (inf for none)
Times are in seconds, throughputs in packets per second.

Connection set-up (seed 000 section 4.2.1, after [CSA])
    A SYN lost i times and a SYN-ACK lost j times cost RTT + (2^i + 2^j − 2) T_s, since the SYN
    timer doubles on every expiry. With P(i, j) = P_r^i (1−P_r) P_f^j (1−P_f),
        E[L_h] = RTT + T_s ((1−P_r)/(1−2P_r) + (1−P_f)/(1−2P_f) − 2),
    a sum of E[2^i] = Σ 2^i P_r^i (1−P_r), which converges only for P < 1/2. For P ≥ 1/2 the
    expectation is infinite (real stacks give up after a few SYNs, which this model does not
    describe), so such inputs raise ValueError.

Delayed ACKs in slow start (seed 000 eqs. 15–17, 19–21)
    With one ACK per b packets the window grows by γ = 1 + 1/b per round (eq. 15). [SKV] average
    the rounds with and without an expiring delayed-ACK timer into w(n) = 2^((n−1)/2) +
    2^((n−2)/2) = ((1+√2)/2) 2^(n/2) (eq. 16), a growth of √2 per round (b = 2 is built in).

    Eq. 17 is misprinted. Its sum is geometric:
        pkt(k) = Σ_{n=1}^{k} w(n) = (2 + 3/√2)(2^(k/2) − 1)
               = 2^((k+2)/2) + 3·2^((k−1)/2) − 2 − 3√2/2,
    whereas the seed prints 2^((k+1)/2) + 3·2^((4k−3)/8) − 2 − 3√2/2. The printed constant is right
    but both exponents are wrong: the printed form gives pkt(0) = −0.39 instead of 0 and pkt(1) =
    1.15 instead of w(1) = 1.71, and it undercounts pkt(k) by 33 % at k = 1 and 10 % for large k.
    Eq. 21 inverts the printed form and inherits the error: its denominator 2√2 + 3·2^(5/8) = 7.46
    must be 4 + 3√2 = 8.24. farlink implements the sum, so
        t_nl(N) = ⌈2 log₂((2N + 4 + 3√2) / (4 + 3√2))⌉ rounds    (the smallest k with pkt(k) ≥ N).

    Eq. 19 (n_wm = ⌈2 log₂(2 W_max / (1+√2))⌉) is the first round whose window w(n) reaches W_max;
    that round is sent at W_max. The seed then uses n_wm in a second sense: eq. 20 says N_exp =
    pkt(n_wm) + W_max "where n_wm does not include the last round with W_max packets", i.e. it
    counts only the rounds before the cap, which is eq. 19's n_wm − 1. farlink keeps eq. 19 and
    writes eq. 20 as N_exp = pkt(n_wm − 1) + W_max; with that, the second branch of eq. 21,
    t_nl = n_wm + ⌈(N − N_exp)/W_max⌉, is right as printed, both branches agree at N = N_exp, and
    t_nl equals a round-by-round count of Σ min(w(n), W_max) (tested). Taking eq. 20 literally with
    eq. 19's n_wm would count round n_wm twice, once uncapped, and make t_nl one round short.

The model of Cardwell, Savage and Anderson ([CSA]; seed 000 section 4.2.4)
    E[T] = E[T_h] + E[T_ss] + E[T_loss] + E[T_ca] + E[T_delack], with d = ⌈size⌉ packets and:
    E[T_h]      the set-up time above with P_r = P_f = p;
    E[d_ss]     = (1 − (1−p)^d)(1−p)/p + 1, the packets sent in the initial slow start up to and
                including the first loss, capped at d (see below);
    E[W_ss]     = (E[d_ss](γ−1) + w_1)/γ, the window when slow start ends, from
                d_ss = w_1 (γ^r − 1)/(γ − 1) after r rounds starting at w_1;
    E[T_ss]     = RTT log_γ(E[d_ss](γ−1)/w_1 + 1) while E[W_ss] ≤ W_max, and otherwise
                RTT [log_γ(W_max/w_1) + 1 + (E[d_ss] − (γW_max − w_1)/(γ−1))/W_max]
                (the window reaches W_max in round log_γ(W_max/w_1) + 1 and stays there);
    l_ss        = 1 − (1−p)^d, the probability that some packet of the transfer is lost;
    E[T_loss]   = l_ss (Q̂(p, W) E[Z^TO] + (1 − Q̂(p, W)) RTT), W = min(E[W_ss], W_max): the first
                loss costs a timeout sequence with probability Q̂ and a fast retransmit otherwise;
    E[T_ca]     = (d − E[d_ss]) / R, the rest at the full [PFTK] rate R with timeouts and W_max;
    E[T_delack] = delack_s, the delayed-ACK wait of the first segment.
    The +1 in E[d_ss] counts the lost packet, so as p → 0 the expression tends to d + 1, one more
    packet than the transfer holds; farlink caps E[d_ss] at d, which keeps E[T_ca] ≥ 0 and makes the
    lossless limit exactly RTT log_γ(d(γ−1)/w_1 + 1). [CSA] evaluate Q̂ at E[W_ss]; farlink clips
    that window at W_max (the window cannot exceed it) and clips w_1 at W_max likewise.

The model of Sikdar, Kalyanaraman and Vastola ([SKV]; seed 000 eqs. 18–23)
    T(N) = t_setup + t_dack + (1−p)^N t_nl(N) + N p (1−p)^(N−1) E{t_sl(N)}
           + (1 − (1−p)^N − N p (1−p)^(N−1)) t_ml(N)                              (eq. 18)
    t_setup is E[L_h] with P_r = P_f = p and t_dack = delack_s. Eq. 18 as printed weighs E{t_sl}
    with p(1−p)^(N−1), the probability that one *given* packet is the only loss. Exactly one loss
    among N packets has probability N p (1−p)^(N−1); with the printed weight the three weights
    still add up to one only because the multiple-loss weight absorbs (N−1) p (1−p)^(N−1) of
    single-loss probability, which is wrong for every N > 1. farlink uses the binomial weights.

    Seed's part: the structure of eqs. 18, 21, 22 and 23, the correlated-loss assumption (the
    packets after the first loss in its round are lost too), recovery by fast retransmit or by
    timeout, fast recovery lasting one or two rounds, the timeout sequence E{TO} = E[Z^TO] of
    section 4.2.1 and the decomposition of t_ml with D_ave. farlink's completion, derived below:
    nloss, r(n), t_lin(a, n), t_TO, the fast-retransmit condition, the ssthresh after a loss, the
    expected M and m of eq. 23 and t_M_loss(D).

    Single loss, eq. 22. Given exactly one loss event the first lost packet i is uniform on
    1..N. Rounds hold the integer packets between B(k−1) = ⌊P(k−1)⌋ and B(k) = ⌊P(k)⌋, where
    P(k) = Σ_{n≤k} min(w(n), W_max), so i lies in round k = t_nl(i) (eq. 21 applied to i).
        ν      = i − 1 − B(k−1), the packets of round k before the loss; they are delivered and
               their ACKs move the window;
        L      = min(B(k), N), the last packet of round k;
        nloss  = L − i + 1, the packets lost with i (drop-tail: the rest of the round);
        W'     = max(W_k, min(W_max, W_k + (√2 − 1) ν)), the window after the ν ACKs, where
               W_k = B(k) − B(k−1) is the round's window and each ACKed packet adds √2 − 1 to it
               (eq. 16 grows by √2 per round);
        m_new  = min(⌊W' − nloss⌋, N − L) ≥ 0, the new packets the ν ACKs release after the lost
               block; they all arrive (one loss event) and each returns a duplicate ACK.
    Packets after i in its own round are lost, so the duplicate ACKs can only come from these
    m_new packets: the flow recovers by fast retransmit iff m_new ≥ 3, i.e. at least three packets
    follow the lost block while the window and the remaining data allow it; otherwise it times
    out. A loss among the last packets of the transfer therefore always times out.
        n      = min(W_max, max(2, (nloss + m_new)/2)), ssthresh after the loss (RFC 5681: half
               the flight size, at least two segments), which is also the window after recovery;
        a      = N − L − m_new, the packets never sent before the loss was detected;
        t_lin(a, n) = rounds to send a packets in congestion avoidance from window n, the window
               growing by 1/b per round up to W_max: the smallest J with
               S(J) = J n + J(J−1)/(2b) ≥ a while the window stays below W_max (J ≤ J* =
               ⌈b(W_max − n)⌉), else J* + ⌈(a − S(J*))/W_max⌉; t_lin = 0 for a ≤ 0.
    Without timeout: t_sl = [t_nl(i) + 1 + ⌈nloss/n⌉ + t_lin(a, n)] RTT. The 1 is the round in which
    the duplicate ACKs return; the seed's "nloss" term is the recovery of the lost block. Read
    literally as one round per lost packet it would make a loss in a large slow-start round cost
    hundreds of rounds, against the seed's own statement that fast recovery takes one or two
    rounds (windows cwnd¹ and cwnd²). farlink retransmits the block at the post-loss window n,
    ⌈nloss/n⌉ rounds, which is 1 or 2 because nloss ≤ nloss + m_new ≤ 2n.
    With timeout: t_sl = [t_nl(i) + t_TO + u(nloss + a, n)] RTT + E{TO}. The retransmission timer
    restarts on every ACK that advances the window and duplicate ACKs do not restart it, so it
    fires T_0 after the ACK of packet i − 1: at the end of round k when ν ≥ 1, and at the end of
    round k − 1 (the ACKs that released round k) when ν = 0; hence t_TO = −1 if ν = 0, else 0.
    E{TO} = E[Z^TO] = T_0 f(p)/(1−p) (seed 000 section 4.2.1) counts retransmissions lost in the
    back-off; these are not among the N first transmissions that eq. 18 conditions on. After the
    timeout the window restarts at one and the lost block plus the unsent data, nloss + a packets,
    go out in slow start up to ssthresh n and then in congestion avoidance:
        r(n)   = n_wm(n) − 1 (eq. 19 with n for W_max), the slow-start rounds whose window w(r) is
               below n, which carry pkt(r(n)) packets;
        u(x, n) = the smallest k with pkt(k) ≥ x if x ≤ pkt(r(n)),
               else r(n) + t_lin(x − pkt(r(n)), n).
    The packets sent after the lost block before the timeout are already at the receiver, whose
    cumulative ACK skips them. Retransmissions during fast recovery are assumed delivered (a loss
    there is of order p² overall), and new data sent during fast recovery is not counted (a slight
    overestimate of t_lin).
    E{t_sl(N)} averages the two branches over i; the share of positions that time out is the
    probability of the timeout branch, reported by :func:`sikdar_components`. For N > 256 the
    average is taken over 256 stratified positions (one per N/256 packets, offset by a
    golden-ratio sequence to avoid aliasing with the round length); below, over every position.
    Against the exact average the sampled mean stays within 1 % and the timeout share within 0.05
    (checked for N up to 10⁴ and W_max from 2 to inf).

    Multiple losses, eq. 23. Let K ~ Binomial(N, p) count the losses (the counting model behind
    eq. 18's weights) and ℓ₂ be the position of the second. Then, with P(K ≥ 2) = I_p(2, N−1),
        M = E[K | K ≥ 2] = N p (1 − (1−p)^(N−1)) / P(K ≥ 2)               (→ 2 as p → 0),
        m = E[ℓ₂ | K ≥ 2] = (2/p) I_p(3, N−1) / I_p(2, N−1)                 (→ 2(N+1)/3),
    where I is the regularised incomplete beta function (j(j−1)p²(1−p)^(j−2) = (2/p) P(ℓ₃ = j+1)
    turns the first moment of ℓ₂ into a tail of ℓ₃). The transfer splits into packets 1..m−1, a
    single-loss transfer costing E{t_sl(⌊m−1⌉)} (rounded to whole packets), and packets m..N,
    which hold the other M − 1 losses: M − 1 chunks of D_ave = (N − m + 1)/(M − 1) packets (eq. 23),
    each opening with a loss. Eq. 23 prints (M − 2) chunks, which contradicts its own D_ave (the
    N − m + 1 packets are divided among M − 1 loss events); farlink uses M − 1.
        t_M_loss(D) = D (E[A] + Q̂ E[Z^TO]) / (E[Y] + Q̂ E[R]), the time of D packets in a [PFTK]
               cycle whose loss indications are D packets apart: E[Y], E[A], E[W] and Q̂ are
               [PFTK]'s with the loss-event rate p_e = 1/D (window-limited branch when E[W] ≥
               W_max), while E[Z^TO] = T_0 f(p)/(1−p) and E[R] = 1/(1−p) keep the per-packet p,
               because retransmissions are lost at the path's rate, not at the chunk's.
        t_ml(N) = E{t_sl(m − 1)} + (M − 1) t_M_loss(D_ave).
    Slow-start growth in this model is eq. 16's regardless of b; b sets the congestion-avoidance
    slope 1/b and the [PFTK] cycle.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import betainc

from farlink.models import _arrays as ar
from farlink.models.pftk import (
    DEFAULT_B,
    _window_limited_tdp,
    expected_rounds_per_tdp,
    expected_timeout_sequence_s,
    expected_unconstrained_window,
    pftk_full_throughput,
    timeout_probability,
)

__all__ = [
    "CardwellLatency",
    "SikdarLatency",
    "cardwell_components",
    "cardwell_latency_s",
    "handshake_latency_s",
    "linear_growth_rounds",
    "sikdar_components",
    "sikdar_latency_s",
    "sikdar_lossless_rounds",
    "sikdar_packets_sent",
    "sikdar_packets_to_wmax",
    "sikdar_rounds_to_wmax",
    "sikdar_window",
    "slow_start_growth_factor",
]

DEFAULT_TS_S = 3.0
DEFAULT_DELACK_S = 0.1

_SQRT2 = math.sqrt(2.0)
_W_SCALE = (1 + _SQRT2) / 2  # w(n) = _W_SCALE · 2^(n/2)
_PKT_SCALE = 2 + 3 / _SQRT2  # pkt(k) = _PKT_SCALE · (2^(k/2) − 1)
_EPS = 1e-9  # slack for ceilings and floors of values that are whole in exact arithmetic
_MAX_POSITIONS = 256  # first-loss positions evaluated per transfer in E{t_sl}
_GOLDEN = (math.sqrt(5) - 1) / 2


# --------------------------------------------------------------------------------------------
# Connection set-up


def _check_syn_loss(name: str, p: np.ndarray) -> None:
    ar.require(
        (p >= 0) & (p < 0.5),
        name,
        "a probability in [0, 1/2): the SYN timer doubles on every loss, so the expected set-up "
        "time diverges at 1/2 and above",
    )


def _handshake(rtt_s: np.ndarray, ts_s: np.ndarray, p_r: np.ndarray, p_f: np.ndarray):
    return rtt_s + ts_s * ((1 - p_r) / (1 - 2 * p_r) + (1 - p_f) / (1 - 2 * p_f) - 2)


def handshake_latency_s(
    rtt_s: ArrayLike, ts_s: ArrayLike, p_syn: ArrayLike, p_synack: ArrayLike | None = None
) -> np.ndarray:
    """E[L_h] = RTT + T_s((1−P_r)/(1−2P_r) + (1−P_f)/(1−2P_f) − 2) (seed 000 §4.2.1; [CSA]).

    ``p_syn`` (P_r) loses the SYN, ``p_synack`` (P_f, default ``p_syn``) the SYN-ACK; each must be
    in [0, 1/2), where the series Σ 2^i P^i (1−P) of the doubling SYN timer converges. ``ts_s`` is
    the initial SYN timeout T_s (3 s in RFC 1122 era stacks, 1 s in RFC 6298).
    """
    if p_synack is None:
        p_synack = p_syn
    rtt, ts, p_r, p_f = ar.broadcast(rtt_s=rtt_s, ts_s=ts_s, p_syn=p_syn, p_synack=p_synack)
    ar.positive("rtt_s", rtt)
    ar.non_negative("ts_s", ts)
    _check_syn_loss("p_syn", p_r)
    _check_syn_loss("p_synack", p_f)
    return ar.result(_handshake(rtt, ts, p_r, p_f))


# --------------------------------------------------------------------------------------------
# Slow-start growth with delayed ACKs


def slow_start_growth_factor(b: ArrayLike = DEFAULT_B) -> np.ndarray:
    """γ = 1 + 1/b, the slow-start window growth per round with one ACK per b packets (eq. 15)."""
    (b,) = ar.broadcast(b=b)
    ar.positive("b", b)
    return ar.result(1 + 1 / b)


def sikdar_window(n: ArrayLike) -> np.ndarray:
    """w(n) = 2^((n−1)/2) + 2^((n−2)/2), [SKV]'s mean slow-start window in round n (eq. 16)."""
    (n,) = ar.broadcast(n=n)
    ar.require(n >= 1, "n", "a round number of at least 1")
    return ar.result(_W_SCALE * np.exp2(n / 2))


def _pkt(k: np.ndarray) -> np.ndarray:
    return _PKT_SCALE * np.expm1(k * (math.log(2) / 2))


def sikdar_packets_sent(k: ArrayLike) -> np.ndarray:
    """pkt(k) = Σ_{n=1}^{k} w(n) = (2 + 3/√2)(2^(k/2) − 1), packets sent in k rounds (eq. 17).

    Equal to 2^((k+2)/2) + 3·2^((k−1)/2) − 2 − 3√2/2. The seed prints 2^((k+1)/2) + 3·2^((4k−3)/8)
    − 2 − 3√2/2, which is not the sum of eq. 16 (it gives pkt(0) = −0.39 and pkt(1) = 1.15 ≠
    w(1) = 1.71); see the module notes.
    """
    (k,) = ar.broadcast(k=k)
    ar.non_negative("k", k)
    return ar.result(_pkt(k))


def _rounds_for_packets(x: np.ndarray) -> np.ndarray:
    """The smallest whole k ≥ 0 with pkt(k) ≥ x (eq. 21, first branch, corrected)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        k = np.ceil(2 * np.log2(np.maximum(x, 0) / _PKT_SCALE + 1) - _EPS)
    return np.maximum(k, 0.0)


def _rounds_to_window(w: np.ndarray) -> np.ndarray:
    """Eq. 19: the first round n ≥ 1 with w(n) ≥ w (inf for w = inf)."""
    with np.errstate(divide="ignore"):
        return np.maximum(1.0, np.ceil(2 * np.log2(w / _W_SCALE) - _EPS))


def sikdar_rounds_to_wmax(wmax_pkts: ArrayLike) -> np.ndarray:
    """n_wm = ⌈2 log₂(2 W_max / (1+√2))⌉, the first round whose window w(n) reaches W_max (eq. 19).

    Clipped at 1 (for W_max ≤ w(1) = 1.71 the first round is already capped); inf for W_max = inf.
    """
    (wmax,) = ar.broadcast(wmax_pkts=wmax_pkts)
    ar.window("wmax_pkts", wmax)
    return ar.result(_rounds_to_window(wmax))


def _packets_to_wmax(wmax: np.ndarray, n_wm: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return np.where(np.isfinite(wmax), _pkt(n_wm - 1) + wmax, np.inf)


def sikdar_packets_to_wmax(wmax_pkts: ArrayLike) -> np.ndarray:
    """N_exp = pkt(n_wm − 1) + W_max, the packets sent by the end of round n_wm (eq. 20).

    The seed writes pkt(n_wm) + W_max with n_wm counting only the rounds before the window reaches
    W_max ("n_wm does not include the last round with W_max packets"), which is eq. 19's n_wm − 1;
    see the module notes. inf for W_max = inf.
    """
    (wmax,) = ar.broadcast(wmax_pkts=wmax_pkts)
    ar.window("wmax_pkts", wmax)
    return ar.result(_packets_to_wmax(wmax, _rounds_to_window(wmax)))


def _lossless_rounds(x, wmax, n_wm, n_exp):
    """Eq. 21 in rounds for x ≥ 0 packets, given n_wm and N_exp of eqs. 19–20."""
    with np.errstate(invalid="ignore"):
        capped = n_wm + np.ceil((x - n_exp) / wmax - _EPS)
    return np.where(x <= n_exp, _rounds_for_packets(x), capped)


def sikdar_lossless_rounds(size_pkts: ArrayLike, wmax_pkts: ArrayLike = np.inf) -> np.ndarray:
    """t_nl(N)/RTT, the rounds of a lossless transfer of N packets (eq. 21, corrected).

    ⌈2 log₂((2N + 4 + 3√2)/(4 + 3√2))⌉ for N ≤ N_exp, else n_wm + ⌈(N − N_exp)/W_max⌉. The seed's
    denominator 2√2 + 3·2^(5/8) inverts its misprinted eq. 17; see the module notes.
    """
    n, wmax = ar.broadcast(size_pkts=size_pkts, wmax_pkts=wmax_pkts)
    _check_size(n)
    ar.window("wmax_pkts", wmax)
    n = np.ceil(n)
    n_wm = _rounds_to_window(wmax)
    return ar.result(_lossless_rounds(n, wmax, n_wm, _packets_to_wmax(wmax, n_wm)))


def _linear_rounds(a, n, b, wmax):
    """t_lin(a, n): rounds to send a packets in congestion avoidance from window n ≤ W_max."""
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        h = n - 1 / (2 * b)
        a_pos = np.maximum(a, 0.0)
        s = np.sqrt(h * h + 2 * a_pos / b)
        # Positive root of J²/(2b) + hJ − a = 0, in the form without cancellation for h > 0.
        root = np.where(h > 0, 2 * a_pos / (s + h), b * (s - h))
        free = np.ceil(root - _EPS)
        j_star = np.maximum(0.0, np.ceil(b * (wmax - n) - _EPS))
        s_star = j_star * n + j_star * (j_star - 1) / (2 * b)
        capped = j_star + np.ceil((a_pos - s_star) / wmax - _EPS)
        rounds = np.where(a_pos <= s_star, free, capped)
    return np.where(a > 0, rounds, 0.0)


def linear_growth_rounds(
    packets: ArrayLike,
    w_start_pkts: ArrayLike,
    b: ArrayLike = DEFAULT_B,
    wmax_pkts: ArrayLike = np.inf,
) -> np.ndarray:
    """t_lin(a, n): rounds to send ``packets`` in congestion avoidance from window n (eq. 22).

    The window is n, n + 1/b, n + 2/b, … packets in successive rounds, held at W_max once it gets
    there; the result is the smallest whole number of rounds carrying at least ``packets``
    (0 for none). farlink's completion of eq. 22, see the module notes; ``w_start_pkts`` is
    clipped at W_max.
    """
    a, n, b, wmax = ar.broadcast(
        packets=packets, w_start_pkts=w_start_pkts, b=b, wmax_pkts=wmax_pkts
    )
    ar.non_negative("packets", a)
    ar.require((n >= 1) & np.isfinite(n), "w_start_pkts", "at least one packet and finite")
    ar.positive("b", b)
    ar.window("wmax_pkts", wmax)
    return ar.result(_linear_rounds(a, np.minimum(n, wmax), b, wmax))


# --------------------------------------------------------------------------------------------
# Cardwell, Savage and Anderson


def _check_size(size: np.ndarray) -> None:
    ar.require((size >= 1) & np.isfinite(size), "size_pkts", "at least one packet and finite")


def _check_common(p, rtt, t0, b, wmax, ts, delack):
    ar.probability("p", p)
    _check_syn_loss("p", p)
    ar.positive("rtt_s", rtt)
    ar.positive("t0_s", t0)
    ar.positive("b", b)
    ar.window("wmax_pkts", wmax)
    ar.non_negative("ts_s", ts)
    ar.non_negative("delack_s", delack)


@dataclass(frozen=True)
class CardwellLatency:
    """The terms of [CSA]'s E[T] (seconds) and the quantities behind them, broadcast arrays."""

    handshake_s: np.ndarray
    slow_start_s: np.ndarray
    loss_recovery_s: np.ndarray
    congestion_avoidance_s: np.ndarray
    delayed_ack_s: np.ndarray
    slow_start_packets: np.ndarray  # E[d_ss], capped at d
    slow_start_window: np.ndarray  # E[W_ss], before clipping at W_max
    slow_start_loss_probability: np.ndarray  # l_ss
    timeout_probability: np.ndarray  # Q̂(p, min(E[W_ss], W_max))
    steady_throughput_pkts_per_s: np.ndarray  # R, full PFTK

    @property
    def total_s(self) -> np.ndarray:
        """E[T] = E[T_h] + E[T_ss] + E[T_loss] + E[T_ca] + E[T_delack]."""
        return (
            self.handshake_s
            + self.slow_start_s
            + self.loss_recovery_s
            + self.congestion_avoidance_s
            + self.delayed_ack_s
        )


def cardwell_components(
    size_pkts: ArrayLike,
    p: ArrayLike,
    rtt_s: ArrayLike,
    t0_s: ArrayLike,
    b: ArrayLike = DEFAULT_B,
    wmax_pkts: ArrayLike = np.inf,
    w1_pkts: ArrayLike = 1,
    ts_s: ArrayLike = DEFAULT_TS_S,
    delack_s: ArrayLike = DEFAULT_DELACK_S,
) -> CardwellLatency:
    """Every term of [CSA]'s expected latency E[T] (formulas in the module notes).

    E[T_h] = RTT + 2T_s((1−p)/(1−2p) − 1); E[d_ss] = min(d, (1 − (1−p)^d)(1−p)/p + 1);
    E[W_ss] = (E[d_ss](γ−1) + w_1)/γ with γ = 1 + 1/b (eq. 15); E[T_ss] = RTT log_γ(E[d_ss](γ−1)/w_1
    + 1), or RTT[log_γ(W_max/w_1) + 1 + (E[d_ss] − (γW_max − w_1)/(γ−1))/W_max] when E[W_ss] >
    W_max; E[T_loss] = l_ss(Q̂ E[Z^TO] + (1 − Q̂) RTT) with l_ss = 1 − (1−p)^d; E[T_ca] = (d −
    E[d_ss])/R with R = :func:`~farlink.models.pftk.pftk_full_throughput`; E[T_delack] = delack_s.
    """
    size, p_, rtt, t0, b_, wmax, w1, ts, delack = ar.broadcast(
        size_pkts=size_pkts,
        p=p,
        rtt_s=rtt_s,
        t0_s=t0_s,
        b=b,
        wmax_pkts=wmax_pkts,
        w1_pkts=w1_pkts,
        ts_s=ts_s,
        delack_s=delack_s,
    )
    _check_size(size)
    _check_common(p_, rtt, t0, b_, wmax, ts, delack)
    ar.require((w1 >= 1) & np.isfinite(w1), "w1_pkts", "at least one packet and finite")

    d = np.ceil(size)
    w1 = np.minimum(w1, wmax)
    gamma = 1 + 1 / b_
    log_q = np.log1p(-p_)
    lost_somewhere = -np.expm1(d * log_q)  # l_ss = 1 − (1−p)^d
    d_ss = np.minimum(d, lost_somewhere * (1 - p_) / p_ + 1)
    w_ss = (d_ss * (gamma - 1) + w1) / gamma

    with np.errstate(invalid="ignore", divide="ignore"):
        free_rounds = np.log(d_ss * (gamma - 1) / w1 + 1) / np.log(gamma)
        capped_rounds = (
            np.log(wmax / w1) / np.log(gamma)
            + 1
            + (d_ss - (gamma * wmax - w1) / (gamma - 1)) / wmax
        )
    slow_start = rtt * np.where(w_ss > wmax, capped_rounds, free_rounds)

    q_hat = np.asarray(timeout_probability(p_, np.minimum(w_ss, wmax)))
    z_to = np.asarray(expected_timeout_sequence_s(p_, t0))
    loss = lost_somewhere * (q_hat * z_to + (1 - q_hat) * rtt)
    rate = np.asarray(pftk_full_throughput(p_, rtt, t0, b_, wmax))
    return CardwellLatency(
        handshake_s=_handshake(rtt, ts, p_, p_),
        slow_start_s=slow_start,
        loss_recovery_s=loss,
        congestion_avoidance_s=(d - d_ss) / rate,
        delayed_ack_s=delack,
        slow_start_packets=d_ss,
        slow_start_window=w_ss,
        slow_start_loss_probability=lost_somewhere,
        timeout_probability=q_hat,
        steady_throughput_pkts_per_s=rate,
    )


def cardwell_latency_s(
    size_pkts: ArrayLike,
    p: ArrayLike,
    rtt_s: ArrayLike,
    t0_s: ArrayLike,
    b: ArrayLike = DEFAULT_B,
    wmax_pkts: ArrayLike = np.inf,
    w1_pkts: ArrayLike = 1,
    ts_s: ArrayLike = DEFAULT_TS_S,
    delack_s: ArrayLike = DEFAULT_DELACK_S,
) -> np.ndarray:
    """Expected latency E[T] of a ``size_pkts``-segment transfer, set-up included ([CSA]).

    E[T] = E[T_h] + E[T_ss] + E[T_loss] + E[T_ca] + E[T_delack]; see :func:`cardwell_components`
    and the module notes. Seconds.
    """
    parts = cardwell_components(size_pkts, p, rtt_s, t0_s, b, wmax_pkts, w1_pkts, ts_s, delack_s)
    return ar.result(np.asarray(parts.total_s))


# --------------------------------------------------------------------------------------------
# Sikdar, Kalyanaraman and Vastola


def _sent_by_round(k, wmax, n_wm, p_wm):
    """P(k) = Σ_{n≤k} min(w(n), W_max); p_wm = pkt(n_wm − 1)."""
    with np.errstate(invalid="ignore"):
        capped = p_wm + (k - n_wm + 1) * wmax
    return np.where(k < n_wm, _pkt(k), capped)


def _after_timeout_rounds(x, n, b, wmax):
    """u(x, n): rounds to send x packets from a window of one, slow start up to n, then linear."""
    r = _rounds_to_window(n) - 1
    in_slow_start = _pkt(r)
    linear = r + _linear_rounds(x - in_slow_start, n, b, wmax)
    return np.where(x <= in_slow_start, _rounds_for_packets(x), linear)


def _single_loss_s(i, total, rtt, b, wmax, n_wm, p_wm, n_exp, z_to):
    """t_sl for a first loss at packet i of a ``total``-packet transfer (eq. 22); timeout flag."""
    k = _lossless_rounds(i, wmax, n_wm, n_exp)
    before = np.floor(_sent_by_round(k - 1, wmax, n_wm, p_wm) + _EPS)
    end = np.floor(_sent_by_round(k, wmax, n_wm, p_wm) + _EPS)
    last = np.minimum(end, total)
    nu = i - 1 - before
    lost = last - i + 1
    in_round = end - before
    window = np.maximum(in_round, np.minimum(wmax, in_round + (_SQRT2 - 1) * nu))
    new = np.clip(np.floor(window - lost + _EPS), 0, total - last)
    ssthresh = np.minimum(wmax, np.maximum(2.0, (lost + new) / 2))
    left = total - last - new
    timeout = new < 3

    recovery = np.ceil(lost / ssthresh - _EPS)
    fast_rounds = k + 1 + recovery + _linear_rounds(left, ssthresh, b, wmax)
    timeout_rounds = k - (nu == 0) + _after_timeout_rounds(lost + left, ssthresh, b, wmax)
    seconds = rtt * np.where(timeout, timeout_rounds, fast_rounds) + np.where(timeout, z_to, 0.0)
    return seconds, timeout


def _mean_single_loss_s(total, rtt, b, wmax, z_to):
    """E{t_sl(N)} over a uniform first-loss position, and the share of positions that time out.

    Loops over positions (exact up to _MAX_POSITIONS, stratified beyond), vectorised over points;
    points are sorted by their number of positions so that each pass works on a prefix.
    """
    count = np.minimum(total, _MAX_POSITIONS)
    order = np.argsort(-count, kind="stable")
    total_o, rtt_o, b_o, wmax_o, z_o, count_o = (
        x[order] for x in (total, rtt, b, wmax, z_to, count)
    )
    n_wm = _rounds_to_window(wmax_o)
    with np.errstate(invalid="ignore"):
        p_wm = np.where(np.isfinite(wmax_o), _pkt(n_wm - 1), np.inf)
    n_exp = _packets_to_wmax(wmax_o, n_wm)
    sampled = total_o > _MAX_POSITIONS
    neg_count = -count_o

    time_sum = np.zeros_like(total_o)
    timeout_sum = np.zeros_like(total_o)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        for j in range(int(count_o.max(initial=0))):
            active = int(np.searchsorted(neg_count, -j, side="left"))  # points with count > j
            s = slice(0, active)
            u = (j + (((j + 1) * _GOLDEN) % 1.0)) / _MAX_POSITIONS
            i = np.where(sampled[s], 1 + np.floor(total_o[s] * u), j + 1.0)
            t, to = _single_loss_s(
                i, total_o[s], rtt_o[s], b_o[s], wmax_o[s], n_wm[s], p_wm[s], n_exp[s], z_o[s]
            )
            time_sum[s] += t
            timeout_sum[s] += to

    mean = np.empty_like(time_sum)
    share = np.empty_like(timeout_sum)
    mean[order] = time_sum / count_o
    share[order] = timeout_sum / count_o
    return mean, share


def _loss_cycle_s(packets, p, rtt, t0, b, wmax):
    """t_M_loss(D): D packets of a [PFTK] cycle with loss indications D packets apart."""
    p_e = np.clip(1 / packets, 1e-300, 1 - 1e-9)
    w_u = np.asarray(expected_unconstrained_window(p_e, b))
    x = np.asarray(expected_rounds_per_tdp(p_e, b))
    w_clamped = np.minimum(wmax, w_u)
    y_lim, a_lim = _window_limited_tdp(p_e, rtt, b, w_clamped)
    free = w_u < wmax
    y = np.where(free, (1 - p_e) / p_e + w_u, y_lim)
    a = np.where(free, rtt * (x + 1), a_lim)
    q_hat = np.asarray(timeout_probability(p_e, w_clamped))
    z_to = np.asarray(expected_timeout_sequence_s(p, t0))
    return packets * (a + q_hat * z_to) / (y + q_hat / (1 - p))


@dataclass(frozen=True)
class SikdarLatency:
    """The terms of [SKV]'s eq. 18 (seconds), their weights, and the timeout share of eq. 22."""

    setup_s: np.ndarray
    delayed_ack_s: np.ndarray
    no_loss_s: np.ndarray  # t_nl(N)
    single_loss_s: np.ndarray  # E{t_sl(N)}
    multi_loss_s: np.ndarray  # t_ml(N), 0 where N = 1
    no_loss_probability: np.ndarray  # (1−p)^N
    single_loss_probability: np.ndarray  # N p (1−p)^(N−1)
    multi_loss_probability: np.ndarray  # P(K ≥ 2)
    single_loss_timeout_share: np.ndarray  # share of first-loss positions that time out
    expected_losses: np.ndarray  # M = E[K | K ≥ 2] (nan where N = 1)
    second_loss_position: np.ndarray  # m = E[ℓ₂ | K ≥ 2] (nan where N = 1)

    @property
    def total_s(self) -> np.ndarray:
        """T(N) of eq. 18."""
        return (
            self.setup_s
            + self.delayed_ack_s
            + self.no_loss_probability * self.no_loss_s
            + self.single_loss_probability * self.single_loss_s
            + self.multi_loss_probability * self.multi_loss_s
        )


def sikdar_components(
    size_pkts: ArrayLike,
    p: ArrayLike,
    rtt_s: ArrayLike,
    t0_s: ArrayLike,
    b: ArrayLike = DEFAULT_B,
    wmax_pkts: ArrayLike = np.inf,
    ts_s: ArrayLike = DEFAULT_TS_S,
    delack_s: ArrayLike = DEFAULT_DELACK_S,
) -> SikdarLatency:
    """Every term of [SKV]'s eq. 18 with farlink's completion of eqs. 22–23 (module notes)."""
    size, p_, rtt, t0, b_, wmax, ts, delack = ar.broadcast(
        size_pkts=size_pkts,
        p=p,
        rtt_s=rtt_s,
        t0_s=t0_s,
        b=b,
        wmax_pkts=wmax_pkts,
        ts_s=ts_s,
        delack_s=delack_s,
    )
    _check_size(size)
    _check_common(p_, rtt, t0, b_, wmax, ts, delack)
    n = np.ceil(size)
    shape = n.shape
    n, p_, rtt, t0, b_, wmax = (x.ravel() for x in (n, p_, rtt, t0, b_, wmax))

    n_wm = _rounds_to_window(wmax)
    no_loss = rtt * _lossless_rounds(n, wmax, n_wm, _packets_to_wmax(wmax, n_wm))
    z_to = np.asarray(expected_timeout_sequence_s(p_, t0))

    log_q = np.log1p(-p_)
    p0 = np.exp(n * log_q)
    p1 = n * p_ * np.exp((n - 1) * log_q)
    several = n >= 2
    n_b = np.where(several, n - 1, 1.0)  # keeps betainc's second argument valid where N = 1
    p2 = np.where(several, betainc(2.0, n_b, p_), 0.0)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        tiny = p2 < 1e-250  # I_p(3, ·) would underflow: use the p → 0 limits
        losses = np.where(tiny, 2.0, n * p_ * -np.expm1((n - 1) * log_q) / p2)
        second = np.where(tiny, 2 * (n + 1) / 3, 2 / p_ * betainc(3.0, n_b, p_) / p2)
    second = np.clip(second, 2.0, n)
    losses = np.maximum(losses, 2.0)
    first_part = np.maximum(1.0, np.rint(second - 1))
    chunk = np.maximum(1.0, (n - second + 1) / (losses - 1))

    # One pass over first-loss positions serves both E{t_sl(N)} and E{t_sl(m − 1)}.
    stacked = [np.concatenate([x, x]) for x in (rtt, b_, wmax, z_to)]
    means, shares = _mean_single_loss_s(np.concatenate([n, first_part]), *stacked)
    single, first_single = means[: n.size], means[n.size :]

    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        multi = first_single + (losses - 1) * _loss_cycle_s(chunk, p_, rtt, t0, b_, wmax)
    multi = np.where(several, multi, 0.0)

    def out(x):
        return np.reshape(x, shape)

    return SikdarLatency(
        setup_s=_handshake(out(rtt), ts, out(p_), out(p_)),
        delayed_ack_s=delack,
        no_loss_s=out(no_loss),
        single_loss_s=out(single),
        multi_loss_s=out(multi),
        no_loss_probability=out(p0),
        single_loss_probability=out(p1),
        multi_loss_probability=out(p2),
        single_loss_timeout_share=out(shares[: n.size]),
        expected_losses=out(np.where(several, losses, np.nan)),
        second_loss_position=out(np.where(several, second, np.nan)),
    )


def sikdar_latency_s(
    size_pkts: ArrayLike,
    p: ArrayLike,
    rtt_s: ArrayLike,
    t0_s: ArrayLike,
    b: ArrayLike = DEFAULT_B,
    wmax_pkts: ArrayLike = np.inf,
    ts_s: ArrayLike = DEFAULT_TS_S,
    delack_s: ArrayLike = DEFAULT_DELACK_S,
) -> np.ndarray:
    """T(N) of [SKV]'s eq. 18, set-up and delayed ACK included; seconds (module notes)."""
    parts = sikdar_components(size_pkts, p, rtt_s, t0_s, b, wmax_pkts, ts_s, delack_s)
    return ar.result(np.asarray(parts.total_s))
