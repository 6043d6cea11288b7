"""Seed 003 (ST-PD TCP thesis) reproduced on the packet engine.

Figure 4.8: normalised throughput of TCP against the packet error probability of the wireless
link of Figure 4.7 (preset ``stpd-wireless``), uniform losses. The thesis ran ns-2; its TCP agents
differ from a modern stack, so the reproduction sets what the thesis's setting implies and says
what it assumes: one ACK per segment (ns-2's TCPSink), an initial window of one segment, neither
SACK nor timestamps, window growth per ACK. The minimum RTO is 1 s (RFC 6298), which the thesis
does not state.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from farlink.models import pftk_full_throughput
from farlink.reports.plots import line_figure
from farlink.reproduce import Findings, Row, register

LOSS_RATES = [1e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1]
SEEDS = range(1, 6)
# The seed's four (loss recovery tahoe/reno; controllers vegas, stpd) and today's controllers.
SEED_VARIANTS = ("tahoe", "reno", "vegas", "stpd")
MODERN_VARIANTS = ("hybla", "westwood", "cubic", "bbr")
VARIANTS = SEED_VARIANTS + MODERN_VARIANTS
# The seed normalises by the link's packet rate: 1000-byte packets carrying 960 bytes of payload
# here (no timestamps), so goodput over 1.5 Mbps is scaled by 1000/960.
PACKET_OVER_PAYLOAD = 1000 / 960
DURATION = "100s"
NS2_LIKE_TCP = [
    "flows[0].tcp.delayed_ack=false",
    "flows[0].tcp.initial_window_segments=1",
    "flows[0].tcp.sack=false",
    "flows[0].tcp.timestamps=false",
    'flows[0].tcp.growth="per-ack"',
    'flows[0].tcp.receive_buffer="1MiB"',
]
# Today's controllers run as deployed: SACK recovery, timestamps and delayed ACKs (the preset's
# TCP defaults), with the same receive buffer.
MODERN_TCP = ["flows[0].tcp.sack=true", 'flows[0].tcp.receive_buffer="1MiB"']
# Seed 003 section 4.4.1.1: at 1e-2 "ST-PD TCP can achieve 94 percent of the maximum throughput,
# while the throughput of TCP Vegas has dropped to below 50 percent ... and the throughput of TCP
# Reno and TCP Tahoe has dropped to around 30 percent"; at 0.1 "ST-PD TCP can still retain 40
# percent ... while the throughput of Vegas, Reno and Tahoe is well below 10 percent". Only the
# point values are published values; the bounds are checked in the notes and tests.
PUBLISHED = {
    ("tahoe", 1e-2): 0.30,
    ("reno", 1e-2): 0.30,
    ("stpd", 1e-2): 0.94,
    ("stpd", 1e-1): 0.40,
}


def _mean_normalised_goodput(variant: str, p: float) -> tuple[float, float]:
    from farlink.sim import simulate

    values = [
        simulate(
            "stpd-wireless",
            tcp=variant,
            loss=p,
            duration=DURATION,
            seed=seed,
            sets=[*(NS2_LIKE_TCP if variant in SEED_VARIANTS else MODERN_TCP), "trace={}"],
        ).summary["normalized_goodput"]
        * PACKET_OVER_PAYLOAD
        for seed in SEEDS
    ]
    return float(np.mean(values)), float(np.std(values))


@register(
    "stpd-fig-4.8",
    published="simulated",
    title="Normalised throughput of TCP variants against the wireless packet error rate",
    source="seed 003, Figure 4.8 and section 4.4.1.1",
    engine="sim",
)
def fig_4_8(out_dir: Path) -> Findings:
    rows = []
    curves = []
    for variant in VARIANTS:
        means = []
        for p in LOSS_RATES:
            mean, std = _mean_normalised_goodput(variant, p)
            means.append(mean)
            published = PUBLISHED.get((variant, p))
            tolerance = 0.25 if published is not None else None
            rows.append(
                Row(f"{variant}, p = {p:g} (sd {std:.3f})", "of max", published, mean, tolerance)
            )
        curves.append((f"{variant} (farlink sim, mean of {len(SEEDS)} seeds)", np.array(means)))
    from farlink.models import stpd as transient

    p = np.array(LOSS_RATES)
    curves.append(
        (
            "ST-PD transient model (eq. 4.19, m = 3, kp 0.368, kd 0.033)",
            np.asarray(transient.normalised_throughput(p, 3, 0.368, 0.033)),
        )
    )
    # PFTK with the preset's base RTT (2 x 80.1 ms plus serialisation) and T0 = 1 s, b = 1.
    rtt_s = 2 * 80.1e-3 + 1000 * 8 / 1.5e6 + 1000 * 8 / 10e6
    pftk = pftk_full_throughput(p, rtt_s, 1.0, 1, 61.0) * 1000 * 8 / 1.5e6
    curves.append(("PFTK full model (b = 1, T0 = 1 s, Wmax = 61)", np.minimum(pftk, 1.0)))
    figure = line_figure(
        out_dir / "stpd-fig-4.8.png",
        x=p,
        curves=curves,
        points=[
            ("seed 003: Tahoe, Reno about 0.3", np.array([1e-2]), np.array([0.3])),
            ("seed 003: ST-PD", np.array([1e-2, 1e-1]), np.array([0.94, 0.40])),
        ],
        xlabel="packet error probability of the wireless link",
        ylabel="normalised throughput",
        title="Fig. 4.8: S-R 10 Mbps 0.1 ms, R-D 1.5 Mbps 80 ms, 30-packet buffer, uniform loss",
        ylim=(0.0, 1.05),
        caption=f"farlink sim, {DURATION} per run; ns-2-like TCP: 1 ACK per segment, IW 1, "
        "no SACK, no timestamps, min RTO 1 s",
        logx=True,
    )
    ours = {(r.label.split(",")[0], r.label.split("p = ")[1].split(" ")[0]): r.ours for r in rows}
    seed_four_at_tenth = ", ".join(
        f"{v} {ours[(v, '0.1')]:.3f}" for v in ("tahoe", "reno", "vegas")
    )
    return Findings(
        rows=rows,
        notes=[
            "Published points are read from the text of section 4.4.1.1 (the figure did not "
            "survive): ST-PD 0.94 at 1e-2 and 0.40 at 0.1; Tahoe and Reno about 0.3 at 1e-2; "
            f"Vegas below 0.5 at 1e-2 (farlink: {ours[('vegas', '0.01')]:.3f}); Tahoe, Reno and "
            f"Vegas well below 0.1 at 0.1 (farlink: {seed_four_at_tenth}).",
            "Normalised as the seed does, by the link's packet rate (1000-byte packets): "
            "farlink's goodput over 1.5 Mbps times 1000/960.",
            "ST-PD at 0.1 stays far below the published 0.40: with an empty queue its window "
            "grows about one segment per round trip after each of the frequent timeouts "
            "(docs/stpd.md, 'Opening'); no gains that leave eq. 3.5's loop stable grow it "
            "faster than about 1.8, and the thesis describes no other way to reopen; nothing "
            "was tuned to close the gap.",
            "Hybla without pacing sends its fast window growth in bursts that overflow the "
            f"30-packet buffer even without wireless loss ({ours[('hybla', '0.0001')]:.2f} at "
            "1e-4); see "
            "docs/congestion-control.md.",
            "Hybla, Westwood+, CUBIC and BBR are today's controllers, added beside the seed's "
            "four and run as deployed: SACK recovery, timestamps, delayed ACKs (payload 948 of "
            "1000 bytes, so their ceiling here is 0.9875 after the 1000/960 scaling).",
            "The seed's four assume ns-2-like TCP (one ACK per segment, initial window 1, no "
            "SACK, no timestamps, per-ACK growth), farlink's default Limited Transmit and a 1 s "
            "minimum RTO; the tolerance of 25 % "
            "on the published points reflects that the thesis gives rounded readings of a "
            "figure, not measurements.",
        ],
        figures=[figure],
    )
