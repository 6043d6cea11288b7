"""``farlink fit``: estimate a path from a capture (and a call-drop log) and write a scenario.

From the busiest TCP connection of a capture (:mod:`farlink.captures.analysis`):

* the loss rates, split by where the loss happened relative to the tap
  (:mod:`farlink.captures.loss`):
  ``loss_rate``, copies lost after the tap (seen sent, never acknowledged) / data segments seen
  there, and ``loss_rate_before_tap``, copies lost before it (resends of data the tap never saw,
  timer firings it never saw) / data segments that reached that part of the path. The fitted
  path is one link, so its Bernoulli ``p`` is the two together, ``loss_rate_path`` (equal to
  ``loss_rate`` when nothing was lost before the tap), per packet of the fitted MSS: a capture
  taken with offloads on holds super-segments (TSO/GSO) of many MSS, and a lost one is one
  loss event, so the data segments are counted in segments of the MSS there. Reported beside
  them, the upper bound retransmitted / first transmissions, which counts spurious resends
  (go-back-N after a timeout, a resend crossing its ACK) too. The estimate counts every loss,
  congestion drops at a full queue as well as corruption; ``p`` leaves out the holes before
  the tap that a full queue there made, where the sender's timestamps show them
  (:mod:`farlink.captures.overflow`), and the copies lost after the tap while its RTT stood at
  its ceiling, since the fitted scenario's own queue makes those;
* the RTT distribution (minimum, median, mean, 95th percentile, standard deviation): the
  sender's own RTT where its timestamps show it (the queue before the tap included), else the
  tap-to-tap samples (:mod:`farlink.captures.rtt`);
* the bottleneck rate from the spacing of the ACKs where the bottleneck was busy, the mode of
  their delivery rates (:mod:`farlink.captures.dispersion`), where that mode stands on enough
  samples and is not below the goodput by more than its width; else, with a warning, the
  largest goodput over a complete window of 10 s, or longer where the RTT is (four median
  RTTs; the mean goodput of a shorter connection), a lower bound that is close only when the
  flow filled the path;
* a token bucket in front of the bottleneck, where the ACKs show bursts delivered faster than
  the fitted rate (:mod:`farlink.captures.bucket`): the link gets ``burst_bytes``, the largest
  burst's excess over the rate (a lower bound of the bucket's depth), and ``peak_rate_bps``, the
  burst's own rate. Only with the rate from the ACKs' dispersion: a rate that is a goodput is a
  lower bound, and bursts above it prove nothing;
* the one-way delay as half the minimum RTT of the path: where the tap is not at the sender
  (:mod:`farlink.captures.tap`), the round trip between the tap and the sender is added to
  every RTT sample (at a receiver-side tap the tap-to-tap RTT is the receiver's turn-around,
  never the path's); a receiver-side capture without timestamps, which shows no queue on the
  path, is refused unless the user gives the path's least RTT (``rtt_s``, ``--rtt``);
* where a queue overflowed (:mod:`farlink.captures.overflow`, before or after the tap), the
  bottleneck queue as the level it overflowed at, plus the packet it admitted last, times the
  rate; the losses split by cause in :meth:`PathFit.loss_by_cause`;
* elsewhere, the bottleneck queue as the largest standing queue the RTT showed most of the time:
  the 95th percentile of the RTT above its minimum, times the rate (the sender's own RTT sees
  the queue before the tap, which is where a bottleneck in front of the tap keeps it). A lower
  bound: a queue that never filled shows less than its size. It is never set below the path's
  bandwidth-delay product nor below the sender's initial window, so the fitted queue does not
  drop what the captured path carried (a flow that never queued gives no figure of its own);
* the sender's least RTO, where the capture shows timeouts: the shortest wait from the timer's
  restart to a timeout (:mod:`farlink.captures.rto`); the scenario's flow gets it as ``min_rto``
  (farlink's default, RFC 6298's 1 s, otherwise).

The fitted flow's segments are the sender's MSS (the receiver's MSS option, less the timestamp
option's 12 bytes when both ends use it; the commonest segment length without the handshake),
never a super-segment's length. Its sender is farlink's default TCP (RFC 6298's timer, SACK
recovery, Reno) unless told: ``tcp`` names its congestion controller (the capture does not show
it; the person who took it knows it), and ``profile = "linux"`` gives it what a Linux sender is,
the TCP profile ``linux`` with the options the capture shows beside it
(:mod:`farlink.captures.fit_tcp`): a Linux sender does not wait out RFC 6298's one-second floor, and
RACK-TLP repairs the losses that would otherwise end in a timeout, so a fitted path carrying the
RFC's sender loses whole seconds a Linux capture never lost (docs/captures.md).

With ``--drops LOG`` the per-member call-drop rate β is fitted as ``farlink fit-drops`` does
(seed 000 section 5.3). The scenario written is a two-node path with one link (rate, delay,
Bernoulli loss ``p``, the tighter estimate, in the data direction, named ``lossy_link``) and one
unbounded flow with the capture's segment size; β, when known, and the RTT figures are recorded
as comments and under ``extra`` so the other engines can use them.

Before it is written, the scenario is handed to the core (``farlink._core``), which parses and
validates it and runs one simulated millisecond of it: a capture whose figures make no path
(no RTT above zero, no goodput) is refused with the core's message, never written.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from farlink.captures.analysis import GOODPUT_WINDOWS_S, Connection, analyze_capture
from farlink.captures.bucket import TokenBucketFit, token_bucket
from farlink.captures.dispersion import (
    IP_TCP_HEADER_BYTES,
    FittedRate,
    fitted_rate,
    header_bytes,
)
from farlink.captures.fit_tcp import PROFILES, tcp_lines
from farlink.captures.handshake import Handshake, segments_per_ack
from farlink.captures.loss import LossEstimate, estimate_loss
from farlink.captures.overflow import QueueOverflows, queue_overflows, queue_overflows_after_tap
from farlink.captures.tap import HOST_TURNAROUND_S, TapPosition

__all__ = [
    "LOSS_RATE_MEANINGS",
    "PROFILES",
    "PathFit",
    "checked_scenario_toml",
    "fit_path",
    "scenario_toml",
]

# The goodput bound's window spans at least this many median RTTs (_goodput_bound).
GOODPUT_WINDOW_RTTS = 4
LOSS_RATE_MEANINGS = {
    "loss_rate": "copies lost after the tap (seen sent, never acknowledged: the needed "
    "retransmissions of data the tap saw) / data segments seen at the tap",
    "loss_rate_before_tap": "copies lost before the tap (needed retransmissions of data the tap "
    "never saw, timer firings it never saw) / data segments that reached that part; a lower "
    "bound",
    "scenario_loss_p": "both together, less the overflows of a full queue before the tap "
    "(its own queue makes those), the loss of the fitted scenario's one link",
    "loss_rate_upper_bound": "every retransmission / first transmissions, spurious resends "
    "(go-back-N after a timeout, a resend crossing its ACK) included",
}
"""What each loss figure of a :class:`PathFit` counts, as ``farlink fit`` prints it."""


@dataclass(frozen=True)
class PathFit:
    connection: str
    loss: LossEstimate
    rtt_s: dict[str, float]
    rate_bps: float
    delay_s: float
    mss_bytes: int
    beta_per_s: float | None
    beta_ci_per_s: tuple[float, float] | None
    drop_fit_verdict: str | None
    rtt_method: str = ""
    warnings: tuple[str, ...] = ()
    min_rto_s: float | None = None
    queue_bytes: int = 0
    queue_basis: str = ""
    handshake: Handshake | None = None
    segments_per_ack: float | None = None
    largest_segment_bytes: int = 0
    # Data segments seen at the tap counted in segments of the MSS: more than the segments
    # themselves when the capture holds super-segments (TSO/GSO, captured with offloads on).
    mss_segments: int = 0
    # How rate_bps was found: the dispersion estimates and the goodput beside them.
    rate_fit: FittedRate | None = None
    # The holes before the tap that a full queue made (farlink.captures.overflow).
    overflows: QueueOverflows | None = None
    # The copies lost after the tap that a full queue after it dropped (the same module).
    overflows_after: QueueOverflows | None = None
    # A token bucket in front of the bottleneck (farlink.captures.bucket).
    bucket: TokenBucketFit | None = None
    # Where the tap was (farlink.captures.tap) and the timeouts the capture shows.
    tap: TapPosition | None = None
    timeouts: int = 0

    @property
    def rate_basis(self) -> str:
        return self.rate_fit.basis if self.rate_fit else "largest goodput over a window"

    @property
    def loss_rate(self) -> float:
        """Copies lost after the tap / data segments seen there."""
        return self.loss.loss_rate_after_tap

    @property
    def random_loss(self) -> LossEstimate:
        """The loss estimate less the losses a full queue made, before and after the tap."""
        loss = self.loss
        full = self.overflows.overflows if self.overflows else 0
        if full and loss.lost_before_gaps is not None:
            loss = replace(loss, lost_before_gaps=loss.lost_before_gaps - full)
        full_after = self.overflows_after.overflows if self.overflows_after else 0
        if full_after:
            loss = replace(loss, lost_after_tap=loss.lost_after_tap - full_after)
        return loss

    @property
    def scenario_loss_p(self) -> float:
        """The Bernoulli ``p`` of the fitted one-link path: the copies lost at random before
        and after the tap per packet of the fitted MSS (module notes)."""
        loss = self.random_loss
        if self.mss_segments <= loss.data_segments:
            return loss.loss_rate_path
        return replace(loss, data_segments=self.mss_segments).loss_rate_path

    def loss_by_cause(self) -> dict[str, Any]:
        """The losses split by cause (module notes): a full queue's overflows, before and after
        the tap, and the random losses that remain, which the fitted link gets as ``p``."""
        over_before = self.overflows.overflows if self.overflows else 0
        over_after = self.overflows_after.overflows if self.overflows_after else 0
        random = self.random_loss
        return {
            "queue_overflows": over_before + over_after,
            "queue_overflows_before_tap": over_before,
            "queue_overflows_after_tap": over_after,
            "random_losses": random.lost_before_tap + random.lost_after_tap,
            "random_losses_before_tap": random.lost_before_tap,
            "random_losses_after_tap": random.lost_after_tap,
            "random_loss_p": self.scenario_loss_p,
            "queue_bytes": self.queue_bytes,
            "queue_basis": self.queue_basis,
            "lower_bounds": [
                "random_losses_before_tap: a copy lost twice before the tap with no timeout to "
                "show it counts once, adjacent copies lost there count once",
                *(
                    []
                    if over_before + over_after
                    else ["queue_bytes: no overflow seen; a queue that never filled shows less"]
                ),
            ],
        }

    @property
    def loss_rate_upper_bound(self) -> float:
        return self.loss.upper_bound

    def to_dict(self) -> dict[str, Any]:
        return {
            "connection": self.connection,
            **self.loss.to_dict(),
            "scenario_loss_p": self.scenario_loss_p,
            "rtt_s": self.rtt_s,
            "rtt_method": self.rtt_method,
            "min_rto_s": self.min_rto_s,
            "rate_bps": self.rate_bps,
            **(self.rate_fit.to_dict() if self.rate_fit else {}),
            **(self.overflows.to_dict() if self.overflows else {}),
            **(self.overflows_after.to_dict() if self.overflows_after else {}),
            "loss_by_cause": self.loss_by_cause(),
            **(self.tap.to_dict() if self.tap else {"tap_location": None}),
            "timeouts": self.timeouts,
            **(self.bucket.to_dict() if self.bucket else {}),
            "queue_bytes": self.queue_bytes,
            "queue_basis": self.queue_basis,
            "delay_s": self.delay_s,
            "mss_bytes": self.mss_bytes,
            "largest_segment_bytes": self.largest_segment_bytes,
            "segments_per_ack": self.segments_per_ack,
            "handshake": asdict(self.handshake) if self.handshake else None,
            "beta_per_s": self.beta_per_s,
            "beta_ci_per_s": list(self.beta_ci_per_s) if self.beta_ci_per_s else None,
            "drop_fit_verdict": self.drop_fit_verdict,
        }


def _busiest(connections: list[Connection]) -> Connection:
    return max(connections, key=lambda c: c.delivered_bytes)


def fit_path(capture: Path, drops: Path | None = None, *, rtt_s: float | None = None) -> PathFit:
    """Estimate the path of ``capture``'s busiest connection (see the module notes); ``rtt_s``,
    the path's least RTT as the user knows it (``--rtt``), in place of the capture's.

    Raises:
        ValueError: no connection carrying data, no RTT samples, or a tap at the receiver
            whose capture cannot show the path's delay and no ``rtt_s`` (one line why).
    """
    cap, connections = analyze_capture(capture)
    if not connections:
        raise ValueError(f"{capture}: no TCP connection carrying data")
    conn = _busiest(connections)
    own = conn.sender_rtt is not None and len(conn.sender_rtt["rtt_s"])
    rtt = conn.sender_rtt["rtt_s"] if own else conn.rtt["rtt_s"]
    rtt_method = (conn.sender_rtt_method if own else conn.rtt_method) or ""
    if len(rtt) == 0 or len(conn.seq["seq"]) == 0:
        raise ValueError(f"{capture}: connection {conn.name} has no RTT samples or no data")
    rtt, rtt_method = _path_rtt(capture, conn, rtt, rtt_method, bool(own), rtt_s)
    goodput, goodput_basis = _goodput_bound(conn, rtt)
    rate_fit = fitted_rate(conn, goodput, goodput_basis)
    rate = rate_fit.rate_bps
    beta = ci = verdict = None
    if drops is not None:
        from farlink.calldrops.fit import fit_drop_log
        from farlink.calldrops.log import read_drop_log

        fit = fit_drop_log(read_drop_log(drops))
        beta, ci, verdict = fit.beta_per_s, (fit.ci_low_per_s, fit.ci_high_per_s), fit.verdict
    lens = conn.seq["len_bytes"]
    largest = int(lens.max())
    mss = conn.mss_bytes or largest
    loss = estimate_loss(conn)
    # The queue admits and drains whole segments: a super-segment, captured with offloads on,
    # is one packet there.
    packet_s = 8 * (largest + int(np.ceil(largest / mss)) * header_bytes(conn)) / rate
    before = queue_overflows(conn, loss.holes_before, packet_s)
    after = queue_overflows_after_tap(conn, loss.lost_after_copies, packet_s)
    queue_bytes, queue_basis = _queue_bytes(rtt, rate, mss + IP_TCP_HEADER_BYTES)
    full_queue = _full_queue_bytes(before, after, packet_s, rate)
    if full_queue is not None:
        queue_bytes, queue_basis = full_queue
    # Bursts above a rate that is a goodput (a lower bound) prove no bucket.
    bucket = token_bucket(conn, rate, mss + header_bytes(conn)) if rate_fit.from_acks else None
    return PathFit(
        connection=conn.name,
        loss=loss,
        rtt_s={
            "min": float(rtt.min()),
            "median": float(np.median(rtt)),
            "mean": float(rtt.mean()),
            "p95": float(np.percentile(rtt, 95)),
            "std": float(rtt.std()),
        },
        rate_bps=rate,
        delay_s=_least_rtt(rtt, conn.tap, rtt_s) / 2,
        mss_bytes=mss,
        beta_per_s=beta,
        beta_ci_per_s=ci,
        drop_fit_verdict=verdict,
        rtt_method=rtt_method,
        warnings=(
            *cap.warnings,
            *([rate_fit.warning] if rate_fit.warning else []),
            *_tap_warnings(capture, conn, rtt_s),
        ),
        min_rto_s=_shortest_timeout_wait(conn),
        queue_bytes=queue_bytes,
        queue_basis=queue_basis,
        handshake=conn.handshake,
        segments_per_ack=segments_per_ack(conn.ack["ack"], mss),
        largest_segment_bytes=largest,
        mss_segments=int(np.ceil(lens / mss).sum()),
        rate_fit=rate_fit,
        overflows=before,
        overflows_after=after,
        bucket=bucket,
        tap=conn.tap,
        timeouts=len(conn.timeouts_s) + conn.timeouts_unseen,
    )


def _goodput_bound(conn: Connection, rtt_s: np.ndarray) -> tuple[float, str]:
    """The goodput a bottleneck must at least carry, and what it is: the largest over a
    complete window of the shortest length in GOODPUT_WINDOWS_S that spans
    :data:`GOODPUT_WINDOW_RTTS` of the connection's median RTT (a path that holds data and hands
    it on in bursts, a bundle's reassembly after a call drop, delivers a window's worth within
    one RTT: over a 10 s window behind a 19 s RTT, 2.5 times its rate); the mean goodput of a
    connection shorter than that window. ``rtt_s``: the path's RTT samples."""
    span_s = GOODPUT_WINDOW_RTTS * float(np.median(rtt_s))
    for window_s in GOODPUT_WINDOWS_S:
        windows = conn.goodput.get(window_s, np.array([]))
        if window_s >= span_s and len(windows):
            return float(windows.max()), f"largest goodput over a {window_s:g} s window"
        if window_s >= span_s:
            break
    return (
        8 * conn.delivered_bytes / conn.duration_s,
        "mean goodput (the connection lasted under one goodput window)",
    )


