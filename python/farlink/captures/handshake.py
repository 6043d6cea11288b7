"""What the two ends of a captured connection agreed, and how its receiver acknowledged.

The options of the SYN and the SYN-ACK (RFC 7323, RFC 2018): SACK and window scaling are in
effect only when both SYNs carry them, timestamps when both ends send them (the analysis's
rule). Without the handshake in the capture
SACK is known only when an ACK carries SACK blocks, and window scaling not at all; the largest
window the receiver advertised is then unknown too (its raw field needs the shift from its
SYN-ACK).

The receiver's acknowledgement pattern is what its ACKs show: the median number of the
sender's segments (of its MSS) each advancing ACK acknowledges, 1 for a receiver that
acknowledges every segment, 2 for RFC 1122's delayed ACKs, more where the receiver coalesces
(GRO) before it acknowledges.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from farlink.captures.read import Packet

__all__ = ["Handshake", "handshake", "segments_per_ack"]


@dataclass(frozen=True)
class Handshake:
    """The connection's options as the capture shows them; None where it does not show them."""

    syns_seen: bool
    sack: bool | None
    timestamps: bool
    window_scaling: bool | None
    receiver_mss_option_bytes: int | None
    receive_window_bytes: int | None  # the largest window the receiver advertised, scaled


def handshake(data: list[Packet], other: list[Packet], uses_timestamps: bool) -> Handshake:
    """The options of the connection whose sender sent ``data`` and whose receiver ``other``."""
    syn = next((p for p in data if p.syn), None)
    syn_ack = next((p for p in other if p.syn), None)
    both = syn is not None and syn_ack is not None
    if both:
        sack: bool | None = syn.sack_permitted and syn_ack.sack_permitted
        scaling: bool | None = syn.wscale is not None and syn_ack.wscale is not None
    else:
        sack = True if any(p.sack for p in other) else None
        scaling = None
    window = None
    if both:
        # RFC 7323 section 2.2: a SYN's own window is never scaled; the receiver's later windows
        # are shifted by the count in its SYN-ACK.
        shift = (syn_ack.wscale or 0) if scaling else 0
        windows = [p.window for p in other if not p.syn]
        window = (max(windows) << shift) if windows else None
    return Handshake(
        syns_seen=both,
        sack=sack,
        timestamps=uses_timestamps,
        window_scaling=scaling,
        receiver_mss_option_bytes=next((p.mss for p in other if p.syn and p.mss), None),
        receive_window_bytes=window,
    )


def segments_per_ack(acks: np.ndarray, mss_bytes: int) -> float | None:
    """The median number of ``mss_bytes`` segments an advancing cumulative ACK acknowledges
    (module notes); None with no advancing ACK."""
    highest = np.maximum.accumulate(acks) if len(acks) else acks
    advances = np.diff(highest)
    advances = advances[advances > 0]
    if not len(advances) or mss_bytes <= 0:
        return None
    return float(np.median(advances / mss_bytes))
