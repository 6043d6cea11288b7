"""The bottleneck rate of a captured path from the spacing of its packets (packet dispersion).

A busy bottleneck sends one packet straight after another, so two packets that waited in its
queue together leave it spaced by the time it takes to send the second: its size over the
bottleneck's rate (the *packet pair*: Jacobson, "Congestion avoidance and control", 1988;
Keshav 1991). Faster links after the bottleneck keep that spacing, and so does the receiver,
whose ACKs leave as the data arrives: the ACK clock. Each ACK that reports newly delivered
bytes is one sample, its new bytes over the time since the previous such ACK; where the
bottleneck was busy, every sample gives its rate.

Other samples give other rates: a pair that did not queue together is spaced by the sender
(slower, or, through a token bucket's burst, faster), a delayed-ACK timer or a timeout
stretches a gap, a queue after the bottleneck compresses one. Those scatter over decades while
the busy bottleneck's samples pile up at one value, so the estimate is the mode of the
samples' rates, as in the tools that measure capacity from packet pairs (pathrate: Dovrolis,
Ramanathan and Moore, "What do packet dispersion techniques measure?", INFOCOM 2001; nettimer,
passive, on captured traffic: Lai and Baker, USITS 2001; multiQ, on a TCP flow's data or ACK
interarrivals: Katti et al. 2004; Paxson's packet bunch modes on TCP traces, 1997): the
densest window of :data:`MODE_WIDTH` in the samples' rates (on a log scale, so that the window
is the same share of any rate), the rate being the window's samples taken as one train, their
bytes over their summed spacing. Dovrolis et al. show that with cross traffic the capacity mode
need not be the strongest; a capture of one bulk flow through its bottleneck is their
light-load case, where it is.

A bottleneck of several channels side by side (a bundle's member links, each sending its own
packet at its own pace) releases packets at the channels' summed rate only over a round of all
of them: two packets in a row left two channels at unrelated phases, and their spacing says
nothing of the sum (Dovrolis et al. 2001 on multichannel links: a pair measures at most one
channel; a train of as many packets as there are channels, the whole). So the samples are taken
as sliding *trains* of k consecutive ones, their bits over their summed spacing, with k the
shortest length from 1 up (doubling, to :data:`MAX_TRAIN`) whose mode agrees with twice its
length's within :data:`MODE_WIDTH` (:func:`train_mode`). On a single link every length gives its
rate and k = 1, the pairs themselves; behind eight 2,400 bit/s Iridium members (an hour of
``iridium-greenland-8``) pairs give 59 kbit/s, three times the bundle, and k = 8 gives 19.0.

Two sample sets:

* **ACK dispersion** (:func:`ack_samples`), the estimate ``farlink fit`` takes: the bytes each
  ACK newly reports delivered, its cumulative ACK and its SACK blocks together (what Linux's
  delivery-rate samples count, so recovery gives samples too), over the time since the last
  ACK that reported any. The ACKs crossed the whole forward path wherever the tap is.
* **Data dispersion** (:func:`data_samples`): each data segment over the time since the
  previous one. It shows the path only up to the tap: on a tap after the bottleneck the two
  agree; on one at the sender it is the sender's own spacing (a Linux sender answering each
  delayed ACK with two segments at once shows half the rate).

Bytes are counted as the IP packets the fitted scenario's link carries: each MSS of payload
with its IP and TCP headers (a super-segment captured with offloads on counts one header per
MSS, as the qdisc that shapes it does), so the rate is the link's, not the payload's.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from farlink.captures.fit_tcp import TIMESTAMP_OPTION_BYTES
from farlink.captures.intervals import merge_interval

if TYPE_CHECKING:
    from farlink.captures.analysis import Connection

__all__ = [
    "IP_TCP_HEADER_BYTES",
    "MAX_TRAIN",
    "MIN_MODE_SAMPLES",
    "MODE_WIDTH",
    "DispersionRate",
    "FittedRate",
    "ack_dispersion",
    "ack_samples",
    "data_dispersion",
    "data_samples",
    "fitted_rate",
    "header_bytes",
    "modal_rate",
    "packet_bytes",
    "train_mode",
    "trains",
]

# The mode's window: rates within 10 % of one another. A busy bottleneck's samples scatter by
# the tap's timestamping and the shaper's timer (a few per cent at a millisecond's spacing);
# the window holds that scatter whole, and a rate known to within it fits a path to within it.
MODE_WIDTH = 0.10
# The fewest samples a mode the fit takes stands on: twenty ACKs released by a busy bottleneck,
# tens of packet times of it, not a handful of gaps that fell together by chance.
MIN_MODE_SAMPLES = 20
IP_TCP_HEADER_BYTES = 40  # IPv4 and TCP without options, what the fitted link carries
# The longest train tried: a bundle of up to 32 channels side by side. Longer trains would span
# the gaps of a flow's recovery and no longer measure a busy bottleneck.
MAX_TRAIN = 32


@dataclass(frozen=True)
class DispersionRate:
    """The modal rate of one set of dispersion samples: ``rate_bps`` (None with no sample),
    the ``samples`` in the mode's window, the ``pairs`` (all samples) it was chosen from, and
    the ``train`` length each sample spans (module notes; 1: packet pairs)."""

    method: str
    rate_bps: float | None
    samples: int
    pairs: int
    train: int = 1


def packet_bytes(payload_bytes: np.ndarray, mss_bytes: int, header_bytes: int) -> np.ndarray:
    """``payload_bytes`` as IP packets: one header of ``header_bytes`` per MSS or part of one."""
    payload = np.asarray(payload_bytes, dtype=np.float64)
    return payload + np.ceil(payload / max(mss_bytes, 1)) * header_bytes


def modal_rate(bits: np.ndarray, gaps_s: np.ndarray, method: str) -> DispersionRate:
    """The mode of the rates ``bits / gaps_s`` (module notes): the densest window of
    :data:`MODE_WIDTH`, the lowest such window on a tie, as one train. Samples with no gap
    (packets stamped at the same instant) carry no rate and are left out."""
    bits = np.asarray(bits, dtype=np.float64)
    gaps_s = np.asarray(gaps_s, dtype=np.float64)
    keep = (gaps_s > 0) & (bits > 0)
    bits, gaps_s = bits[keep], gaps_s[keep]
    if not len(bits):
        return DispersionRate(method, None, 0, 0)
    log_rate = np.log(bits / gaps_s)
    order = np.argsort(log_rate, kind="stable")
    log_rate, bits, gaps_s = log_rate[order], bits[order], gaps_s[order]
    ends = np.searchsorted(log_rate, log_rate + np.log1p(MODE_WIDTH), side="right")
    counts = ends - np.arange(len(log_rate))
    first = int(np.argmax(counts))
    window = slice(first, int(ends[first]))
    rate = float(bits[window].sum() / gaps_s[window].sum())
    return DispersionRate(method, rate, int(counts[first]), len(bits))


def trains(bits: np.ndarray, gaps_s: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Every run of ``k`` consecutive samples as one: its bits and its summed spacing."""
    bits = np.asarray(bits, dtype=np.float64)
    gaps_s = np.asarray(gaps_s, dtype=np.float64)
    if k == 1:
        return bits, gaps_s
    cum_bits = np.concatenate(([0.0], np.cumsum(bits)))
    cum_gaps = np.concatenate(([0.0], np.cumsum(gaps_s)))
    return cum_bits[k:] - cum_bits[:-k], cum_gaps[k:] - cum_gaps[:-k]