def _path_rtt(
    capture: Path,
    conn: Connection,
    rtt: np.ndarray,
    method: str,
    own: bool,
    given_s: float | None,
) -> tuple[np.ndarray, str]:
    """The path's RTT samples (module notes, "Where the tap is"): the capture's where the tap is
    at the sender; with the round trip between the tap and the sender added where it is not;
    shifted to the user's least RTT with ``given_s``."""
    if given_s is not None:
        return rtt - rtt.min() + given_s, f"{method}, its least set to --rtt {given_s:g} s"
    tap = conn.tap
    if tap is None or tap.location in (None, "sender"):
        return rtt, method
    if tap.location == "receiver" and not own:
        raise ValueError(
            f"{capture}: the tap is at the receiver (the data's round trip from it "
            f"{_ms(tap.downstream_rtt_s)}, the sender's {_ms(tap.upstream_rtt_s)}) and the "
            "sender does not stamp its segments (no TCP timestamps), so the queues on the "
            "path are not in the capture; give the path's least RTT with --rtt"
        )
    up = tap.upstream_rtt_s or 0.0
    return (
        rtt + up,
        f"{method} + {up * 1e3:.4g} ms from the tap to the sender and back ({tap.upstream_basis})",
    )


def _least_rtt(rtt: np.ndarray, tap: TapPosition | None, given_s: float | None) -> float:
    """The path's least RTT, of which the fitted one-way delay is half: the least RTT sample,
    or the handshake's round trip where that is less (a flow that never drained the queue it
    built, as over a slow bundle, has no sample without queueing; the fitted link adds a data
    packet's time at its rate itself). The user's ``--rtt`` where given."""
    if given_s is not None or tap is None or tap.handshake_rtt_s is None:
        return float(rtt.min())
    return min(float(rtt.min()), tap.handshake_rtt_s)


