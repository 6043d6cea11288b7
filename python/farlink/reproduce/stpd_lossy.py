"""Seed 003 chapters 4.4 and 5.4: ST-PD TCP over lossy links, on the packet engine.

- ``stpd-fig-4.13-4.17``: bursty losses (two-state, mean burst 8 packets, overall 10^-2) on the
  wireless path of Figure 4.7 (preset ``stpd-wireless-bursty``): the normalised throughput over
  packets 2001 to 10000, Reno and ST-PD, with today's controllers beside them;
- ``stpd-fig-4.19-4.22``: the GEO T1 hop (``stpd-geo-t1``) with exactly the 2000th and 2001st
  packets lost (the ``drop_list`` loss model): in-order segments delivered in 60 s;
- ``stpd-testbed-5.4``: 100,000 bytes over the serial link of the Linux testbed
  (``stpd-testbed``): transfer times of Reno and ST-PD beside the published ones.
"""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np

from farlink.reports.plots import line_figure, panels_figure
from farlink.reproduce import Findings, Row, register
from farlink.reproduce.stpd_traces import PACKET_BYTES, ns2_like_tcp, window_steps

# The seed's controllers run with ns-2-like TCP (1000-byte packets carry 960 bytes); today's run
# as deployed: SACK, timestamps (948 bytes of payload in the same 1000-byte packets), delayed
# ACKs, with the same 1 MiB receive buffer (as in stpd-fig-4.8).
SEED_VARIANTS = ("reno", "stpd")
MODERN_VARIANTS = ("hybla", "westwood", "cubic", "bbr")
NS2_PAYLOAD_BYTES = 960
MODERN_PAYLOAD_BYTES = 948
MODERN_TCP = ["flows[0].tcp.sack=true", 'flows[0].tcp.receive_buffer="1MiB"']
NAMES = {"reno": "Reno", "stpd": "ST-PD", "tahoe": "Tahoe", "vegas": "Vegas",
         "newreno": "NewReno", "hybla": "Hybla", "westwood": "Westwood+", "cubic": "CUBIC",
         "bbr": "BBR"}  # fmt: skip


def _tcp_sets(variant: str) -> tuple[list[str], int]:
    if variant in MODERN_VARIANTS:
        return MODERN_TCP, MODERN_PAYLOAD_BYTES
    return ns2_like_tcp(1), NS2_PAYLOAD_BYTES


# ---------------------------------------------------------------------------------------------
# Figures 4.13-4.17: bursty losses
# ---------------------------------------------------------------------------------------------

FIRST_PACKET = 2001  # sec. 4.4.1.2: "with starting index of 2001 and ending index of 10000"
LAST_PACKET = 10000
BURSTY_SEEDS = range(1, 11)
BOTTLENECK_BPS = 1.5e6
# Two readings of the thesis's two-state channel (docs/loss-models.md): the preset's, in time,
# and the same parameters stepped per packet.
READINGS = {
    "per packet": ['links[1].fwd.loss={model="gilbert_packets", mean_burst_pkts=8, rate=0.01}'],
    "in time": [],
}
PUBLISHED_READING = "per packet"


def _first_send_times(result, payload_bytes: int) -> tuple[np.ndarray, np.ndarray]:
    """(time s, packet number from 1 by sequence number) of every first transmission."""
    seq = result.trace("seq")
    first = ~seq["retransmission"]
    return seq["time_ns"][first] / 1e9, seq["seq"][first] // payload_bytes + 1


def _bursty_run(variant: str, seed: int, reading: str):
    from farlink.sim import simulate

    sets, payload = _tcp_sets(variant)
    # A bulk transfer of exactly LAST_PACKET segments ends the run once they are delivered.
    result = simulate(
        "stpd-wireless-bursty",
        tcp=variant,
        seed=seed,
        duration="3000s",
        size=f"{LAST_PACKET * payload}B",
        sets=[*sets, *READINGS[reading]],
    )
    times, index = _first_send_times(result, payload)
    start = times[index == FIRST_PACKET]
    end = times[index == LAST_PACKET]
    if not (len(start) and len(end)):
        return result, float("nan"), (float("nan"), float("nan")), payload
    span = (float(start[0]), float(end[0]))
    packets = LAST_PACKET - FIRST_PACKET + 1
    normalised = packets * PACKET_BYTES * 8 / (span[1] - span[0]) / BOTTLENECK_BPS
    return result, normalised, span, payload


