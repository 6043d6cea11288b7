"""The same TCP through the emulator and through a real kernel bottleneck (issue 11).

Both paths have no added delay, one bottleneck of rate R with a drop-tail queue, and optional
random loss of data packets after the bottleneck; the kernel's TCP crosses each, and what it saw
(goodput, retransmissions, timeouts, TCP_INFO sampled every 10 ms) is summarised alike.

The mapping, stated once:

- **Rate.** farlink's link serialises the IP packet; tbf on a veth charges the Ethernet frame,
  14 bytes more. The tbf's rate is R x (1500 + 14) / 1500, so a full-sized data packet takes
  the same time on both (the bottleneck carries data only: ACKs take the other direction).
- **Queue.** farlink's ``queue_pkts = N`` counts packets waiting besides the one being
  serialised; tbf's ``limit`` counts the bytes of every packet it holds, the one waiting for
  its tokens included. Hence ``limit = (N + 1) x 1514`` bytes (offloads off: every packet is
  at most one MTU). The bucket (``burst``) is two frames: tbf needs at least one, and after an
  idle spell it lets one packet go early; a saturated bottleneck has no idle spell.
- **Loss.** farlink's Bernoulli loss judges each packet at the far end of the link, after the
  queue; iptables ``statistic --mode random`` drops data segments of the flow in R's INPUT
  chain, after the tbf, with the same probability.
- **Queue delay** is srtt minus the smallest srtt sampled in the run (the handshake's
  included), on both paths alike (the emulator's trace has no min_rtt; the kernel path's
  tcpi_min_rtt is kept beside it).
"""

from __future__ import annotations

import statistics
from typing import Any

import numpy as np

from farlink.emulate import emulate
from farlink.testbed import Case, Net, timed_transfer

MTU_BYTES = 1500
ETHERNET_BYTES = 14
SAMPLE_INTERVAL_S = 0.01


def scenario(rate_bps: float, queue_pkts: int, cc: str, duration_s: float) -> dict[str, Any]:
    """One link S-D of ``rate_bps``, no delay, a drop-tail queue of ``queue_pkts``."""
    return {
        "name": f"tbf-compare-{cc}-{rate_bps / 1e6:g}mbps",
        "seed": 1,
        "duration": f"{duration_s}s",
        "nodes": ["S", "D"],
        "lossy_link": "S-D",  # --loss applies to the data's direction
        "links": [
            {"name": "S-D", "a": "S", "b": "D", "rate": f"{rate_bps:g}bps", "delay": "0ms",
             "queue_pkts": queue_pkts},
        ],
        "flows": [
            {"name": "bulk", "from": "S", "to": "D",
             "tcp": {"mss_bytes": MTU_BYTES - 40, "cc": cc}, "app": {"kind": "unbounded"}},
        ],
    }  # fmt: skip


def _rtt_summary(time_s: np.ndarray, rtt_us: np.ndarray, cwnd_pkts: np.ndarray) -> dict:
    # Leave out the first second: slow start and the first overflow are not the steady state.
    keep = (time_s >= min(1.0, float(time_s.max(initial=0)) / 2)) & (rtt_us > 0)
    rtt_ms = rtt_us[keep] / 1e3
    if not len(rtt_ms):
        return {"srtt_ms": None, "srtt_min_ms": None, "queue_delay_ms": None, "cwnd_pkts": None}
    floor_ms = float(rtt_us[rtt_us > 0].min()) / 1e3
    return {
        "srtt_ms": float(np.median(rtt_ms)),
        "srtt_min_ms": floor_ms,
        "queue_delay_ms": float(np.median(rtt_ms)) - floor_ms,
        "cwnd_pkts": float(np.median(cwnd_pkts[keep])),
        "samples": int(keep.sum()),
    }


def emulator_run(
    rate_bps: float, queue_pkts: int, loss: float, cc: str, duration_s: float, seed: int = 1
) -> dict[str, Any]:
    """Kernel ``cc`` through ``farlink emulate``; ``seed`` draws the link's losses."""
    doc = scenario(rate_bps, queue_pkts, cc, duration_s)
    result = emulate(doc, loss=loss or None, sender="kernel", seed=seed)
    (flow,) = result.summary["flows"]
    trace = result.trace("tcp_info")
    mss = MTU_BYTES - 40 - 12  # the kernel's segments carry timestamps
    out = {
        "goodput_bps": flow["goodput_bps"],
        "retransmissions": flow["retransmissions"],
        "timeouts": flow["timeouts"],
        "drops": {k: v for k, v in flow["drops"].items() if v},
        "departure_error_p99_us": result.summary["emulator"]["departure_error_us"]["p99"],
    }
    out.update(
        _rtt_summary(
            np.asarray(trace["time_s"], dtype=float),
            np.asarray(trace["rtt_us"], dtype=float),
            np.asarray(trace["cwnd_bytes"], dtype=float) / mss,
        )
    )
    return out


def kernel_case(rate_bps: float, queue_pkts: int, loss: float, cc: str) -> Case:
    """The kernel path matched to the emulated link (the module's mapping)."""
    frame = MTU_BYTES + ETHERNET_BYTES
    return Case(
        name="tbfcmp",
        cc=cc,
        drop_after=loss,
        rate=f"{round(rate_bps * frame / MTU_BYTES)}bit",
        limit_bytes=(queue_pkts + 1) * frame,
        burst=f"{2 * frame}b",
    )


def kernel_run(
    rate_bps: float, queue_pkts: int, loss: float, cc: str, duration_s: float
) -> dict[str, Any]:
    """Kernel ``cc`` through veths and a tbf in namespaces."""
    case = kernel_case(rate_bps, queue_pkts, loss, cc)
    with Net(case, "cmp") as net:
        done = timed_transfer(net, cc, duration_s, SAMPLE_INTERVAL_S)
        queue_drops = net.queue_drops()
        loss_drops = net.drops("r", "INPUT")
    samples = done["samples"]
    end = done["end"]
    col = lambda key: np.array([s[key] for s in samples], dtype=float)  # noqa: E731
    out = {
        "goodput_bps": 8 * end["bytes_acked"] / done["elapsed_s"],
        "retransmissions": end["total_retrans"],
        "timeouts": end["total_rto"],
        "drops": {k: v for k, v in (("queue", queue_drops), ("random", loss_drops)) if v},
        "tcpi_min_rtt_ms": end["min_rtt_us"] / 1e3,
    }
    out.update(_rtt_summary(col("time_s"), col("rtt_us"), col("cwnd_pkts")))
    return out


def median_of(runs: list[dict[str, Any]], key: str) -> float | None:
    """The median of ``key`` over repetitions (None where a run has none)."""
    values = [r[key] for r in runs if r.get(key) is not None]
    return statistics.median(values) if values else None
