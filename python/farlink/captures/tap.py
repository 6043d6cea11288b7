"""Where on the path a capture was taken: at the sender, at the receiver, or between them.

A tap splits the path's round trip in two: *downstream*, from the tap to the receiver and back
(a data segment seen at the tap, then the ACK it released), and *upstream*, from the tap to the
sender and back (an ACK seen at the tap, then the data the sender sent on it). A tap on the
sender's host sees the whole round trip downstream and next to nothing upstream; a tap on the
receiver's host the reverse; a tap in between sees some of each. Each half is measured twice
where the capture allows, and the least of its figures taken:

* **the handshake**, when the capture holds it: the SYN's answer (SYN-ACK) crosses the tap one
  round trip of the SYN's far side after the SYN, and the third segment of the handshake one
  round trip of the other side after the SYN-ACK. Which side is which follows from who sent
  the SYN: the data's sender (a client uploading) or its receiver (a download);
* **the data**: downstream, the least tap-to-tap RTT of the data
  (:mod:`farlink.captures.rtt`); upstream, where both ends use TCP timestamps, the least time
  from the first ACK seen carrying a receiver's TSval to the first data segment echoing it (the
  sender echoes a TSval only once it got it, RFC 7323), which is the sender's turn-around and
  the path between.

**The rule.** With ``u`` and ``d`` the least upstream and downstream round trips, the tap is at
the *sender* when ``u`` is under :data:`END_SHARE` of ``u + d``, at the *receiver* when ``d``
is, and *mid-path* otherwise. Without the handshake and without timestamps ``u`` is unknown and
so is the tap's place (``None``); so it is where the whole round trip is no longer than a
host's own turn-around (:data:`HOST_TURNAROUND_S`, a path of veth pairs in one machine), which
the two halves cannot be told from.

What ``farlink fit`` does with it: the path's round trip is ``u + d``; the tap-to-tap RTT alone
is only ``d``, which at a receiver-side tap is the receiver's own turn-around (a fraction of a
millisecond) and never the path's delay. So a fit adds ``u`` to every RTT sample where the tap
is not at the sender, or takes the path's RTT from the user (``--rtt``), or refuses.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from farlink.captures.read import Packet

__all__ = ["END_SHARE", "HOST_TURNAROUND_S", "TapPosition", "tap_position"]

# A tap is at one end when the round trip on that end's side is under this share of the
# whole: a host's own turn-around (tens of µs to a millisecond) against a path's milliseconds.
END_SHARE = 0.05
# A round trip no longer than a host's own turn-around (an ACK to the data it releases, a
# segment to its ACK) cannot tell the path's halves from the hosts' processing.
HOST_TURNAROUND_S = 1e-3


@dataclass(frozen=True)
class TapPosition:
    """The tap's place (module notes) and the round trips it was told from, in seconds."""

    location: str | None  # "sender", "receiver", "mid-path", or None when not shown
    upstream_rtt_s: float | None  # tap -> sender -> tap, least
    downstream_rtt_s: float | None  # tap -> receiver -> tap, least
    upstream_basis: str = ""
    downstream_basis: str = ""
    # The handshake's whole round trip (small segments, before any queue formed), when the
    # capture holds it: the path's least RTT less a data packet's time on its links.
    handshake_rtt_s: float | None = None

    @property
    def acks_reach_sender_at_once(self) -> bool:
        """Whether the ACKs seen at the tap are those the sender had at that moment: the round
        trip from the tap to the sender and back is a small share of the path's, or no longer
        than a host's own turn-around (a tap at the sender, or next to it on a short path)."""
        up, down = self.upstream_rtt_s, self.downstream_rtt_s
        if up is None:
            return False
        return up <= HOST_TURNAROUND_S or (down is not None and up < END_SHARE * (up + down))

    def to_dict(self) -> dict[str, Any]:
        return {
            "tap_location": self.location,
            "tap": {**asdict(self), "acks_reach_sender_at_once": self.acks_reach_sender_at_once},
        }