@register(
    "stpd-fig-4.13-4.17",
    published="simulated",
    title="Bursty wireless losses (mean burst 8 packets, rate 1e-2): Reno, ST-PD and today's "
    "controllers",
    source="seed 003, Figures 4.13-4.17 and section 4.4.1.2",
    engine="sim",
)
def fig_4_13_to_4_17(out_dir: Path) -> Findings:
    published = {"reno": 0.14, "stpd": 0.96}
    published_span = {"reno": (18.1097, 322.0880), "stpd": (12.7079, 56.8467)}
    rows: list[Row] = []
    first_seed = {}
    stats: dict[tuple[str, str], tuple[float, float, float]] = {}
    for reading in READINGS:
        for variant in (*SEED_VARIANTS, *MODERN_VARIANTS):
            values, spans = [], []
            for seed in BURSTY_SEEDS:
                result, normalised, span, payload = _bursty_run(variant, seed, reading)
                values.append(normalised)
                spans.append(span)
                if seed == BURSTY_SEEDS[0] and reading == PUBLISHED_READING:
                    first_seed[variant] = (result, span, payload)
            mean, sd, low = float(np.mean(values)), float(np.std(values)), float(np.min(values))
            stats[(reading, variant)] = (mean, sd, low)
            on_published = reading == PUBLISHED_READING and variant in published
            rows.append(
                Row(
                    f"{NAMES[variant]}, channel {reading}: normalised throughput, packets "
                    f"2001-10000 (mean of {len(BURSTY_SEEDS)} seeds, sd {sd:.3f}, lowest "
                    f"{low:.3f})",
                    "of max",
                    published.get(variant) if on_published else None,
                    mean,
                    0.25 if on_published else None,
                )
            )
            if variant in published_span:
                a, b = published_span[variant]
                rows.append(
                    Row(
                        f"{NAMES[variant]}, channel {reading}: seconds to send packets "
                        "2001-10000 (median)",
                        "s",
                        b - a if reading == PUBLISHED_READING else None,
                        float(np.median([y - x for x, y in spans])),
                    )
                )
    # Figures 4.13-4.17 from the first seed: losses, windows by packet index and by time.
    panels_index, panels_time, loss_panel = [], [], []
    for row, variant in enumerate(SEED_VARIANTS):
        result, span, payload = first_seed[variant]
        tw, w = window_steps(result, 0, payload)
        times, index = _first_send_times(result, payload)
        keep = (index >= FIRST_PACKET) & (index <= LAST_PACKET)
        at = np.searchsorted(tw, times[keep], side="right") - 1
        panels_index.append((NAMES[variant], index[keep], w[np.maximum(at, 0)]))
        inside = (tw >= span[0]) & (tw <= span[1])
        panels_time.append((NAMES[variant], tw[inside] - span[0], w[inside]))
        drops = result.trace("drops")
        lost = (drops["cause"] == 1) & ~drops["ack_packet"]
        lost_index = drops["seq"][lost] // payload + 1
        in_range = (lost_index >= FIRST_PACKET) & (lost_index <= LAST_PACKET)
        loss_panel.append(
            (f"{NAMES[variant]}", lost_index[in_range], np.full(int(np.sum(in_range)), row + 1))
        )
    figures = [
        panels_figure(
            out_dir / "stpd-fig-4.13-4.15.png",
            panels=[("lost packets", loss_panel, "points"), ("cwnd (packets)", panels_index)],
            xlabel="packet index",
            title="Figs. 4.13-4.15: bursty loss (burst 8, rate 1e-2, per packet), window by "
            "packet index",
            caption="farlink sim, stpd-wireless-bursty with gilbert_packets, seed 1, ns-2-like "
            "TCP; each run sees its own loss pattern",
        ),
        panels_figure(
            out_dir / "stpd-fig-4.16-4.17.png",
            panels=[("cwnd (packets)", [p]) for p in panels_time],
            xlabel="time since packet 2001 was sent (s)",
            title="Figs. 4.16-4.17: the window of Reno and ST-PD over time, packets 2001-10000",
            caption="farlink sim, stpd-wireless-bursty with gilbert_packets, seed 1, ns-2-like TCP",
        ),
    ]
    pk, tm = PUBLISHED_READING, "in time"
    return Findings(
        rows=rows,
        notes=[
            "Published: Reno sends packets 2001-10000 between 18.1097 s and 322.0880 s, "
            "'normalised throughput is 0.14'; ST-PD 'is 0.96' (its start is printed as "
            "72.7079 s, after its end at 56.8467 s: an extraction error; 12.7079 s gives the "
            "stated 1.45 Mbit/s and 0.96, so that is the published span). One run each in the "
            f"thesis; here {len(BURSTY_SEEDS)} seeds of the channel.",
            "Normalised throughput as the thesis computes it: 8000 packets of 1000 bytes over "
            "the time between the first transmissions of packets 2001 and 10000, over "
            "1.5 Mbit/s.",
            "Two readings of the thesis's channel (docs/loss-models.md), both with mean burst "
            "8 packets and overall rate 1e-2: stepped per packet (gilbert_packets; the "
            "thesis's 'independent of time, packet index', and the only one under which Reno "
            "can stall for minutes waiting for timeouts as its Figure 4.16 shows: a "
            "retransmission is the next packet of the same burst), and in time (the preset's "
            "gilbert_elliott: a burst lasts 8 packet times and is over before any timeout). "
            "The published values sit beside the per-packet rows.",
            f"Per packet: Reno {stats[(pk, 'reno')][0]:.2f} (lowest seed "
            f"{stats[(pk, 'reno')][2]:.2f}), ST-PD {stats[(pk, 'stpd')][0]:.2f} (lowest "
            f"{stats[(pk, 'stpd')][2]:.2f}); in time: Reno {stats[(tm, 'reno')][0]:.2f}, ST-PD "
            f"{stats[(tm, 'stpd')][0]:.2f}. Disagreement: ST-PD stalls too when a burst "
            "swallows its retransmissions (it keeps the standard retransmission timer and its "
            "backoff, sec. 4.2), and after every timeout it reopens its window by about one "
            "segment per round trip (docs/stpd.md, 'Opening': no stable gains on eq. 3.5 reopen "
            "it faster than about 1.8); the thesis's single ST-PD run met no such "
            "stall. Reno's published 0.14 is one stall-dominated run; ours spread from "
            "stall-dominated to nearly free runs, so the mean says little and the lowest "
            "seeds are the thesis's kind of run.",
            "Uniform loss at the same rate (stpd-fig-4.8, p = 1e-2): the thesis has Reno 0.31 "
            "and ST-PD 0.95.",
            "Hybla, Westwood+, CUBIC and BBR are today's controllers run as deployed (SACK, "
            "timestamps, delayed ACKs; 948 bytes of payload per 1000-byte packet), counted by "
            "the same 1000-byte packets; SACK repairs a whole burst in one round trip, so "
            "they rarely time out.",
        ],
        figures=figures,
    )