def train_mode(bits: np.ndarray, gaps_s: np.ndarray, method: str) -> DispersionRate:
    """The mode of the shortest train length whose mode agrees with its double's (module
    notes): 1, 2, 4, ... up to :data:`MAX_TRAIN`, each mode standing on at least
    :data:`MIN_MODE_SAMPLES` trains. Where no two lengths agree, the pairs' mode."""
    pairs = modal_rate(bits, gaps_s, method)
    shorter = pairs
    k = 1
    while 2 * k <= MAX_TRAIN and len(bits) >= 2 * k:
        longer = replace(modal_rate(*trains(bits, gaps_s, 2 * k), method), train=2 * k)
        if _agree(shorter, longer):
            return shorter
        shorter, k = longer, 2 * k
    return pairs


def _agree(a: DispersionRate, b: DispersionRate) -> bool:
    if a.rate_bps is None or b.rate_bps is None:
        return False
    if min(a.samples, b.samples) < MIN_MODE_SAMPLES:
        return False
    return max(a.rate_bps, b.rate_bps) <= (1 + MODE_WIDTH) * min(a.rate_bps, b.rate_bps)


def header_bytes(conn: Connection) -> int:
    """The IP and TCP headers of each of the connection's segments, as the fit counts them."""
    timestamps = conn.handshake is not None and conn.handshake.timestamps
    return IP_TCP_HEADER_BYTES + (TIMESTAMP_OPTION_BYTES if timestamps else 0)


def data_samples(conn: Connection) -> tuple[np.ndarray, np.ndarray]:
    """Bits of each data segment after the first (as IP packets) and its spacing from the one
    before it at the tap."""
    t = conn.seq["time_s"]
    mss = conn.mss_bytes or int(conn.seq["len_bytes"].max(initial=1))
    bits = 8 * packet_bytes(conn.seq["len_bytes"][1:], mss, header_bytes(conn))
    return bits, np.diff(t)


