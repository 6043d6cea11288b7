"""The model column of a sweep: the full PFTK model for every point, from the resolved scenario.

For a single-flow scenario with a ``lossy_link``, every row carries the prediction of the full
PFTK model (``model_normalized_goodput``), evaluated for all points in one vectorised call; its
inputs are the core's resolved scenario (:func:`farlink.scenario.resolve`), never re-derived.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from farlink.scenario import resolve

__all__ = ["PftkInputs", "model_normalized_goodput", "pftk_inputs", "pftk_inputs_resolved"]


@dataclass(frozen=True)
class PftkInputs:
    """What the full PFTK model needs for one point, read from its scenario document."""

    p: float
    rtt_s: float
    t0_s: float
    b: float
    wmax_pkts: float
    payload_bytes: float
    wire_bytes: float
    bottleneck_bps: float


def pftk_inputs(doc: Mapping[str, Any]) -> PftkInputs | None:
    """The model's inputs for a single-flow scenario with a ``lossy_link``, else None.

    Every input is read from the core's resolved scenario (:func:`farlink.scenario.resolve`),
    never derived here: p is the lossy link direction's ``packet_loss_rate`` (the mean rate of
    its loss model per packet), the RTT the flow's ``base_rtt_s`` (propagation both ways, one
    full-sized data packet on every data hop and its ACK on every ACK hop), T0 the flow's
    ``min_rto_s``, b 2 with delayed ACKs and 1 without, W_max the receive buffer in segments of
    payload (``payload_bytes``: the MSS less the timestamps option), and the bottleneck the
    smallest rate on the data path. The model applies to plain links only: a route through a
    bundle (call drops, ARQ) or a radio hop gives None, and so does a scenario the core refuses
    (its run will say why).
    """
    flows = doc.get("flows") or []
    if len(flows) != 1 or not doc.get("lossy_link"):
        return None
    try:
        resolved = resolve(dict(doc))
    except ValueError:  # the core's ScenarioError
        return None
    return pftk_inputs_resolved(resolved)


def pftk_inputs_resolved(resolved: Mapping[str, Any]) -> PftkInputs | None:
    """:func:`pftk_inputs` of a scenario already resolved by the core: the inputs
    ``farlink predict`` reads (:func:`farlink.predict.path_inputs`, p combining every lossy hop
    of the data path), so that a sweep's model column and ``predict`` agree on one scenario."""
    from farlink.predict import path_inputs

    lossy = resolved.get("lossy_link")
    if len(resolved["flows"]) != 1 or lossy is None:
        return None
    flow = resolved["flows"][0]
    links = resolved["links"]
    if any(links[hop["index"]]["link_type"] != "link" for hop in flow["route"]["data"]):
        return None
    path = path_inputs(resolved)
    return PftkInputs(
        p=path.p,
        rtt_s=path.rtt_s,
        t0_s=path.t0_s,
        b=float(path.b),
        wmax_pkts=path.wmax_bytes / path.mss_bytes,
        payload_bytes=path.mss_bytes,
        wire_bytes=path.wire_bytes,
        bottleneck_bps=flow["bottleneck_bps"],
    )


def model_normalized_goodput(docs: Sequence[Mapping[str, Any]]) -> np.ndarray:
    """The full PFTK model's normalised goodput for each scenario; NaN where it does not apply.

    For every point in ONE vectorised call of :func:`farlink.models.pftk_full_throughput`:
    B = PFTK(p, RTT, T0, b, W_max) segments/s (B = W_max/RTT when p = 0), and

        model_normalized_goodput = min(B s, C s / (s + h)) / C

    with s the payload bytes per segment, h the header bytes (s + h = MSS + 40 on the wire)
    and C the bottleneck rate in bytes/s: the simulator's ``normalized_goodput`` (payload
    bit/s over the bottleneck's bit rate), capped at the payload share of a full link.
    """
    from farlink.models import pftk_full_throughput

    inputs = [pftk_inputs(doc) for doc in docs]
    usable = [i for i, x in enumerate(inputs) if x is not None and 0 <= x.p < 1]
    out = np.full(len(docs), np.nan)
    if not usable:
        return out
    cols = {
        name: np.array([getattr(inputs[i], name) for i in usable], dtype=np.float64)
        for name in PftkInputs.__dataclass_fields__
    }
    lossless = cols["p"] <= 0
    rate = pftk_full_throughput(
        np.where(lossless, 0.5, cols["p"]),
        cols["rtt_s"],
        cols["t0_s"],
        cols["b"],
        cols["wmax_pkts"],
    )
    rate = np.where(lossless, cols["wmax_pkts"] / cols["rtt_s"], rate)
    capacity = cols["bottleneck_bps"] / 8
    goodput = np.minimum(
        rate * cols["payload_bytes"], capacity * cols["payload_bytes"] / cols["wire_bytes"]
    )
    out[usable] = goodput / capacity
    return out