# ---------------------------------------------------------------------------------------------
# Figures 4.19-4.22: one burst of two losses on a GEO T1 hop
# ---------------------------------------------------------------------------------------------

GEO_DURATION_S = 60.0
GEO_VARIANTS = ("tahoe", "reno", "newreno", "vegas", "stpd")
GEO_PIPE_PKTS = 94  # sec. 4.4.2: "the bandwidth-RTT_min product ... about 94 packets"
# The thesis's ns-2 agents bound the window by `window_`, which it does not state. Reno's window
# is "cut by half twice to around 33" (sec. 4.4.2), so it stood near 4 x 33 = 132 packets when
# the losses came, and packets, not the buffer, limited it: 128 packets is taken as the bound
# (estimated from that one statement; the delivered-segment counts are not fitted to).
NS2_WINDOW_PKTS = 128
DROP_2000_2001 = 'links[1].fwd.loss={model="drop_list", packets=[2000, 2001]}'


def _geo_run(variant: str):
    from farlink.sim import simulate

    sets, payload = _tcp_sets(variant)
    if variant not in MODERN_VARIANTS:
        sets = [*sets, f'flows[0].tcp.receive_buffer="{NS2_WINDOW_PKTS * NS2_PAYLOAD_BYTES}B"']
    return simulate("stpd-geo-t1", tcp=variant, sets=[*sets, DROP_2000_2001]), payload