def ack_samples(conn: Connection) -> tuple[np.ndarray, np.ndarray]:
    """Bits newly reported delivered by each ACK (its cumulative ACK and SACK blocks, as IP
    packets) and its spacing from the previous ACK that reported any."""
    mss = conn.mss_bytes or int(conn.seq["len_bytes"].max(initial=1))
    held: list[tuple[int, int]] = []
    delivered = 0
    last_t: float | None = None
    new_bytes: list[int] = []
    gaps: list[float] = []
    for t, ack, blocks in zip(conn.ack["time_s"], conn.ack["ack"], conn.sack, strict=True):
        if ack > 0:
            merge_interval(held, 0, int(ack))
        for lo, hi in blocks:
            if hi > lo:
                merge_interval(held, lo, hi)
        now = sum(e - s for s, e in held)
        if now <= delivered:
            continue
        if last_t is not None:
            new_bytes.append(now - delivered)
            gaps.append(float(t) - last_t)
        delivered, last_t = now, float(t)
    bits = 8 * packet_bytes(np.array(new_bytes, dtype=np.int64), mss, header_bytes(conn))
    return bits, np.array(gaps)


def ack_dispersion(conn: Connection) -> DispersionRate:
    """The modal rate of the ACKs' delivery spacing, over trains as long as the bottleneck's
    channels need (module notes)."""
    return train_mode(*ack_samples(conn), "ack dispersion")


def data_dispersion(conn: Connection) -> DispersionRate:
    """The modal rate of the data segments' spacing at the tap (module notes)."""
    return modal_rate(*data_samples(conn), "data dispersion")


@dataclass(frozen=True)
class FittedRate:
    """The rate ``farlink fit`` gives the fitted link, what it is (``basis``), both dispersion
    estimates, the goodput it falls back on, and why it fell back (``warning``, or None)."""

    rate_bps: float
    basis: str
    ack: DispersionRate
    data: DispersionRate
    goodput_bps: float
    warning: str | None = None

    @property
    def from_acks(self) -> bool:
        """The rate is the ACKs' dispersion mode (not the goodput it falls back on)."""
        return self.warning is None

    def to_dict(self) -> dict[str, Any]:
        return {
            "rate_basis": self.basis,
            "bottleneck_rate_bps": self.ack.rate_bps,
            "bottleneck_rate_method": self.ack.method,
            "bottleneck_rate_samples": self.ack.samples,
            "bottleneck_rate_pairs": self.ack.pairs,
            "bottleneck_rate_train": self.ack.train,
            "data_dispersion_rate_bps": self.data.rate_bps,
            "data_dispersion_samples": self.data.samples,
            "goodput_rate_bps": self.goodput_bps,
        }


def fitted_rate(conn: Connection, goodput_bps: float, goodput_basis: str) -> FittedRate:
    """The fitted link's rate: the ACK dispersion's mode where it stands on at least
    :data:`MIN_MODE_SAMPLES` samples and is not below the goodput by more than the mode's own
    width, :data:`MODE_WIDTH` (a bottleneck carries at least what crossed it, so a mode well
    below the goodput is something else's: a delayed-ACK timer, an application's pace); else
    ``goodput_bps``, a lower bound, with a warning.

    The width is the mode's precision, and a short connection's mean goodput can stand above
    the bottleneck's sustained rate by that much: a token bucket lets its burst through at line
    rate (a 2 MB transfer through a 20 Mbit/s tbf with an 80 kB bucket: goodput 19.68 Mbit/s
    in payload, the mode 19.67 Mbit/s in IP packets, the tbf's sustained 19.815)."""
    ack, data = ack_dispersion(conn), data_dispersion(conn)
    why = None
    if ack.rate_bps is None or ack.samples < MIN_MODE_SAMPLES:
        why = (
            f"{ack.samples} ACKs in its mode, fewer than {MIN_MODE_SAMPLES}: the flow kept the "
            "bottleneck busy too briefly to show its rate"
        )
    elif ack.rate_bps * (1 + MODE_WIDTH) < goodput_bps:
        why = (
            f"its mode, {ack.rate_bps:.6g} bit/s, is below the goodput by more than "
            f"{MODE_WIDTH:.0%}"
        )
    if why is None and ack.rate_bps is not None:
        spacings = "delivery spacings" if ack.train == 1 else f"trains of {ack.train} deliveries"
        basis = f"ACK dispersion: the mode of {ack.samples} of {ack.pairs} {spacings}"
        return FittedRate(ack.rate_bps, basis, ack, data, goodput_bps)
    warning = (
        f"{conn.name}: no bottleneck rate from the ACKs' dispersion ({why}); the fitted rate is "
        f"the {goodput_basis}, {goodput_bps:.6g} bit/s, a lower bound of the path's"
    )
    return FittedRate(goodput_bps, goodput_basis, ack, data, goodput_bps, warning)
