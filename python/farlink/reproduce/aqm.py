"""Queue disciplines on the seeds' far links: what a bulk transfer's queue costs a short one.

Not a published figure: the seeds' links (seed 003's lossy wireless path, seed 002's GEO hop,
seed 000's Iridium bundle) ran drop-tail queues, and none measured an AQM. This entry runs each
path with its bottleneck under drop-tail, CoDel (RFC 8289), FQ-CoDel (RFC 8290) and PIE
(RFC 8033) at their defaults, a saturating bulk flow and, half-way through, a short transfer
beside it, and prints what docs/aqm.md discusses: the bulk flow's RTT under load, its goodput,
and the short transfer's completion time. Nothing is tuned; the paths are the presets with the
changes named in :data:`PATHS` (no random loss, so that every drop is the queue's; on the
bundle the members' frame errors stay, repaired by their ARQ).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from farlink.reproduce import Findings, Row, register
from farlink.scenario import load_scenario
from farlink.sim import simulate

DISCIPLINES = ("droptail", "codel", "fq_codel", "pie", "codel-rtt")
"""``codel-rtt``: CoDel with its interval set to the path's round trip (RFC 8289 section 4.3:
the interval should cover the worst-case RTT of the connections through the queue; its 100 ms
default assumes terrestrial paths)."""
SEEDS = (1, 2, 3)
SHORT_BYTES = 20_000
"""The short transfer: a small web object or a telemetry upload."""
FIGURES = (
    ("rtt_p50_ms", "bulk RTT under load, median", "ms"),
    ("rtt_p95_ms", "bulk RTT under load, p95", "ms"),
    ("goodput", "bulk goodput / bottleneck", "1"),
    ("short_s", f"{SHORT_BYTES // 1000} kB beside it", "s"),
)
"""Each run's figures (the keys of :func:`_run`'s dict), as the rows label them."""


@dataclass(frozen=True)
class Path_:
    """One far link of the seeds, as the study runs it."""

    preset: str
    bottleneck: str
    duration_s: float
    warm_up_s: float
    rtt: str
    why: str
    tcp: dict[str, Any]
    bundle: dict[str, Any] = field(default_factory=dict)
    """Keys of the bottleneck's ``bundle`` table the study changes."""
    frame_errors: bool = False
    """Keep the bottleneck's error model: a bundle's members repair their frame errors by ARQ
    (a packet is lost only when a frame fails every try), so they delay packets rather than
    drop them, and they are what makes one seed's run differ from another's."""
    seeds: tuple[int, ...] = SEEDS


PATHS = (
    Path_(
        "stpd-wireless",
        "R-D",
        60.0,
        10.0,
        "160ms",
        "seed 003's 1.5 Mbit/s, 80 ms wireless hop behind a 30-packet buffer (160 ms of "
        "1000-byte packets), without its random loss; Reno as in the preset",
        {},
    ),
    Path_(
        "marchese-geo",
        "R1-R2",
        120.0,
        30.0,
        "511ms",
        "seed 002's 2048 kbit/s GEO hop (511 ms RTT) behind its routers' 100-packet buffer "
        "(586 ms of 1500-byte packets), without its residual bit errors; CUBIC with 4 MB "
        "buffers as a host that autotunes them (the preset's 64 KB window, below the path's "
        "131 kB bandwidth-delay product, never fills the buffer)",
        {"cc": "cubic", "recovery": "sack", "send_buffer": "4MB", "receive_buffer": "4MB"},
    ),
    Path_(
        "iridium-4",
        "iridium",
        2400.0,
        600.0,
        "6.4s",
        "seed 000's four 2400 bit/s Iridium modems in an MLPPP bundle (6.4 s round trip for a "
        "1500-byte packet on an idle member) behind its 100-packet MLPPP queue, BIC as in the "
        "preset, without call drops; its frame errors stay (the members' ARQ repairs them, and "
        "they make the seeds differ), so the means are over seeds 1-10. A 200 KB window (137 "
        "packets): the preset's 22 KB (about 15 packets) fills the members' 3-packet transmit "
        "queues (12 packets: its 18 s round trip sits there, where no discipline runs) and "
        "leaves at most 4 in the MLPPP queue, the one the discipline runs",
        {"receive_buffer": "200KB"},
        bundle={"call_drop_rate": "0/s"},
        frame_errors=True,
        seeds=tuple(range(1, 11)),
    ),
)