@register(
    "stpd-fig-4.19-4.22",
    published="simulated",
    title="GEO T1 hop with the 2000th and 2001st packets lost: segments delivered in 60 s",
    source="seed 003, Figures 4.19-4.22 and section 4.4.2",
    engine="sim",
)
def fig_4_19_to_4_22(out_dir: Path) -> Findings:
    rows: list[Row] = []
    delivered = {}
    details = {}
    cwnd_panel, ack_panel = [], []
    for variant in (*GEO_VARIANTS, *MODERN_VARIANTS):
        result, payload = _geo_run(variant)
        flow = result.summary["flows"][0]
        delivered[variant] = flow["delivered_bytes"] / payload
        tw, w = window_steps(result, 0, payload)
        drops = result.trace("drops")
        corrupted = drops["time_ns"][drops["cause"] == 1] / 1e9
        loss_s = float(corrupted[0]) if len(corrupted) else float("nan")
        # The window the sender can use: ns-2's agents cap cwnd at window_.
        usable = np.minimum(w, NS2_WINDOW_PKTS) if variant not in MODERN_VARIANTS else w
        after = tw > loss_s
        # Back at the pipe: the first time the window is at least 94 after it first fell below
        # 94 following the losses.
        fell = tw[after & (usable < GEO_PIPE_PKTS)]
        back = tw[(usable >= GEO_PIPE_PKTS) & (tw > (fell[0] if len(fell) else np.inf))]
        window_at_loss = usable[max(np.searchsorted(tw, loss_s, side="right") - 1, 0)]
        details[variant] = {
            "loss_s": loss_s,
            "low_after_loss": float(usable[after & (tw < loss_s + 5.0)].min())
            if np.any(after & (tw < loss_s + 5.0))
            else float("nan"),
            "ssthresh_after": float(
                result.trace("cwnd")["ssthresh_bytes"][np.searchsorted(tw, loss_s + 5.0) - 1]
                / payload
            ),
            "regain_s": float(back[0] - loss_s) if len(back) else float("nan"),
            "window_at_loss": float(window_at_loss),
            "window_max": float(usable.max()),
            "queue_overflow": flow["drops"]["queue_overflow"],
            "timeouts": flow["timeouts"],
        }
        if variant in ("reno", "vegas", "stpd"):
            cwnd_panel.append((NAMES[variant], tw, usable))
            ack = result.trace("ack")
            ack_panel.append((NAMES[variant], ack["time_ns"] / 1e9, ack["ack"] / payload))
    gap = delivered["stpd"] - delivered["reno"]
    rows.append(Row("in-order segments: ST-PD minus Reno in 60 s", "segments", 1861.0, gap, 0.25))
    for variant in (*GEO_VARIANTS, *MODERN_VARIANTS):
        rows.append(
            Row(
                f"{NAMES[variant]}: in-order segments delivered in 60 s",
                "segments",
                None,
                delivered[variant],
            )
        )
    reno, stpd = details["reno"], details["stpd"]
    rows += [
        Row(
            "Reno: lowest usable window within 5 s of the losses",
            "packets",
            None,
            reno["low_after_loss"],
        ),
        Row(
            "Reno: ssthresh 5 s after the losses (seed: cut twice to around 33)",
            "packets",
            33.0,
            reno["ssthresh_after"],
            0.25,
        ),
        Row(
            "Reno: seconds from the losses to a window of 94 again (seed: more than 30)",
            "s",
            None,
            reno["regain_s"],
        ),
        Row(
            "ST-PD: lowest window within 5 s of the losses", "packets", None, stpd["low_after_loss"]
        ),
        Row(
            "ST-PD: window when the losses came (seed: about 95)",
            "packets",
            95.0,
            stpd["window_at_loss"],
            0.1,
        ),
        Row("ST-PD: largest window in 60 s", "packets", None, stpd["window_max"]),
        Row("ST-PD: time the 2000th packet was lost at R2", "s", None, stpd["loss_s"]),
        Row("Reno: time the 2000th packet was lost at R2", "s", None, reno["loss_s"]),
    ]
    figure = panels_figure(
        out_dir / "stpd-fig-4.19-4.22.png",
        panels=[("usable cwnd (packets)", cwnd_panel), ("acknowledged (segments)", ack_panel)],
        xlabel="time (s)",
        title="Figs. 4.19-4.22: GEO T1 (1.5 Mbps, 250 ms), packets 2000 and 2001 lost",
        caption=f"farlink sim, stpd-geo-t1 with drop_list [2000, 2001], ns-2-like TCP, window "
        f"at most {NS2_WINDOW_PKTS} packets",
    )
    return Findings(
        rows=rows,
        notes=[
            "Published (sec. 4.4.2): 'the number of in-order segments delivered by TCP Reno "
            "during the 60 seconds is 1861 segments less than those delivered by ST-PD TCP'; "
            "Reno's window is cut 'by half twice to around 33' and takes 'more than 30 "
            "seconds' to exceed 94 again; ST-PD's window stays 'around the bandwidth-RTT_min "
            "product plus one'.",
            f"Disagreement: here ST-PD delivers {delivered['stpd']:.0f} segments and Reno "
            f"{delivered['reno']:.0f}: ST-PD is behind, not 1861 ahead. The two losses cost "
            f"ST-PD little (its window dips from {stpd['window_at_loss']:.1f} to "
            f"{stpd['low_after_loss']:.1f} packets and grows on; {stpd['timeouts']} "
            "timeouts), but "
            "its opening does: with no slow start its window grows about one segment per "
            f"round trip (docs/stpd.md), so it stands at {stpd['window_at_loss']:.1f} "
            f"packets when the 2000th packet is lost at {stpd['loss_s']:.1f} s and at most "
            f"{stpd['window_max']:.1f} in the whole minute, below the 94-packet pipe, while "
            "Reno's slow start fills the pipe in about 4 s. "
            "The thesis's text for Figure 4.21 keeps ST-PD's window 'around the "
            "bandwidth-RTT_min product plus one', and its 1861-segment lead means it fell "
            "short of a full pipe by little more than Reno's slow start did: it opened faster "
            "than any gains that leave eq. 3.5's loop stable can (at most about 1.8 segments "
            "per round trip on an empty queue, docs/stpd.md 'Opening'). The text describes no "
            "start-up phase (the flow chart, Figure 3.6, did not survive; the Linux version "
            "replaced the kernel's congestion control routines), so none is added.",
            f"Reno: the first loss halves the window to 64; the second cannot be repaired by "
            f"fast retransmit (the 128-packet window is full of packets the receiver holds "
            f"out of order, so no new segments raise duplicate ACKs) and Reno times out "
            f"({reno['timeouts']} timeout). RFC 5681 then sets ssthresh from the flight size "
            f"({reno['ssthresh_after']:.1f}), where ns-2 halves the window once more (to "
            "32-33, the thesis's 'around 33'), so Reno recovers faster here than in the "
            "thesis; this narrows the Reno-ST-PD gap too.",
            f"The window bound of {NS2_WINDOW_PKTS} packets for the seed's variants is "
            "estimated from Reno's 'around 33' (see the module); the bottleneck queue (100 "
            "packets) is not given in the thesis. Today's controllers run as deployed with a "
            "1 MiB receive buffer: their slow start overflows the queue "
            + ", ".join(f"{NAMES[v]} {details[v]['queue_overflow']}" for v in MODERN_VARIANTS)
            + " packets, losses the seed's scenario does not have.",
        ],
        figures=[figure],
    )