def _ms(value_s: float | None) -> str:
    return "unknown" if value_s is None else f"{value_s * 1e3:.3g} ms"


def _tap_warnings(capture: Path, conn: Connection, given_s: float | None) -> list[str]:
    tap = conn.tap
    if given_s is not None or tap is None:
        return []
    unknown_far_side = tap.location is None and tap.upstream_rtt_s is None
    down = tap.downstream_rtt_s
    if unknown_far_side and down is not None and down <= HOST_TURNAROUND_S:
        # No handshake and no timestamps to place the tap, and a round trip from it no longer
        # than a host's own turn-around: the tap may be at the receiver.
        return [
            f"{capture}: the least RTT from the tap is {down * 1e3:.3g} ms, a host's own "
            "turn-around, and neither a handshake nor TCP timestamps show where the tap was: "
            "if at the receiver, the fitted delay is the last hop's; give --rtt"
        ]
    if tap.location == "mid-path" and conn.seg_wait_s is None:
        return [
            f"{capture}: the tap is mid-path and the sender does not stamp its segments: the "
            "queues between the sender and the tap are not in the fitted RTT"
        ]
    return []


def _full_queue_bytes(
    before: QueueOverflows, after: QueueOverflows, packet_s: float, rate_bps: float
) -> tuple[int, str] | None:
    """Where a queue overflowed, its size is what it held when full: its wait then plus the
    arriving packet it admitted last (module notes); the queue with more overflows, None
    where neither overflowed."""
    full = max((before, after), key=lambda q: q.overflows)
    if not full.overflows or full.full_wait_s is None:
        return None
    side = "before" if full.where == "before" else "after"
    level = "wait before the tap" if side == "before" else "tap-to-tap RTT above its least"
    return round((full.full_wait_s + packet_s) * rate_bps / 8), (
        f"the queue {side} the tap when full, where it overflowed {full.overflows} times "
        f"({level} at its ceiling, plus one packet, times the rate)"
    )


