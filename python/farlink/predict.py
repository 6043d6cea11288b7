"""The closed-form models' inputs from a scenario, and the path's capacity that bounds them.

``farlink predict MODEL [SCENARIO]`` reads its parameters from the scenario as the core resolves
it (:func:`farlink.scenario.resolve`), so that a prediction and a simulation of one scenario
start from the same numbers; options given on the command line replace them. Every prediction is
then bounded by the path's capacity in payload terms: no model may deliver more payload than
the bottleneck carries.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "CALLDROP_DEFAULTS",
    "Bounded",
    "PathInputs",
    "bound",
    "bounded_transfer_time_s",
    "calldrop_of_path",
    "path_capacity",
    "path_inputs",
]

CALLDROP_DEFAULTS: dict[str, str] = {
    "links": "8",
    "link_rate": "2400bps",
    "rtt": "19s",
    "loss": "5e-4",
    "drop_rate": "1/50min",
    "t0": "60s",
    "mss": "1448",
    "wmax": "47.9KB",
    "b": "2",
}
"""``predict calldrop`` without a scenario: the Greenland-Kansas bundle of seed 000 Table 6.1
(eight 2.4 kbit/s Iridium modems). RTT, W_max and T0 are that bundle's, measured or fitted
with eight members; they do not carry over to another number of modems."""

CALLDROP_BUNDLE_ONLY = ("rtt", "wmax", "t0")
"""Defaults of :data:`CALLDROP_DEFAULTS` that belong to the eight-modem bundle alone."""

WIRE_OVERHEAD_BYTES = 52
"""Bytes on the wire beyond a segment's payload without a scenario: IPv4 and TCP headers (40)
and the timestamps option (12), as with the scenario default MSS 1460 and payload 1448."""


@dataclass(frozen=True)
class PathInputs:
    """What the models need about a scenario's first flow and its path."""

    rtt_s: float
    """The flow's base RTT (``base_rtt_s``: propagation, one segment out, its ACK back)."""
    p: float
    """Packet loss over the data path after link-layer ARQ: 1 - prod(1 - packet_loss_rate)."""
    t0_s: float
    """The flow's minimum RTO, the timeout the models' T0 stands for."""
    mss_bytes: float
    """Payload of a full segment (the MSS less the timestamps option)."""
    wire_bytes: float
    """A full data packet on the wire."""
    wmax_bytes: float
    """The receive buffer."""
    b: int
    """Segments acknowledged per ACK: 2 with delayed ACKs."""
    n_links: int
    """Members of the bottleneck bundle, 1 for a plain link."""
    link_rate_bps: float
    """Rate of one member of the bottleneck (the bottleneck's rate for a plain link)."""
    beta_per_s: float
    """Mean call-drop rate of a bottleneck member, per second (0 off a bundle)."""
    capacity_bps: float
    """The bottleneck's rate in payload terms: its bit rate times payload / wire bytes."""
    bottleneck: str
    """The bottleneck link's name."""
    size_bytes: float | None
    """The flow's bulk size, if it is a bulk transfer."""


