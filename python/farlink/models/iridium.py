"""Iridium bundle arithmetic of seed 000: loaded RTT under ARQ and MLPPP queueing, drop losses.

Loaded round-trip time (seed 000 section 4.1.6). Under full load MLPPP does not fragment, so each
packet crosses one 2.4 kbps member, and the Linux 2.6 transmit queue of Q_P = 3 packets (the one
in service included) is always full. A new packet waits for the two ahead of it, so

    RTT = Q_P · T_MP

where T_MP is a member's per-packet service time: the clocking time of the packet plus the time
its ARQ spends on retransmissions. The thesis takes T_MP = 6.5 s for 1500-byte packets at
2400 bit/s and 0.5 s propagation (5 s clocking + 1.5 s ARQ, from its reference [25]), giving
19.5 s against the 19–21 s measured (Figure 4.6), and 15 s for an error-free channel. The ARQ of
the Iridium modems is not published; farlink offers two ways to give its share:

* directly, as the mean ARQ time per packet (``arq_time_s``), as the thesis does; or
* from a go-back-N model (Bertsekas and Gallager, Data Networks, 2nd ed., section 2.4): frames
  of ``frame_bytes`` fail independently with probability P_f; after a failure the sender has
  sent the rest of its window before it learns of it, so each failure costs the N frames that
  fit in a frame time plus a round trip, N = 1 + ⌈2 t_prop / t_frame⌉. The mean number of frame
  slots per delivered frame is (1 + (N − 1) P_f) / (1 − P_f).

Packets lost by one call drop (seed 000 section 5.2): until the link layer notices the drop, after
T_L seconds, upper layers keep handing it packets that are lost; add what the sender's modem and
serial card and the receiver's modem hold:

    lost = (T_L R + B_M + B_S + B_M) / P

with R the member rate in bytes per second and P the segment size. The worked example (four
members, R = 300 B/s, B_M = 4.5 KB, B_S = 1.5 KB, T_L = 10 s, P = 1.5 KB) gives 9 packets, more
than half of W_max = 22.5 KB, so even SACK times out.

Availability of a bundle under the modem state machine of section 7.1 (farlink's estimate of
the redial time, ``docs/far-links.md``). A member is up, as the link manager's log counts it,
from the moment it connects until its call drop is noticed: an exponential time of mean 1/β
(section 5.3) plus the detection delay T_L; it is then down for the redial time R (T_d plus the
dial). So it is up with probability A = (1/β + T_L) / (1/β + T_L + R), and, members being
independent, all n are up with probability A^n (the engine reproduces this, a test in
``crates/farlink-core/src/links/mlppp/tests.rs``).

ARQ estimates. With selective repeat each damaged frame costs one more frame time, so a
member carries (1 − P_f) of its rate; with go-back-N each costs N frame slots,
(1 − P_f) / (1 + (N − 1) P_f). A frame given up after k damaged tries loses its packet of n
frames: 1 − (1 − P_f^k)^n.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from farlink.models import _arrays as ar

__all__ = [
    "LINUX_TXQUEUE_PKTS",
    "bundle_full_uptime",
    "clocking_time_s",
    "fit_redial_time_s",
    "go_back_n_efficiency",
    "go_back_n_service_time_s",
    "loaded_rtt_s",
    "member_availability",
    "packets_lost_per_call_drop",
    "residual_packet_loss",
    "selective_repeat_frame_error_rate",
]

LINUX_TXQUEUE_PKTS = 3
"""Q_P: the Linux 2.6 transmit queue per member, the packet in service included (section 4.1.6)."""


def clocking_time_s(packet_bytes: ArrayLike, rate_bps: ArrayLike) -> np.ndarray:
    """Time to clock one packet onto a member: 1500 B at 2400 bit/s takes 5 s."""
    size, rate = ar.broadcast(packet_bytes=packet_bytes, rate_bps=rate_bps)
    ar.positive("packet_bytes", size)
    ar.positive("rate_bps", rate)
    return ar.result(size * 8 / rate)


def go_back_n_service_time_s(
    packet_bytes: ArrayLike,
    rate_bps: ArrayLike,
    frame_bytes: ArrayLike,
    frame_error_rate: ArrayLike,
    propagation_s: ArrayLike,
) -> np.ndarray:
    """T_MP of a go-back-N ARQ member: ⌈packet/frame⌉ frames × t_frame × (1 + (N−1)P_f)/(1 − P_f).

    With P_f = 0 this is the clocking time alone, as in the thesis's error-free case.
    """
    size, rate, frame, p_f, prop = ar.broadcast(
        packet_bytes=packet_bytes,
        rate_bps=rate_bps,
        frame_bytes=frame_bytes,
        frame_error_rate=frame_error_rate,
        propagation_s=propagation_s,
    )
    ar.positive("packet_bytes", size)
    ar.positive("rate_bps", rate)
    ar.positive("frame_bytes", frame)
    ar.require((p_f >= 0) & (p_f < 1), "frame_error_rate", "in [0, 1)")
    ar.non_negative("propagation_s", prop)
    t_frame = frame * 8 / rate
    window_frames = 1 + np.ceil(2 * prop / t_frame)
    slots_per_frame = (1 + (window_frames - 1) * p_f) / (1 - p_f)
    return ar.result(np.ceil(size / frame) * t_frame * slots_per_frame)


def loaded_rtt_s(
    service_time_s: ArrayLike, queue_pkts: ArrayLike = LINUX_TXQUEUE_PKTS
) -> np.ndarray:
    """RTT = Q_P · T_MP (seed 000 section 4.1.6): the RTT a full bundle shows to TCP."""
    t_mp, q = ar.broadcast(service_time_s=service_time_s, queue_pkts=queue_pkts)
    ar.positive("service_time_s", t_mp)
    ar.require(q >= 1, "queue_pkts", "at least 1 packet")
    return ar.result(q * t_mp)


def packets_lost_per_call_drop(
    detection_s: ArrayLike,
    rate_bps: ArrayLike,
    modem_buffer_bytes: ArrayLike,
    serial_buffer_bytes: ArrayLike,
    segment_bytes: ArrayLike,
) -> np.ndarray:
    """(T_L R + B_M + B_S + B_M) / P: packets one call drop destroys (seed 000 section 5.2).

    The bundle's MLPPP buffer B_P is not in the sum: it belongs to the bundle, not to the member
    that dropped, and the thesis lists it among the parameters but leaves it out.
    """
    t_l, rate, b_m, b_s, seg = ar.broadcast(
        detection_s=detection_s,
        rate_bps=rate_bps,
        modem_buffer_bytes=modem_buffer_bytes,
        serial_buffer_bytes=serial_buffer_bytes,
        segment_bytes=segment_bytes,
    )
    ar.non_negative("detection_s", t_l)
    ar.positive("rate_bps", rate)
    ar.non_negative("modem_buffer_bytes", b_m)
    ar.non_negative("serial_buffer_bytes", b_s)
    ar.positive("segment_bytes", seg)
    # Each input is finite, but their product may not be (1e10 s at 1e308 bit/s).
    with np.errstate(over="ignore"):
        lost = (t_l * rate / 8 + 2 * b_m + b_s) / seg
    ar.require(np.isfinite(lost), "detection_s * rate_bps", "small enough for a finite loss")
    return ar.result(lost)


def member_availability(
    drop_rate_per_s: ArrayLike, detection_s: ArrayLike, redial_s: ArrayLike
) -> np.ndarray:
    """A = (1/β + T_L) / (1/β + T_L + R): the share of time a member is up in the log."""
    beta, t_l, r = ar.broadcast(
        drop_rate_per_s=drop_rate_per_s, detection_s=detection_s, redial_s=redial_s
    )
    ar.positive("drop_rate_per_s", beta)
    ar.non_negative("detection_s", t_l)
    ar.non_negative("redial_s", r)
    up = 1 / beta + t_l
    return ar.result(up / (up + r))


def bundle_full_uptime(
    members: ArrayLike, drop_rate_per_s: ArrayLike, detection_s: ArrayLike, redial_s: ArrayLike
) -> np.ndarray:
    """A^n: the share of time every one of n independent members is up."""
    n, a = ar.broadcast(
        members=members, a=member_availability(drop_rate_per_s, detection_s, redial_s)
    )
    ar.require(n >= 1, "members", "at least 1")
    return ar.result(a**n)


def fit_redial_time_s(
    full_uptime: ArrayLike, members: ArrayLike, drop_rate_per_s: ArrayLike, detection_s: ArrayLike
) -> np.ndarray:
    """The redial time R for which A^n equals a measured full-capacity uptime."""
    f, n, beta, t_l = ar.broadcast(
        full_uptime=full_uptime,
        members=members,
        drop_rate_per_s=drop_rate_per_s,
        detection_s=detection_s,
    )
    ar.probability("full_uptime", f)
    ar.require(n >= 1, "members", "at least 1")
    ar.positive("drop_rate_per_s", beta)
    ar.non_negative("detection_s", t_l)
    a = f ** (1 / n)
    return ar.result((1 / beta + t_l) * (1 / a - 1))


def selective_repeat_frame_error_rate(
    efficiency: ArrayLike, packet_bytes: ArrayLike, payload_bytes: ArrayLike
) -> np.ndarray:
    """P_f for which selective repeat leaves a measured goodput efficiency.

    ``efficiency`` is goodput over the members' summed rate; a packet of ``packet_bytes`` on
    the line carries ``payload_bytes``: efficiency = (payload / packet) (1 − P_f).
    """
    e, packet, payload = ar.broadcast(
        efficiency=efficiency, packet_bytes=packet_bytes, payload_bytes=payload_bytes
    )
    ar.positive("packet_bytes", packet)
    ar.require((payload > 0) & (payload <= packet), "payload_bytes", "in (0, packet_bytes]")
    ar.require((e > 0) & (e <= payload / packet), "efficiency", "in (0, payload/packet]")
    return ar.result(1 - e * packet / payload)


def go_back_n_efficiency(frame_error_rate: ArrayLike, window_frames: ArrayLike) -> np.ndarray:
    """(1 − P_f) / (1 + (N − 1) P_f): the share of a go-back-N line carrying new frames."""
    p, n = ar.broadcast(frame_error_rate=frame_error_rate, window_frames=window_frames)
    ar.require((p >= 0) & (p < 1), "frame_error_rate", "in [0, 1)")
    ar.require(n >= 1, "window_frames", "at least 1")
    return ar.result((1 - p) / (1 + (n - 1) * p))


def residual_packet_loss(
    frame_error_rate: ArrayLike, max_tries: ArrayLike, frames: ArrayLike
) -> np.ndarray:
    """1 − (1 − P_f^k)^n: a packet of n frames lost because one frame failed k tries."""
    p, k, n = ar.broadcast(frame_error_rate=frame_error_rate, max_tries=max_tries, frames=frames)
    ar.require((p >= 0) & (p <= 1), "frame_error_rate", "in [0, 1]")
    ar.require(k >= 1, "max_tries", "at least 1")
    ar.require(n >= 1, "frames", "at least 1")
    return ar.result(1 - (1 - p**k) ** n)