def _queue_bytes(rtt_s: np.ndarray, rate_bps: float, packet_bytes: int) -> tuple[int, str]:
    """The fitted link's queue and what set it (module notes): the standing queue the RTT
    showed, the bandwidth-delay product or the initial window, whichever is largest."""
    standing = (float(np.percentile(rtt_s, 95)) - float(rtt_s.min())) * rate_bps / 8
    bdp = float(rtt_s.min()) * rate_bps / 8
    window = 10 * packet_bytes  # farlink's and Linux's initial window, in packets
    candidates = {
        "standing queue (95th percentile of the RTT above its minimum, times the rate)": standing,
        "bandwidth-delay product (no larger standing queue seen)": bdp,
        "initial window (no larger standing queue seen)": window,
    }
    basis, size = max(candidates.items(), key=lambda kv: kv[1])
    return max(packet_bytes, round(size)), basis


def _shortest_timeout_wait(conn: Connection) -> float | None:
    """The sender's least RTO as the capture shows it: the shortest wait from the timer's
    restart to a timeout (:mod:`farlink.captures.rto`); None when it timed out never."""
    waits = conn.timeout_waits_s
    return float(waits.min()) if waits is not None and len(waits) else None


def checked_scenario_toml(
    fit: PathFit, name: str, duration: str = "600s", *, tcp: str | None = None, profile: str = "rfc"
) -> str:
    """:func:`scenario_toml`, validated by the core first (module notes).

    Raises:
        ValueError: the core refuses the scenario; the message names the field and the capture's
            figure it came from.
    """
    import tomllib

    from farlink import _core

    text = scenario_toml(fit, name, duration, tcp=tcp, profile=profile)
    doc = tomllib.loads(text)
    doc["duration"] = "1ms"
    doc.pop("trace", None)
    try:
        _core.run_scenario(json.dumps(doc))
    except _core.ScenarioError as err:
        if tcp is not None and err.path == "flows[0].tcp.cc":
            raise ValueError(f"tcp: {err.message}") from None
        raise ValueError(
            f"{fit.connection}: the fitted path is not a valid scenario ({err}); the capture's "
            f"figures: rate {fit.rate_bps:g} bit/s, one-way delay {fit.delay_s:g} s, loss "
            f"{fit.scenario_loss_p:g}, queue {fit.queue_bytes} bytes"
        ) from None
    return text