def path_inputs(resolved: Mapping[str, Any]) -> PathInputs:
    """The models' inputs for the first flow of a resolved scenario.

    Raises ValueError if the scenario has no flow.
    """
    flows = resolved["flows"]
    if not flows:
        raise ValueError("the scenario has no flow to predict")
    flow = flows[0]
    tcp = flow["tcp"]
    links = resolved["links"]
    hop_losses = [
        q
        for hop in flow["route"]["data"]
        if (q := links[hop["index"]][hop["direction"]]["packet_loss_rate"]) > 0
    ]
    # One lossy hop (the usual case) keeps its rate exactly; several combine independently.
    p = hop_losses[0] if len(hop_losses) == 1 else 1.0 - math.prod(1.0 - q for q in hop_losses)
    bottleneck = next(link for link in links if link["name"] == flow["bottleneck_link"])
    bundle = bottleneck.get("bundle")
    members = bundle["members"] if bundle else []
    app = flow["app"]
    return PathInputs(
        rtt_s=flow["base_rtt_s"],
        p=p,
        t0_s=tcp["min_rto_s"],
        mss_bytes=tcp["payload_bytes"],
        wire_bytes=tcp["data_packet_bytes"],
        wmax_bytes=tcp["receive_buffer_bytes"],
        b=2 if tcp["delayed_ack"] else 1,
        n_links=len(members) or 1,
        link_rate_bps=min(m["rate_bps"] for m in members) if members else flow["bottleneck_bps"],
        beta_per_s=sum(m["call_drop_rate_per_s"] for m in members) / len(members)
        if members
        else 0.0,
        capacity_bps=flow["bottleneck_bps"] * tcp["payload_bytes"] / tcp["data_packet_bytes"],
        bottleneck=bottleneck["name"],
        size_bytes=app.get("size_bytes") if app["kind"] == "bulk" else None,
    )


@dataclass(frozen=True)
class Bounded:
    """A model's throughput beside the path's capacity."""

    throughput_bps: float
    """min(model, capacity)."""
    model_throughput_bps: float
    capacity_bps: float | None
    """None when the capacity is unknown (no scenario and no link rate)."""
    binds: bool
    """The capacity, not the model, gives ``throughput_bps``."""


def bound(model_bps: float, capacity_bps: float | None) -> Bounded:
    """``model_bps`` bounded by ``capacity_bps`` (payload bit/s)."""
    model_bps = float(model_bps)
    if capacity_bps is None or not math.isfinite(capacity_bps):
        return Bounded(model_bps, model_bps, None, False)
    binds = model_bps > capacity_bps
    return Bounded(min(model_bps, capacity_bps), model_bps, float(capacity_bps), binds)


def calldrop_of_path(path: PathInputs, size_bytes: float) -> Any:
    """Seed 000's eq. 36 (:func:`farlink.models.calldrop_prediction`) for a file of
    ``size_bytes`` over the path a scenario resolves to, every input from ``path``."""
    from farlink.models import calldrop_prediction

    return calldrop_prediction(
        size_bytes=size_bytes,
        n_links=path.n_links,
        rtt_s=path.rtt_s,
        p=path.p,
        beta_per_s=path.beta_per_s,
        t0_s=path.t0_s,
        mss_bytes=path.mss_bytes,
        wmax_bytes=path.wmax_bytes,
        b=path.b,
    )


def bounded_transfer_time_s(model_time_s: float, bounded: Bounded) -> float:
    """A model's transfer time bounded as its rate is: the model's own where the capacity does
    not bind, else stretched by the bound (model rate over capacity), so that the file is
    counted as the model counts it (eq. 36 counts whole segments, ⌈f_s / MSS⌉)."""
    if not bounded.binds:
        return model_time_s
    return model_time_s * bounded.model_throughput_bps / bounded.throughput_bps


def path_capacity(
    path: PathInputs | None,
    n_links: float | None,
    link_rate_bps: float | None,
    mss_bytes: float,
) -> tuple[float | None, str]:
    """The path's capacity in payload bit/s and what gives it, or None when nothing does.

    The scenario's bottleneck, unless a link rate or another number of links is given: then
    ``n_links`` links of ``link_rate_bps`` (the scenario's member rate when not given), each
    carrying ``mss_bytes`` of payload in ``mss_bytes + WIRE_OVERHEAD_BYTES`` on the wire.
    """
    if link_rate_bps is None and path is not None and n_links in (None, path.n_links):
        return path.capacity_bps, f"bottleneck {path.bottleneck}"
    rate = link_rate_bps
    if rate is None and path is not None:
        rate = path.link_rate_bps
    if rate is None:
        return None, "unknown (give --link-rate or a scenario)"
    n = n_links if n_links is not None else 1
    share = mss_bytes / (mss_bytes + WIRE_OVERHEAD_BYTES)
    return n * rate * share, f"{n:g} x {rate:g} bit/s"
