"""Seed 003 chapter 3.5: ST-PD TCP against Reno (and Vegas) over wired paths, on the packet engine.

Four reproductions, each on a preset that cites the thesis for every value:
- ``stpd-fig-3.8-3.13``: one connection over ``stpd-wired`` with a sufficient (14) and an
  insufficient (4) buffer at the bottleneck router: congestion window, queue, throughput;
- ``stpd-fig-3.15-3.17``: three connections joining and leaving one 1.5 Mbps bottleneck
  (``stpd-fixed-bottleneck``): queue, throughput and Jain's fairness index per interval;
- ``stpd-fig-3.19-3.20``: a connection whose bottleneck moves from R1 to R2 as cross traffic
  comes and goes (``stpd-moving-bottleneck``; flows on different routes, no engine change);
- ``stpd-fig-3.22-3.24``: the round-trip time of telnet beside FTP over a quarter T1
  (``stpd-telnet``).

Every run uses ns-2-like TCP as the thesis did (``stpd_traces.ns2_like_tcp``). Throughput is
counted as the thesis counts it, "payload and protocol overhead" (Figure 3.10's footnote): the
payload delivered times 1000/960.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from farlink.reports.plots import panels_figure
from farlink.reproduce import Findings, Row, register
from farlink.reproduce.stpd_traces import (
    PACKET_BYTES,
    jain_index,
    ns2_like_tcp,
    queue_steps,
    rtt_samples,
    throughput_per_interval,
    time_weighted_max,
    time_weighted_mean,
    window_steps,
)

MSS_BYTES = 960
WITH_HEADERS = PACKET_BYTES / MSS_BYTES
# Figures 3.10 and 3.13 sample throughput every 0.5 s (sec. 3.5.1.1).
THROUGHPUT_INTERVAL_S = 0.5


def _simulate(preset: str, tcp: str, n_flows: int, extra: list[str] | tuple[str, ...] = ()):
    from farlink.sim import simulate

    return simulate(preset, tcp=tcp, sets=[*ns2_like_tcp(n_flows), *extra])


def _flows_mbps(result, end_s: float) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """Each flow's (name, interval start, Mbit/s with headers) over 0.5 s intervals: the
    throughput panel of the multi-flow figures."""
    curves = []
    for f, flow in enumerate(result.names["flows"]):
        ends, bps = throughput_per_interval(result, f, THROUGHPUT_INTERVAL_S, end_s, WITH_HEADERS)
        curves.append((flow, ends - THROUGHPUT_INTERVAL_S, bps / 1e6))
    return curves


def _mean_mbps(result, flow: int, t0: float, t1: float, end_s: float) -> float:
    """Mean throughput with headers over [t0, t1] from the 0.5 s intervals, in Mbit/s."""
    ends, bps = throughput_per_interval(result, flow, THROUGHPUT_INTERVAL_S, end_s, WITH_HEADERS)
    inside = (ends > t0 + 1e-9) & (ends <= t1 + 1e-9)
    return float(np.mean(bps[inside]) / 1e6)


# ---------------------------------------------------------------------------------------------
# Figures 3.8-3.13: one connection, sufficient and insufficient buffer
# ---------------------------------------------------------------------------------------------

WIRED_DURATION_S = 30.0
# The statistics skip Reno's slow start and ST-PD's opening (both over by about 3 s here).
STEADY_FROM_S = 5.0


@register(
    "stpd-fig-3.8-3.13",
    published="simulated",
    title="One connection over a wired bottleneck: window, queue and throughput of ST-PD and Reno",
    source="seed 003, Figures 3.8-3.13 and sections 3.5.1.1-3.5.1.2",
    engine="sim",
)
def fig_3_8_to_3_13(out_dir: Path) -> Findings:
    rows: list[Row] = []
    figures = []
    stats: dict[tuple[str, int], dict[str, float]] = {}
    for buffer_pkts in (14, 4):
        panels: dict[str, list] = {"cwnd": [], "queue": [], "thr": []}
        for tcp, name in (("reno", "Reno"), ("stpd", "ST-PD")):
            r = _simulate("stpd-wired", tcp, 1, [f"links[1].queue_pkts={buffer_pkts}"])
            tw, w = window_steps(r, 0, MSS_BYTES)
            tq, q = queue_steps(r, "R-D")
            ends, bps = throughput_per_interval(
                r, 0, THROUGHPUT_INTERVAL_S, WIRED_DURATION_S, WITH_HEADERS
            )
            steady = (STEADY_FROM_S, WIRED_DURATION_S)
            stats[(tcp, buffer_pkts)] = {
                "cwnd_mean": time_weighted_mean(tw, w, *steady),
                "cwnd_max": time_weighted_max(tw, w, *steady),
                "cwnd_min": -time_weighted_max(tw, -w, *steady),
                "queue_mean": time_weighted_mean(tq, q, *steady),
                "queue_max": time_weighted_max(tq, q, *steady),
                "queue_min": -time_weighted_max(tq, -q, *steady),
                "mbps": _mean_mbps(r, 0, *steady, WIRED_DURATION_S),
                "mbps_whole": _mean_mbps(r, 0, 0.0, WIRED_DURATION_S, WIRED_DURATION_S),
                "below_1_4": float(np.mean(bps[ends > STEADY_FROM_S] < 1.4e6)),
                "queue_drops": r.summary["flows"][0]["drops"]["queue_overflow"],
            }
            panels["cwnd"].append((name, tw, w))
            panels["queue"].append((name, tq, q))
            panels["thr"].append((name, ends - THROUGHPUT_INTERVAL_S, bps / 1e6))
        which = "sufficient" if buffer_pkts == 14 else "insufficient"
        figs = "3.8-3.10" if buffer_pkts == 14 else "3.11-3.13"
        figures.append(
            panels_figure(
                out_dir / f"stpd-fig-{figs}.png",
                panels=[
                    ("cwnd (packets)", panels["cwnd"]),
                    ("queue at R (packets)", panels["queue"]),
                    ("throughput (Mbit/s)", panels["thr"]),
                ],
                xlabel="time (s)",
                title=f"Figs. {figs}: {which} buffer ({buffer_pkts} packets at R), "
                "S-R 10 Mbps 0.2 ms, R-D 1.5 Mbps 20 ms",
                caption="farlink sim, stpd-wired, ns-2-like TCP; throughput per 0.5 s with "
                "headers (1000-byte packets)",
            )
        )
    s14, s4 = stats[("stpd", 14)], stats[("stpd", 4)]
    r14, r4 = stats[("reno", 14)], stats[("reno", 4)]
    # "Hovers between the range of 10-12 packets": the middle, 11, with +-1/11 as tolerance.
    band = 1 / 11
    rows += [
        Row(
            "ST-PD cwnd, 14-packet buffer, mean (seed: 10-12)",
            "packets",
            11.0,
            s14["cwnd_mean"],
            band,
        ),
        Row("ST-PD cwnd, 14-packet buffer, lowest (seed: 10-12)", "packets", None, s14["cwnd_min"]),
        Row(
            "ST-PD cwnd, 14-packet buffer, highest (seed: 10-12)", "packets", None, s14["cwnd_max"]
        ),
        Row(
            "ST-PD queue at R, 14-packet buffer, mean (seed: around one)",
            "packets",
            1.0,
            s14["queue_mean"],
            0.5,
        ),
        Row(
            "Reno cwnd, 14-packet buffer, highest (seed: exceeds 23)",
            "packets",
            23.0,
            r14["cwnd_max"],
            0.1,
        ),
        Row(
            "Reno queue at R, 14-packet buffer, highest (seed: the whole buffer)",
            "packets",
            14.0,
            r14["queue_max"],
            0.0,
        ),
        Row(
            "Reno queue at R, 14-packet buffer, lowest (seed: 2)",
            "packets",
            2.0,
            r14["queue_min"],
            None,
        ),
        Row("Reno queue at R, 14-packet buffer, mean", "packets", None, r14["queue_mean"]),
        Row(
            "ST-PD throughput, 14-packet buffer (seed: the link's 1.5)",
            "Mbit/s",
            1.5,
            s14["mbps"],
            0.05,
        ),
        Row(
            "Reno throughput, 14-packet buffer (seed: the link's 1.5)",
            "Mbit/s",
            1.5,
            r14["mbps"],
            0.05,
        ),
        Row(
            "ST-PD cwnd, 4-packet buffer, mean (seed: unaffected, 10-12)",
            "packets",
            11.0,
            s4["cwnd_mean"],
            band,
        ),
        Row("ST-PD queue at R, 4-packet buffer, mean", "packets", 1.0, s4["queue_mean"], 0.5),
        Row(
            "Reno cwnd, 4-packet buffer, highest (seed: exceeds 13)",
            "packets",
            13.0,
            r4["cwnd_max"],
            0.1,
        ),
        Row(
            "Reno queue at R, 4-packet buffer, lowest (seed: empty for a while)",
            "packets",
            None,
            r4["queue_min"],
        ),
        Row(
            "ST-PD throughput, 4-packet buffer (seed: little different)",
            "Mbit/s",
            1.5,
            s4["mbps"],
            0.05,
        ),
        Row("Reno throughput, 4-packet buffer (seed: below 1.4)", "Mbit/s", None, r4["mbps"]),
        Row(
            "Reno, 4-packet buffer: share of 0.5 s samples below 1.4 Mbit/s",
            "fraction",
            None,
            r4["below_1_4"],
        ),
        Row(
            "Reno throughput, 14-packet buffer, whole run 0-30 s", "Mbit/s", None, r14["mbps_whole"]
        ),
        Row("Reno throughput, 4-packet buffer, whole run 0-30 s", "Mbit/s", None, r4["mbps_whole"]),
        Row(
            "ST-PD throughput, 4-packet buffer, whole run 0-30 s", "Mbit/s", None, s4["mbps_whole"]
        ),
    ]
    return Findings(
        rows=rows,
        notes=[
            "Published values are read from the text (the figures did not survive): ST-PD's "
            "window 'should hover between the range of 10-12 packets' (entered as 11 with a "
            "tolerance of 1/11, i.e. the band 10 to 12), its queue 'around one packet level'; "
            "Reno's window grows until it 'exceeds 23' (13 with the small buffer) and its queue "
            "'oscillates from 2 packets to the maximum buffer space'; both reach 'the maximum "
            "throughput' of 1.5 Mbit/s with a 14-packet buffer; with 4 packets Reno's 'drops to "
            "below 1.4Mbps'.",
            f"Statistics over {STEADY_FROM_S:g}-{WIRED_DURATION_S:g} s (after the opening), "
            "time-weighted; throughput counts headers as the thesis does (payload x 1000/960).",
            f"The small buffer costs Reno {r14['mbps'] - r4['mbps']:.3f} Mbit/s and ST-PD "
            f"{s14['mbps'] - s4['mbps']:.3f} Mbit/s; Reno lost {r14['queue_drops']} and "
            f"{r4['queue_drops']} packets to overflow at R, ST-PD {s14['queue_drops']} and "
            f"{s4['queue_drops']}.",
            f"Reno's mean over {STEADY_FROM_S:g}-30 s with 4 packets of buffer is "
            f"{r4['mbps']:.3f} Mbit/s, just above the thesis's 'below 1.4Mbps'; "
            f"{r4['below_1_4']:.0%} of its 0.5 s samples are below 1.4 (the starved moments "
            "after each halving, which Figure 3.13 shows). Over the whole 30 s, slow start's "
            "overshoot (losses of many packets at once, ending in timeouts) costs Reno more: "
            f"{r14['mbps_whole']:.3f} and {r4['mbps_whole']:.3f} Mbit/s with 14 and 4 packets, "
            f"against ST-PD's {s4['mbps_whole']:.3f}.",
        ],
        figures=figures,
    )


# ---------------------------------------------------------------------------------------------
# Figures 3.15-3.17: three connections join and leave a fixed bottleneck
# ---------------------------------------------------------------------------------------------

FIXED_DURATION_S = 60.0
# Sec. 3.5.2.1: S1D1 0-36 s, S2D2 12-48 s, S3D3 24-60 s: five 12 s intervals.
FIXED_INTERVALS = [(0.0, 12.0), (12.0, 24.0), (24.0, 36.0), (36.0, 48.0), (48.0, 60.0)]
FIXED_ACTIVE = {(0.0, 12.0): [0], (12.0, 24.0): [0, 1], (24.0, 36.0): [0, 1, 2],
                (36.0, 48.0): [1, 2], (48.0, 60.0): [2]}  # fmt: skip


@register(
    "stpd-fig-3.15-3.17",
    published="simulated",
    title="Three connections joining and leaving a 1.5 Mbps bottleneck: Reno, Vegas, ST-PD",
    source="seed 003, Figures 3.15-3.17 and section 3.5.2.1",
    engine="sim",
)
def fig_3_15_to_3_17(out_dir: Path) -> Findings:
    rows: list[Row] = []
    figures = []
    summary: dict[str, dict[tuple[float, float], tuple[float, float, list[float]]]] = {}
    for tcp, name, fig in (("reno", "Reno", "3.15"), ("vegas", "Vegas", "3.16"),
                           ("stpd", "ST-PD", "3.17")):  # fmt: skip
        r = _simulate("stpd-fixed-bottleneck", tcp, 3)
        tq, q = queue_steps(r, "R1-R2")
        per_interval = {}
        for interval in FIXED_INTERVALS:
            shares = [_mean_mbps(r, f, *interval, FIXED_DURATION_S) for f in FIXED_ACTIVE[interval]]
            per_interval[interval] = (
                time_weighted_mean(tq, q, *interval),
                jain_index(shares),
                shares,
            )
        summary[tcp] = per_interval
        thr = _flows_mbps(r, FIXED_DURATION_S)
        figures.append(
            panels_figure(
                out_dir / f"stpd-fig-{fig}.png",
                panels=[("queue at R1 (packets)", [("", tq, q)]), ("throughput (Mbit/s)", thr)],
                xlabel="time (s)",
                title=f"Fig. {fig}: {name}, three connections over R1-R2 1.5 Mbps 20 ms, "
                "20-packet buffer",
                caption="farlink sim, stpd-fixed-bottleneck, ns-2-like TCP; throughput per 0.5 s "
                "with headers",
            )
        )
        for interval in FIXED_INTERVALS:
            mean_q, jain, shares = per_interval[interval]
            a, b = interval
            n = len(shares)
            published_q = None
            tol = None
            if tcp == "stpd":
                # "ST-PD TCP keeps the buffer occupancy around one packet level."
                published_q, tol = 1.0, 0.5
            elif tcp == "vegas" and n == 1:
                # "kept between 1 to 3 packets when there is only one connection".
                published_q, tol = 2.0, 0.5
            rows.append(
                Row(
                    f"{name}, {a:g}-{b:g} s ({n} flows): mean queue at R1",
                    "packets",
                    published_q,
                    mean_q,
                    tol,
                )
            )
            if n > 1:
                rows.append(Row(f"{name}, {a:g}-{b:g} s: Jain's index", "index", None, jain))
                rows.append(
                    Row(
                        f"{name}, {a:g}-{b:g} s: smallest share of the fair 1.5/{n}",
                        "of fair",
                        None,
                        min(shares) / (1.5 / n),
                    )
                )
    st, vg = summary["stpd"], summary["vegas"]
    two, three = st[(12.0, 24.0)], st[(24.0, 36.0)]
    return Findings(
        rows=rows,
        notes=[
            "The thesis gives no numbers for these figures; its text says Reno 'constantly "
            "overflows the bottleneck buffer', Vegas keeps 1 to 3 packets with one connection "
            "and more as connections join, and ST-PD keeps the buffer 'around one packet level' "
            "with overshoots at 12 s and 24 s and is 'the only one that makes each connection "
            "reach its fair share of bandwidth swiftly'. Those statements are the published "
            "column; Jain's index (1 is a fair split) is computed over each 12 s interval from "
            "0.5 s throughput samples, so it includes the time to converge.",
            "Disagreement: here ST-PD's queue grows with the number of connections (mean "
            f"{st[(0.0, 12.0)][0]:.2f}, {two[0]:.2f}, {three[0]:.2f} packets with 1, 2, 3 "
            "connections) and the split is not fair: the connection that joins later takes "
            f"more ({', '.join(f'{x:.2f}' for x in two[2])} Mbit/s at 12-24 s; "
            f"{', '.join(f'{x:.2f}' for x in three[2])} at 24-36 s). Likely cause: each "
            "connection steers its own estimate of its queued packets (eq. 3.3) to one, so n "
            "connections hold at least n packets; and a connection that joins a busy "
            "bottleneck never sees the empty-queue round trip, so its RTT_min includes the "
            "queue the others built, it underestimates its own backlog and keeps more packets "
            "queued than they do (the RTT_min bias known from TCP Vegas). The thesis does not "
            "say how its ST-PD avoided this; nothing was tuned to hide it.",
            "Reno fills the 20-packet buffer in every interval, as the text says. Vegas's "
            "queue grows as connections join, as the text says, but alone it keeps "
            f"{vg[(0.0, 12.0)][0]:.2f} and {vg[(48.0, 60.0)][0]:.2f} packets waiting, a little "
            "above the 1 to 3 of the text: it settles where its Diff, measured with the "
            "epoch's smallest RTT and the window in flight as Linux does "
            "(docs/congestion-control.md), reaches beta = 3, and Diff counts the packet on "
            "the wire as well as those waiting.",
        ],
        figures=figures,
    )


# ---------------------------------------------------------------------------------------------
# Figures 3.19-3.20: the moving bottleneck
# ---------------------------------------------------------------------------------------------

MOVING_DURATION_S = 60.0


@register(
    "stpd-fig-3.19-3.20",
    published="simulated",
    title="A connection whose bottleneck moves from R1 to R2: queues and throughput, ST-PD and "
    "Reno",
    source="seed 003, Figures 3.19-3.20 and section 3.5.2.2",
    engine="sim",
)
def fig_3_19_to_3_20(out_dir: Path) -> Findings:
    rows: list[Row] = []
    figures = []
    found = {}
    for tcp, name, fig in (("stpd", "ST-PD", "3.19"), ("reno", "Reno", "3.20")):
        r = _simulate("stpd-moving-bottleneck", tcp, 3)
        t1, q1 = queue_steps(r, "R1-R2")
        t2, q2 = queue_steps(r, "R2-R3")
        thr = _flows_mbps(r, MOVING_DURATION_S)
        figures.append(
            panels_figure(
                out_dir / f"stpd-fig-{fig}.png",
                panels=[
                    ("queue (packets)", [("R1 (to R2)", t1, q1), ("R2 (to R3)", t2, q2)]),
                    ("throughput (Mbit/s)", thr),
                ],
                xlabel="time (s)",
                title=f"Fig. {fig}: {name}; S1-D1 over R1-R2, R2-R3; S2-D2 15-30 s, S3-D3 45-60 s",
                caption="farlink sim, stpd-moving-bottleneck, ns-2-like TCP; throughput per "
                "0.5 s with headers",
            )
        )
        found[tcp] = {
            "q1_alone": time_weighted_mean(t1, q1, 0.0, 15.0),
            "q1_shared": time_weighted_mean(t1, q1, 15.0, 30.0),
            "q2_shared": time_weighted_mean(t2, q2, 45.0, 60.0),
            "q1_late": time_weighted_mean(t1, q1, 45.0, 60.0),
            "s1_15_30": _mean_mbps(r, 0, 15.0, 30.0, MOVING_DURATION_S),
            "s2_15_30": _mean_mbps(r, 1, 15.0, 30.0, MOVING_DURATION_S),
            "s1_45_60": _mean_mbps(r, 0, 45.0, 60.0, MOVING_DURATION_S),
            "s3_45_60": _mean_mbps(r, 2, 45.0, 60.0, MOVING_DURATION_S),
        }
    s, n = found["stpd"], found["reno"]
    rows += [
        Row(
            "ST-PD queue at R1, 0-15 s (seed: the designed level)",
            "packets",
            1.0,
            s["q1_alone"],
            0.5,
        ),
        Row("ST-PD queue at R1, 15-30 s, two connections", "packets", 1.0, s["q1_shared"], 0.5),
        Row(
            "ST-PD queue at R2, 45-60 s (the bottleneck has moved)",
            "packets",
            1.0,
            s["q2_shared"],
            0.5,
        ),
        Row("ST-PD queue at R1, 45-60 s (no longer the bottleneck)", "packets", None, s["q1_late"]),
        Row("ST-PD S1-D1, 15-30 s (seed: equal halves of 1.5)", "Mbit/s", 0.75, s["s1_15_30"], 0.1),
        Row("ST-PD S2-D2, 15-30 s (seed: equal halves of 1.5)", "Mbit/s", 0.75, s["s2_15_30"], 0.1),
        Row("ST-PD S3-D3, 45-60 s (seed: its full 384 kbps)", "Mbit/s", 0.384, s["s3_45_60"], 0.05),
        Row(
            "ST-PD S1-D1, 45-60 s (seed: the rest of R2-R3, 1.5 - 0.384)",
            "Mbit/s",
            1.116,
            s["s1_45_60"],
            0.05,
        ),
        Row("Reno queue at R1, 15-30 s", "packets", None, n["q1_shared"]),
        Row("Reno queue at R2, 45-60 s", "packets", None, n["q2_shared"]),
        Row(
            "Reno S1-D1, 15-30 s (seed: a small fraction of its fair share)",
            "Mbit/s",
            None,
            n["s1_15_30"],
        ),
        Row("Reno S2-D2, 15-30 s", "Mbit/s", None, n["s2_15_30"]),
        Row("Reno S3-D3, 45-60 s", "Mbit/s", None, n["s3_45_60"]),
    ]
    return Findings(
        rows=rows,
        notes=[
            "Built from existing mechanisms: three flows on different routes of one topology "
            "(fewest-hop routing), started and stopped at the thesis's times; the bottleneck "
            "moves because S3-D3, limited to 384 kbps by its access link, takes part of R2-R3 "
            "from 45 s, leaving S1-D1 1.116 Mbit/s there, less than R1-R2's 1.5. No link rate "
            "changes.",
            "Published throughputs are what the text states: the 1.5 Mbit/s of R1-R2 'is "
            "equally divided between the two competing connections', S3-D3 'can transmit data "
            "at its full speed' and 'the rest of the link capacity of R2R3 is fully utilised by "
            "connection S1D1'; queues 'around the designed level' (one packet).",
            f"Disagreement: at 15-30 s ST-PD splits R1-R2 {s['s1_15_30']:.2f} / "
            f"{s['s2_15_30']:.2f} Mbit/s, not in halves, and R1's queue averages "
            f"{s['q1_shared']:.2f} packets: the joining connection S2-D2 takes RTT_min from a "
            "path whose queue S1-D1 already holds, as in stpd-fig-3.15-3.17. The moving "
            "bottleneck itself is handled as the thesis says: at 45-60 s the queue sits at R2 "
            f"({s['q2_shared']:.2f} packets) and R1's empties ({s['q1_late']:.2f}).",
            f"Reno: S1-D1 gets {n['s1_15_30']:.2f} Mbit/s against S2-D2's {n['s2_15_30']:.2f} "
            "at 15-30 s, less than its fair share as the thesis says (packets arriving over "
            "the 45 Mbps link fill R1's buffer first), though not the 'small fraction' its "
            "figure apparently showed; R1 and R2 hold "
            f"{n['q1_shared']:.1f} and {n['q2_shared']:.1f} packets on average.",
        ],
        figures=figures,
    )


# ---------------------------------------------------------------------------------------------
# Figures 3.22-3.24: telnet round-trip time beside FTP
# ---------------------------------------------------------------------------------------------

TELNET_DURATION_S = 50.0
TELNET_FLOW = 1
FTP_FLOW = 0


@register(
    "stpd-fig-3.22-3.24",
    published="simulated",
    title="Round-trip time of telnet beside FTP over a quarter T1: ST-PD and Reno",
    source="seed 003, Figures 3.22-3.24 and section 3.5.3",
    engine="sim",
)
def fig_3_22_to_3_24(out_dir: Path) -> Findings:
    found = {}
    queue_panel, rtt_panel, ack_panel = [], [], []
    for tcp, name in (("stpd", "ST-PD"), ("reno", "Reno")):
        r = _simulate("stpd-telnet", tcp, 2)
        tq, q = queue_steps(r, "R1-R2")
        tr, rtt = rtt_samples(r, TELNET_FLOW)
        ack = r.trace("ack")
        mask = ack["flow"] == FTP_FLOW
        queue_panel.append((name, tq, q))
        rtt_panel.append((name, tr, rtt))
        ack_panel.append((name, ack["time_ns"][mask] / 1e9, ack["ack"][mask] / MSS_BYTES))
        flows = r.summary["flows"]
        found[tcp] = {
            "rtt_min": float(rtt.min()),
            "rtt_max": float(rtt.max()),
            "rtt_median": float(np.median(rtt)),
            "samples": len(rtt),
            "queue_mean": time_weighted_mean(tq, q, 0.0, TELNET_DURATION_S),
            "queue_max": time_weighted_max(tq, q, 0.0, TELNET_DURATION_S),
            "ftp_segments": flows[FTP_FLOW]["delivered_bytes"] / MSS_BYTES,
            "telnet_timeouts": flows[TELNET_FLOW]["timeouts"],
        }
    figure = panels_figure(
        out_dir / "stpd-fig-3.22-3.24.png",
        panels=[
            ("queue at R1 (packets)", queue_panel),
            ("telnet RTT (s)", rtt_panel, "points"),
            ("FTP acknowledged (segments)", ack_panel),
        ],
        xlabel="time (s)",
        title="Figs. 3.22-3.24: FTP S1-D1 and telnet S2-D2 over R1-R2 384 kbps 20 ms, "
        "40-packet buffer",
        caption="farlink sim, stpd-telnet, ns-2-like TCP; telnet: 1000-byte packets, "
        "exponential gaps of mean 1 s",
    )
    s, n = found["stpd"], found["reno"]
    rows = [
        Row(
            "ST-PD telnet RTT, lowest (seed: 63 ms, an empty queue)", "s", 0.063, s["rtt_min"], 0.1
        ),
        Row(
            "ST-PD telnet RTT, highest (seed: 127 ms, 3 packets queued)",
            "s",
            0.127,
            s["rtt_max"],
            0.1,
        ),
        Row("ST-PD telnet RTT, median", "s", None, s["rtt_median"]),
        Row(
            "ST-PD queue at R1, highest (seed: 0 to 3 packets)",
            "packets",
            3.0,
            s["queue_max"],
            None,
        ),
        Row("ST-PD queue at R1, mean", "packets", None, s["queue_mean"]),
        Row(
            "Reno telnet RTT, highest (seed: about 894 ms, just under 0.9 s)",
            "s",
            0.894,
            n["rtt_max"],
            0.05,
        ),
        Row("Reno telnet RTT, median", "s", None, n["rtt_median"]),
        Row("Reno queue at R1, mean (40-packet buffer)", "packets", None, n["queue_mean"]),
        Row("FTP segments acknowledged in 50 s, ST-PD", "segments", None, s["ftp_segments"]),
        Row("FTP segments acknowledged in 50 s, Reno", "segments", None, n["ftp_segments"]),
    ]
    return Findings(
        rows=rows,
        notes=[
            "Published values from the text of sec. 3.5.3: under ST-PD the telnet round trip "
            "'should be bounded between 63ms to 127ms' (no queue to three packets queued); "
            "under Reno its maximum is 'about 894ms', 'just under 0.9 second' (40 packets "
            "queued). With the preset's links the round trip without queueing is 64.3 ms and "
            "each packet queued at R1 adds 20.8 ms.",
            f"ST-PD's lowest sample is {s['rtt_min'] * 1e3:.1f} ms, not 63: ST-PD keeps one "
            f"FTP packet queued at R1 almost all the time (mean {s['queue_mean']:.2f}), so a "
            "telnet packet nearly always waits behind one; the thesis's lower bound is the "
            "case of an empty queue, which its trace reached now and then.",
            "The telnet gaps are exponential with a mean of 1 s, not ns-2's tcplib telnet "
            "library (not part of the scenario format); the bounds depend on the queue, not on "
            f"the gaps. Telnet timeouts: ST-PD {s['telnet_timeouts']}, Reno "
            f"{n['telnet_timeouts']} (Reno's FTP overflows the buffer telnet shares). RTT "
            f"samples: {s['samples']} and {n['samples']} (Karn's rule skips retransmitted "
            "packets).",
        ],
        figures=[figure],
    )