# ---------------------------------------------------------------------------------------------
# Section 5.4: the Linux testbed
# ---------------------------------------------------------------------------------------------

# (bit rate of the serial line, one-way delay, packet error ratio, published Reno, ST-PD).
# Sec. 5.4.2 gives the lossy transfer times ("more than" for Reno); sec. 5.4.1 gives none for
# the lossless links, only that ST-PD took less time in all three.
TESTBED_CASES = [
    (115_200, "0ms", 0.0, None, None),
    (38_400, "80ms", 0.0, None, None),
    (38_400, "250ms", 0.0, None, None),
    (38_400, "80ms", 1e-2, 47.0, 43.0),
    (38_400, "80ms", 1e-1, 74.0, 60.0),
    (38_400, "250ms", 1e-2, 65.0, 49.0),
    (38_400, "250ms", 1e-1, 180.0, 90.0),
]
# "Sending 8-bit data over the serial link actually requires transmitting 10 bits".
BITS_PER_BYTE_ON_THE_LINE = 10
TESTBED_SEEDS = range(1, 9)


def testbed_sets(line_bps: int, delay: str, per: float, loss: str) -> list[str]:
    """The overrides that make preset ``stpd-testbed`` one case of sec. 5.4: the serial line's
    rate and delay, and packet errors in both directions (``loss``: ``lcg`` as the thesis's
    emulator, or ``bernoulli``)."""
    effective_bps = line_bps * 8 // BITS_PER_BYTE_ON_THE_LINE
    sets = [f'links[1].rate="{effective_bps}bps"', f'links[1].delay="{delay}"']
    if per > 0 and loss == "lcg":
        # The emulator: one LCG(16807, 0, 2^31 - 1) per direction, x0 = 1 (sec. 5.3.3).
        sets += [
            f'links[1].fwd.loss={{model="lcg16807", rate={per}}}',
            f'links[1].rev.loss={{model="lcg16807", rate={per}}}',
        ]
    elif per > 0:
        sets += [
            f'links[1].fwd.loss={{model="bernoulli", p={per}}}',
            f'links[1].rev.loss={{model="bernoulli", p={per}}}',
        ]
    return sets