def _scenario(path: Path_, discipline: str, seed: int) -> dict[str, Any]:
    doc = copy.deepcopy(load_scenario(path.preset))
    doc["seed"] = seed
    doc["duration"] = f"{path.duration_s}s"
    doc["trace"] = {"rtt": True}
    for link in doc["links"]:
        bottleneck = link.get("name") == path.bottleneck
        link.pop("lossy", None)
        for d in ("fwd", "rev"):
            if isinstance(link.get(d), dict) and not (bottleneck and path.frame_errors):
                link[d].pop("loss", None)
        if bottleneck:
            link.get("bundle", {}).update(path.bundle)
            if discipline == "codel-rtt":
                link["queue_discipline"] = "codel"
                link["aqm"] = {"interval": path.rtt}
            else:
                link["queue_discipline"] = discipline
    doc.pop("lossy_link", None)
    bulk = doc["flows"][0]
    bulk["app"] = {"kind": "unbounded"}
    bulk.setdefault("tcp", {}).update(path.tcp)
    short = copy.deepcopy(bulk)
    short["name"] = "short"
    short["app"] = {"kind": "bulk", "size_bytes": SHORT_BYTES}
    short["start"] = f"{path.duration_s / 2}s"
    doc["flows"] = [bulk, short]
    return doc


def _run(path: Path_, discipline: str, seed: int) -> dict[str, float]:
    result = simulate(_scenario(path, discipline, seed))
    rtt = result.trace("rtt")
    steady = (np.asarray(rtt["flow"]) == 0) & (np.asarray(rtt["time_ns"]) > path.warm_up_s * 1e9)
    samples_ms = np.asarray(rtt["rtt_ns"])[steady] / 1e6
    bulk, short = result.summary["flows"]
    return {
        "rtt_p50_ms": float(np.percentile(samples_ms, 50)),
        "rtt_p95_ms": float(np.percentile(samples_ms, 95)),
        "goodput": float(bulk["normalized_goodput"]),
        "short_s": float(short["transfer_time_s"]) if short["finished"] else float("nan"),
    }


@register(
    "aqm-far-links",
    title="Drop-tail, CoDel, FQ-CoDel and PIE on the seeds' far links (bulk beside a short flow)",
    source="seed 003 sec. 4.4.1 (stpd-wireless), seed 002 (marchese-geo); RFC 8289, 8290, 8033",
    engine="sim",
    published="none",
)
def far_links(out_dir: Path) -> Findings:
    rows = []
    for path in PATHS:
        for discipline in DISCIPLINES:
            runs = [_run(path, discipline, s) for s in path.seeds]
            label = f"{path.preset} {discipline}"
            for key, what, unit in FIGURES:
                rows.append(Row.over_seeds(f"{label}: {what}", unit, None, [r[key] for r in runs]))
    notes = [f"{p.preset}: {p.why}." for p in PATHS]
    notes.append(
        f"Each cell is the mean over seeds {SEEDS[0]}-{SEEDS[-1]} (the spread beside it; "
        "iridium-4 over seeds 1-10); the RTT is the bulk flow's samples after its warm-up "
        "(stpd-wireless 10 s, marchese-geo 30 s, iridium-4 600 s); the "
        f"{SHORT_BYTES // 1000} kB transfer starts half-way, on the same route, with the same "
        "TCP, and its time runs from its start to its last byte delivered."
    )
    return Findings(rows=rows, notes=notes)