def tap_position(
    data: list[Packet], other: list[Packet], downstream_data_rtt_s: float | None
) -> TapPosition:
    """Where the tap was for the connection whose sender sent ``data`` and whose receiver
    ``other`` (module notes); ``downstream_data_rtt_s`` is the least tap-to-tap RTT of the
    data, None without samples."""
    hs_up, hs_down = _handshake_round_trips(data, other)
    echo_up = _echo_round_trip(other, data)
    up, up_basis = _least((hs_up, "handshake"), (echo_up, "TSval echoed by the sender"))
    down, down_basis = _least((hs_down, "handshake"), (downstream_data_rtt_s, "data's ACKs"))
    whole = hs_up + hs_down if hs_up is not None and hs_down is not None else None
    return TapPosition(_location(up, down), up, down, up_basis, down_basis, whole)


def _location(up: float | None, down: float | None) -> str | None:
    if up is None or down is None or up + down <= HOST_TURNAROUND_S:
        return None
    if up < END_SHARE * (up + down):
        return "sender"
    if down < END_SHARE * (up + down):
        return "receiver"
    return "mid-path"


def _least(*figures: tuple[float | None, str]) -> tuple[float | None, str]:
    known = [(v, basis) for v, basis in figures if v is not None]
    if not known:
        return None, ""
    return min(known, key=lambda vb: vb[0])


def _handshake_round_trips(
    data: list[Packet], other: list[Packet]
) -> tuple[float | None, float | None]:
    """Upstream and downstream round trips from the handshake (module notes), None where the
    capture does not hold it or cannot say which copy a segment answered."""
    if any(p.syn and p.has_ack for p in other):
        # The data's sender opened: its SYN went downstream, its third segment answers upstream.
        down, up = _opening(data, other)
        return _measured(up, down)
    if any(p.syn and p.has_ack for p in data):
        # The receiver opened (a download): its SYN went upstream, its third segment answers.
        up, down = _opening(other, data)
        return _measured(up, down)
    return None, None


def _opening(opener: list[Packet], answerer: list[Packet]) -> tuple[float | None, float | None]:
    """The round trip beyond the tap on the answerer's side (SYN to SYN-ACK) and on the
    opener's (SYN-ACK to the third segment)."""
    syn_ack = next(p for p in answerer if p.syn and p.has_ack)
    syns = [p for p in opener if p.syn and not p.has_ack and p.time_s <= syn_ack.time_s]
    syn = _answered(syns, syn_ack)
    third = next((p for p in opener if not p.syn and p.time_s >= syn_ack.time_s), None)
    syn_acks = [p for p in answerer if p.syn and p.has_ack]
    if third is not None:
        syn_acks = [p for p in syn_acks if p.time_s <= third.time_s]
    answered = _answered(syn_acks, third) if third is not None else None
    far = syn_ack.time_s - syn.time_s if syn is not None else None
    near = third.time_s - answered.time_s if third is not None and answered else None
    return far, near


def _answered(copies: list[Packet], answer: Packet) -> Packet | None:
    """Which of ``copies`` (a SYN or SYN-ACK sent once or more) ``answer`` answered: the only
    one, or the one whose TSval it echoes; None where that is not known (Karn's rule)."""
    if len(copies) == 1:
        return copies[0]
    echoed = [p for p in copies if p.tsval is not None and p.tsval == answer.tsecr]
    return echoed[0] if len(echoed) == 1 else None


def _measured(up: float | None, down: float | None) -> tuple[float | None, float | None]:
    """No figure from a handshake whose three segments carry one instant: a program wrote it
    (a simulation's synthetic handshake), no path carried it."""
    if up == 0 and down == 0:
        return None, None
    return up, down


def _echo_round_trip(other: list[Packet], data: list[Packet]) -> float | None:
    """The least time from the first packet of the receiver carrying a TSval to the first data
    segment of the sender echoing it; None without timestamps."""
    first_seen: dict[int, float] = {}
    for p in other:
        if p.tsval is not None and p.time_ok:
            first_seen.setdefault(p.tsval, p.time_s)
    best = None
    echoed: set[int] = set()
    for p in data:
        if p.tsecr is None or p.tsecr in echoed or not p.time_ok:
            continue
        echoed.add(p.tsecr)
        t0 = first_seen.get(p.tsecr)
        if t0 is not None and p.time_s >= t0:
            gap = p.time_s - t0
            best = gap if best is None else min(best, gap)
    return best