def _testbed_run(variant: str, line_bps: int, delay: str, per: float, loss: str, seed: int = 1):
    from farlink.sim import simulate

    sets = testbed_sets(line_bps, delay, per, loss)
    return simulate("stpd-testbed", tcp=variant, seed=seed, sets=[*sets, "trace={}"])


def _transfer_time(result) -> float:
    t = result.summary["flows"][0]["transfer_time_s"]
    return float("nan") if t is None else float(t)


@register(
    "stpd-testbed-5.4",
    published="measured",
    title="Testbed: 100,000 bytes over a 38.4 kbps serial link with delay and packet errors",
    source="seed 003, sections 5.3 and 5.4, Figures 5.11-5.26",
    engine="sim",
)
def testbed_5_4(out_dir: Path) -> Findings:
    rows: list[Row] = []
    table = {}
    for line_bps, delay, per, pub_reno, pub_stpd in TESTBED_CASES:
        case = f"{line_bps / 1000:g} kbps, {delay}, PER {per:g}"
        for variant, published in (("reno", pub_reno), ("stpd", pub_stpd)):
            emulator = _transfer_time(_testbed_run(variant, line_bps, delay, per, "lcg"))
            label = f"{NAMES[variant]}, {case}"
            bound = " (seed: more than)" if variant == "reno" and published else ""
            rows.append(
                Row(
                    f"{label}: transfer time, emulator's LCG{bound}",
                    "s",
                    published,
                    emulator,
                    0.25 if published else None,
                )
            )
            if per > 0:
                runs = [
                    _transfer_time(_testbed_run(variant, line_bps, delay, per, "bernoulli", seed))
                    for seed in TESTBED_SEEDS
                ]
                rows.append(
                    Row(
                        f"{label}: transfer time, mean of {len(TESTBED_SEEDS)} Bernoulli seeds "
                        f"(range {min(runs):.1f}-{max(runs):.1f})",
                        "s",
                        None,
                        float(np.mean(runs)),
                    )
                )
                table[(variant, line_bps, delay, per)] = (emulator, float(np.mean(runs)))
            else:
                table[(variant, line_bps, delay, per)] = (emulator, emulator)
    # Sec. 5.4.1, second set: a second 100,000-byte transfer from H2 joins 20 s later over a
    # 38.4 kbps 180 ms link. Reno: "108 seconds and ... 80 seconds"; ST-PD: "both ... around 65
    # seconds".
    two = {v: _two_connections(v) for v in ("reno", "stpd")}
    for variant, published in (("reno", (108.0, 80.0)), ("stpd", (65.0, 65.0))):
        for k, who in enumerate(("H1-H3 (from 0 s)", "H2-H3 (from 20 s)")):
            rows.append(
                Row(
                    f"{NAMES[variant]}, two connections, 38.4 kbps, 180ms: {who} transfer time",
                    "s",
                    published[k],
                    two[variant][k],
                    0.25,
                )
            )
    lossy = [c for c in TESTBED_CASES if c[2] > 0]
    figure = line_figure(
        out_dir / "stpd-testbed-5.4.png",
        x=np.arange(len(lossy)),
        curves=[
            (
                f"{NAMES[v]} (farlink sim, emulator's LCG)",
                np.array([table[(v, c[0], c[1], c[2])][0] for c in lossy]),
            )
            for v in ("reno", "stpd")
        ],
        points=[
            ("seed 003: Reno (more than)", np.arange(len(lossy)), np.array([c[3] for c in lossy])),
            ("seed 003: ST-PD (around)", np.arange(len(lossy)), np.array([c[4] for c in lossy])),
        ],
        xlabel="case: " + "; ".join(f"{i}: {c[1]}, PER {c[2]:g}" for i, c in enumerate(lossy)),
        ylabel="transfer time of 100,000 bytes (s)",
        title="Sec. 5.4.2: 38.4 kbps serial link (10 bits per byte), 152-byte packets",
        caption="farlink sim, stpd-testbed; errors in both directions, one LCG per direction",
    )
    return Findings(
        rows=rows,
        notes=[
            "Published (sec. 5.4.2): ST-PD took 'around' 43, 60, 49 and 90 s (80 ms at 1e-2 and "
            "1e-1, 250 ms at 1e-2 and 1e-1) and Reno 'more than' 47, 74, 65 and 180 s; for "
            "Reno these are lower bounds, entered as the published value. No times are given "
            "for the lossless links (sec. 5.4.1), only that ST-PD took less time in each.",
            "The 10 bits per byte of the serial line (start bit, 8 data bits, stop bit) are "
            "modelled as a link of 8/10 of the line rate for 8-bit bytes: 30.72 kbit/s for "
            "38.4 kbps, 92.16 kbit/s for 115.2 kbps; the transmission times equal the "
            "seed's (13.194 ms for 152 bytes at 115.2 kbps). At most 3840 bytes/s cross, so "
            "the 1000 packets of 152 bytes take 39.6 s at best.",
            "Packet errors in both directions at the stated ratio, one generator per "
            "direction as in the emulator (sec. 5.3.3), both LCG(16807, 0, 2^31 - 1) from "
            "x0 = 1, the only seed the thesis gives; the emulator's rows are one run, like "
            "the thesis's. The Bernoulli rows show how much one run depends on where the "
            "errors fall.",
            "Two connections (sec. 5.4.1): Reno's first connection took 108 s and the second, "
            "started 20 s later, 80 s; ST-PD's both about 65 s. Here Reno "
            f"{two['reno'][0]:.1f} and {two['reno'][1]:.1f} s, ST-PD {two['stpd'][0]:.1f} and "
            f"{two['stpd'][1]:.1f} s: under ST-PD the connection that joins later takes the "
            "larger share and the first one finishes late (the RTT_min bias of a connection "
            "that starts on a queue, as in stpd-fig-3.15-3.17).",
            "At 250 ms and PER 0.1 ST-PD takes "
            f"{table[('stpd', 38_400, '250ms', 0.1)][0]:.1f} s with the emulator's LCG, not "
            "about 90: after each timeout its window reopens by about one segment per round "
            "trip of 0.6 s towards the 15-packet pipe, and no gains that leave eq. 3.5's loop "
            "stable reopen it faster than about 1.8 (docs/stpd.md, 'Opening'); the thesis "
            "describes no other way to reopen.",
            "TCP as the testbed's Linux 2.2.17 (preset stpd-testbed): 100-byte payload with "
            "timestamps, no SACK, an ACK per segment, minimum RTO 200 ms, 31,900-byte window; "
            "the queue at H2 (30 packets) and the initial window (2) are not given.",
        ],
        figures=[figure],
    )


def _two_connections(variant: str) -> tuple[float, float]:
    """Transfer times of H1-H3 from 0 s and H2-H3 from 20 s over 38.4 kbps, 180 ms."""
    from farlink.scenario import load_scenario
    from farlink.sim import simulate

    doc = load_scenario("stpd-testbed")
    second = copy.deepcopy(doc["flows"][0])
    second.update({"name": "h2-h3", "from": "H2", "start": "20s"})
    doc["flows"].append(second)
    result = simulate(doc, tcp=variant, sets=['links[1].delay="180ms"', "trace={}"])
    first, late = (_flow_time(f) for f in result.summary["flows"])
    return first, late


def _flow_time(flow) -> float:
    t = flow["transfer_time_s"]
    return float("nan") if t is None else float(t)
