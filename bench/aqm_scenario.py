"""The AQM bottleneck of crates/farlink-core/tests/integration/aqm.rs as a farlink scenario
document, and what
bench/ns3/aqm.py measures of ns-3, measured of a farlink run the same way.

N senders S0.. each on a 1 Gbit/s, 1 ms access link to R; R--D 10 Mbit/s, 50 ms, a 1000-packet
queue running `discipline` (its parameters farlink's defaults); unbounded CUBIC flows with a
1448-byte MSS (1488-byte IP packets with timestamps) and 8 MiB buffers, ECN off or on.
"""

from __future__ import annotations

from typing import Any

import numpy as np

WARM_S = 10.0  # as tests/aqm.rs and bench/ns3/aqm.py
BOTTLENECK_RATE_BPS = 10e6
# the drops trace's cause codes (crates/farlink-core/src/links/link.rs DROP_CAUSE_NAMES)
DROP_CAUSE_QUEUE_OVERFLOW, DROP_CAUSE_AQM = 0, 5


def scenario(
    discipline: str,
    flows: int,
    ecn: bool,
    *,
    duration_s: float = 40.0,
    seed: int = 1,
    stagger_s: float = 0.0,
) -> dict[str, Any]:
    """The cell's scenario; `stagger_s` (a diagnosis, as bench/ns3/aqm.py's --stagger-ms)
    starts flow i at i times it instead of every flow at 0."""
    nodes = ["R", "D"]
    links: list[dict[str, Any]] = [
        {
            "name": "bottleneck",
            "a": "R",
            "b": "D",
            "rate": "10Mbps",
            "delay": "50ms",
            "queue_pkts": 1000,
            "queue_discipline": discipline,
        }
    ]
    tcp = {"cc": "cubic", "mss_bytes": 1448, "receive_buffer": "8MiB", "ecn": ecn}
    flow_list = []
    for i in range(flows):
        s = f"S{i}"
        nodes.append(s)
        links.append({"a": s, "b": "R", "rate": "1Gbps", "delay": "1ms", "queue_pkts": 1000})
        flow = {
            "name": f"f{i}",
            "from": s,
            "to": "D",
            "tcp": dict(tcp),
            "app": {"kind": "unbounded"},
        }
        if stagger_s and i:
            flow["start"] = f"{i * stagger_s * 1e3:g}ms"
        flow_list.append(flow)
    return {
        "name": f"aqm-{discipline}-{flows}-{'ecn' if ecn else 'noecn'}",
        "duration": f"{duration_s:g}s",
        "seed": seed,
        "nodes": nodes,
        "links": links,
        "flows": flow_list,
        "trace": {"goodput": True, "queue_delay": True, "drops": True, "goodput_interval": "100ms"},
    }


def measure(result: Any, duration_s: float) -> dict[str, Any]:
    """Goodput from WARM_S to the end, the bottleneck's sojourn p50/p95 after WARM_S (its
    `queue_delay` rows, link 0 forward), and the bottleneck's drops and CE marks."""
    warm_ns = int(WARM_S * 1e9)
    g = result.trace("goodput")
    per_flow = []
    for f in np.unique(g["flow"]):
        mine = g["flow"] == f
        t, b = g["time_ns"][mine], g["delivered_bytes"][mine].astype(np.int64)
        start = int(np.searchsorted(t, warm_ns))
        per_flow.append(float(b[-1] - b[start]) * 8 / ((int(t[-1]) - int(t[start])) / 1e9))
    q = result.trace("queue_delay")
    mine = (q["link"] == 0) & q["forward"] & (q["time_ns"] >= warm_ns)
    sojourn = np.sort(q["sojourn_ns"][mine])

    def pick(f: float) -> float:
        # the index tests/aqm.rs's pick and bench/ns3/aqm.py's Percentile take
        return float(sojourn[int((len(sojourn) - 1) * f)]) / 1e6

    fwd = result.summary["links"][0]["fwd"]
    drops = fwd["drops"]
    d = result.trace("drops")
    queue_causes = np.isin(d["cause"], [DROP_CAUSE_QUEUE_OVERFLOW, DROP_CAUSE_AQM])
    steady = (d["link"] == 0) & d["forward"] & queue_causes & (d["time_ns"] >= warm_ns)
    return {
        "goodput_bps": sum(per_flow),
        "goodput_flows_bps": per_flow,
        "normalized_goodput": sum(per_flow) / BOTTLENECK_RATE_BPS,
        "queue_delay_ms": {"p50": pick(0.5), "p95": pick(0.95), "samples": len(sojourn)},
        "dropped": int(drops.get("aqm", 0) + drops.get("queue_overflow", 0)),
        "dropped_after_warm": int(steady.sum()),
        "dropped_by_cause": {k: int(v) for k, v in drops.items() if v},
        "marked": int(fwd.get("ce_marked", 0)),
        "events": int(result.summary["events"]),
        "wall_time_s": float(result.summary["wall_time_s"]),
    }
