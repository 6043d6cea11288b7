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
  (:mod:`farlink.captures.overflow`), since the fitted scenario's own queue makes those, but
  overflows after the tap stay in it and that queue adds them again;
* the RTT distribution (minimum, median, mean, 95th percentile, standard deviation): the
  sender's own RTT where its timestamps show it (the queue before the tap included), else the
  tap-to-tap samples (:mod:`farlink.captures.rtt`);
* the bottleneck rate from the spacing of the ACKs where the bottleneck was busy, the mode of
  their delivery rates (:mod:`farlink.captures.dispersion`), where that mode stands on enough
  samples and is not below the goodput by more than its width; else, with a warning, the
  largest goodput over a complete 10 s window (the mean goodput of a shorter connection), a
  lower bound that is close only when the flow filled the path;
* a token bucket in front of the bottleneck, where the ACKs show bursts delivered faster than
  the fitted rate (:mod:`farlink.captures.bucket`): the link gets ``burst_bytes``, the largest
  burst's excess over the rate (a lower bound of the bucket's depth), and ``peak_rate_bps``, the
  burst's own rate. Only with the rate from the ACKs' dispersion: a rate that is a goodput is a
  lower bound, and bursts above it prove nothing;
* the one-way delay as half the minimum RTT;
* the bottleneck queue as the largest standing queue the RTT showed most of the time: the 95th
  percentile of the RTT above its minimum, times the rate (the sender's own RTT sees the queue
  before the tap, which is where a bottleneck in front of the tap keeps it). A lower bound: a
  queue that never filled shows less than its size. It is never set below the path's
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

from farlink.captures.analysis import Connection, analyze_capture
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
from farlink.captures.overflow import QueueOverflows, queue_overflows

__all__ = [
    "LOSS_RATE_MEANINGS",
    "PROFILES",
    "PathFit",
    "checked_scenario_toml",
    "fit_path",
    "scenario_toml",
]

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
    # A token bucket in front of the bottleneck (farlink.captures.bucket).
    bucket: TokenBucketFit | None = None

    @property
    def rate_basis(self) -> str:
        return self.rate_fit.basis if self.rate_fit else "largest goodput over a 10 s window"

    @property
    def loss_rate(self) -> float:
        """Copies lost after the tap / data segments seen there."""
        return self.loss.loss_rate_after_tap

    @property
    def random_loss(self) -> LossEstimate:
        """The loss estimate less the holes before the tap that a full queue made."""
        full = self.overflows.overflows if self.overflows else 0
        if not full or self.loss.lost_before_gaps is None:
            return self.loss
        return replace(self.loss, lost_before_gaps=self.loss.lost_before_gaps - full)

    @property
    def scenario_loss_p(self) -> float:
        """The Bernoulli ``p`` of the fitted one-link path: the copies lost at random before
        and after the tap per packet of the fitted MSS (module notes)."""
        loss = self.random_loss
        if self.mss_segments <= loss.data_segments:
            return loss.loss_rate_path
        return replace(loss, data_segments=self.mss_segments).loss_rate_path

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


def fit_path(capture: Path, drops: Path | None = None) -> PathFit:
    """Estimate the path of ``capture``'s busiest connection (see the module notes)."""
    cap, connections = analyze_capture(capture)
    if not connections:
        raise ValueError(f"{capture}: no TCP connection carrying data")
    conn = _busiest(connections)
    own = conn.sender_rtt is not None and len(conn.sender_rtt["rtt_s"])
    rtt = conn.sender_rtt["rtt_s"] if own else conn.rtt["rtt_s"]
    rtt_method = conn.sender_rtt_method if own else conn.rtt_method
    if len(rtt) == 0 or len(conn.seq["seq"]) == 0:
        raise ValueError(f"{capture}: connection {conn.name} has no RTT samples or no data")
    windows = conn.goodput.get(10.0, np.array([]))
    if len(windows):
        goodput, goodput_basis = float(windows.max()), "largest goodput over a 10 s window"
    else:
        goodput = 8 * conn.delivered_bytes / conn.duration_s
        goodput_basis = "mean goodput (the connection lasted under 10 s)"
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
    queue_bytes, queue_basis = _queue_bytes(rtt, rate, mss + IP_TCP_HEADER_BYTES)
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
        delay_s=float(rtt.min()) / 2,
        mss_bytes=mss,
        beta_per_s=beta,
        beta_ci_per_s=ci,
        drop_fit_verdict=verdict,
        rtt_method=rtt_method or "",
        warnings=(*cap.warnings, *([rate_fit.warning] if rate_fit.warning else [])),
        min_rto_s=_shortest_timeout_wait(conn),
        queue_bytes=queue_bytes,
        queue_basis=queue_basis,
        handshake=conn.handshake,
        segments_per_ack=segments_per_ack(conn.ack["ack"], mss),
        largest_segment_bytes=largest,
        mss_segments=int(np.ceil(lens / mss).sum()),
        rate_fit=rate_fit,
        overflows=queue_overflows(conn, loss.holes_before, packet_s),
        bucket=bucket,
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
        f"{fit.loss.lost_before_tap} before it ({fit.loss.loss_rate_before_tap:.6g}); the link "
        f"below gets both. Every retransmission counted, the upper bound would be "
        f"{fit.loss_rate_upper_bound:.6g}.",
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
        f"delay_s = {fit.delay_s:.6f}        # half the minimum RTT",
        f"queue_bytes = {fit.queue_bytes}       # {fit.queue_basis}",
        *_bucket_lines(fit.bucket),
        "",
        "[links.fwd.loss]",
        'model = "bernoulli"',
        f"p = {fit.scenario_loss_p:.6g}              # loss before and after the tap "
        "(farlink.captures.loss)",
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