def _bucket_lines(bucket: TokenBucketFit | None) -> list[str]:
    """The link's token bucket, where the capture shows one (farlink.captures.bucket)."""
    if bucket is None or bucket.burst_bytes is None:
        return []
    lines = [
        f"burst_bytes = {bucket.burst_bytes}       # token bucket: the largest burst above the "
        f"rate, {bucket.run_samples} ACKs (a lower bound of its depth)"
    ]
    if bucket.peak_rate_bps is not None:
        lines.append(
            f"peak_rate_bps = {round(bucket.peak_rate_bps)}    # that burst's own rate (a lower "
            "bound of the device's)"
        )
    return lines


def scenario_toml(
    fit: PathFit, name: str, duration: str = "600s", *, tcp: str | None = None, profile: str = "rfc"
) -> str:
    """A scenario file for the fitted path (valid input of ``farlink simulate``); ``tcp``: the
    flow's congestion controller, ``profile``: its TCP profile, one of :data:`PROFILES` (module
    notes).
    """
    tcp_table = tcp_lines(fit, profile, tcp)
    rtt = fit.rtt_s
    lines = [
        f"# Fitted by `farlink fit` from connection {fit.connection}.",
        f"# Loss: {fit.loss.lost_after_tap} copies lost after the tap in "
        f"{fit.loss.data_segments} data segments seen there ({fit.loss_rate:.6g}), "
        f"{fit.loss.lost_before_tap} before it ({fit.loss.loss_rate_before_tap:.6g}); "
        f"{fit.loss_by_cause()['queue_overflows']} of them a full queue's overflows, left to "
        "the link's queue, the others its random loss. Every retransmission counted, the upper "
        f"bound would be {fit.loss_rate_upper_bound:.6g}.",
        f"# RTT ({fit.rtt_method}, s): min {rtt['min']:.6g}, median {rtt['median']:.6g}, "
        f"mean {rtt['mean']:.6g}, 95th percentile {rtt['p95']:.6g}, sd {rtt['std']:.6g}.",
    ]
    if fit.beta_per_s:
        lines.append(
            f"# Call drops: beta = 1/{1 / (fit.beta_per_s * 60):.1f}min per member "
            f"({fit.drop_fit_verdict}); use it as links[0].bundle.call_drop_rate for a bundle."
        )
    lines += [
        f'name = "{name}"',
        'description = "path fitted from a capture by farlink fit"',
        f'duration = "{duration}"',
        'nodes = ["A", "B"]',
        'lossy_link = "A-B"',
        "",
        "[[links]]",
        'name = "A-B"',
        'a = "A"',
        'b = "B"',
        f"rate_bps = {round(fit.rate_bps)}          # {fit.rate_basis}",
        f"delay_s = {fit.delay_s:.6f}        # half the least RTT (the handshake's where less)",
        f"queue_bytes = {fit.queue_bytes}       # {fit.queue_basis}",
        *_bucket_lines(fit.bucket),
        "",
        "[links.fwd.loss]",
        'model = "bernoulli"',
        f"p = {fit.scenario_loss_p:.6g}              # random loss before and after the tap "
        "(farlink.captures.loss, less farlink.captures.overflow's)",
        "",
        "[[flows]]",
        'name = "fitted"',
        'from = "A"',
        'to = "B"',
        "",
        "[flows.tcp]",
        *tcp_table,
        "",
        "[flows.app]",
        'kind = "unbounded"',
        "",
        "[extra.fit]",
        f"rtt_median_s = {rtt['median']:.6f}",
        f"rtt_p95_s = {rtt['p95']:.6f}",
        f"loss_rate_upper_bound = {fit.loss_rate_upper_bound:.6g}",
        f"loss_rate_after_tap = {fit.loss_rate:.6g}",
        f"loss_rate_before_tap = {fit.loss.loss_rate_before_tap:.6g}",
    ]
    if fit.beta_per_s:
        lines.append(f"beta_per_s = {fit.beta_per_s:.6g}")
    return "\n".join(lines) + "\n"
