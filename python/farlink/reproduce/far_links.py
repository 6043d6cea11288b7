"""Seed 000's Iridium measurements beside the packet engine's bundle presets.

The presets ``iridium-greenland-8`` and ``iridium-N`` are built from the seeds' parameters, with
the few values the seeds do not give estimated in ``docs/far-links.md`` (each from one
measurement and checked on another). Nothing here is tuned: these reproductions run the presets
as shipped and print the field measurements beside the simulated means over a few seeds.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from farlink.models.iridium import bundle_full_uptime, fit_redial_time_s
from farlink.reproduce import Findings, Row, register
from farlink.sim import simulate

SEEDS = (1, 2, 3, 4)
# The engine issue asks the Table 6.1/6.2 reproductions for the mean of at least eight seeds.
TABLE_SEEDS = tuple(range(1, 9))

# Seed 000 Table 6.1: file MB -> (measured, predicted) minutes, eight links.
TABLE_6_1 = {"1.38": (11, 12.5), "5.62": (46, 51), "20.6": (180, 187), "35.7": (315, 324)}
# Seed 000 Table 6.2: links -> (file MB, measured, predicted) minutes.
TABLE_6_2 = {
    3: ("4.82", 96, 98.1),
    4: ("0.85", 15, 13.4),
    5: ("1.91", 21, 24.1),
    6: ("1.39", 13, 15.4),
    7: ("3.40", 30, 33.2),
    8: ("1.40", 12, 12.7),
}
# Seed 001 slides 17 and 18: hours -> (full capacity %, at least one modem %, bundle outages).
UPTIME_TESTS = {12: (89, 98, 4), 32: (85, 96, 24)}

NO_TRACES = "trace={}"


def _transfer_times_min(
    preset: str, size: str, seeds, duration: str = "12h", sets: tuple[str, ...] = ()
) -> np.ndarray:
    """Transfer time (min) of a bulk transfer of ``size`` per seed; NaN where unfinished."""
    times = []
    for seed in seeds:
        result = simulate(preset, size=size, seed=seed, duration=duration, sets=[*sets, NO_TRACES])
        flow = result.summary["flows"][0]
        times.append(flow["transfer_time_s"] / 60 if flow["finished"] else np.nan)
    return np.array(times)


@register(
    "zaghloul-table-6.1-sim",
    published="measured",
    title="Transfers over eight Iridium modems with call drops, simulated (iridium-greenland-8)",
    source="seed 000, Table 6.1",
    engine="sim",
)
def table_6_1_sim(out_dir: Path) -> Findings:
    rows = []
    notes = []
    for size, (measured, predicted) in TABLE_6_1.items():
        times = _transfer_times_min("iridium-greenland-8", f"{size}MB", TABLE_SEEDS)
        label = f"{size} MB, measured in the field"
        rows.append(Row.over_seeds(label, "min", measured, times, 0.2))
        notes.append(f"{size} MB: eq. 36 predicted {predicted} min (Table 6.1).")
    notes.append(
        "Simulated: the iridium-greenland-8 preset as shipped (KUMICS primary modem, call drops "
        f"1/50 min per modem), mean over seeds {TABLE_SEEDS[0]}-{TABLE_SEEDS[-1]}. The field "
        "column is one transfer each."
    )
    return Findings(rows=rows, notes=notes)


@register(
    "zaghloul-table-6.2-sim",
    published="measured",
    title="Transfers over 3 to 8 Iridium modems with call drops, simulated (iridium-N)",
    source="seed 000, Table 6.2",
    engine="sim",
)
def table_6_2_sim(out_dir: Path) -> Findings:
    rows = []
    notes = []
    for n, (size, measured, predicted) in TABLE_6_2.items():
        times = _transfer_times_min(f"iridium-{n}", f"{size}MB", TABLE_SEEDS)
        rows.append(Row.over_seeds(f"{n} links, {size} MB, measured", "min", measured, times, 0.2))
        notes.append(f"{n} links: eq. 36 predicted {predicted} min.")
    notes.append(
        "Simulated: the iridium-N presets as shipped (no primary link, as the chapter 6 model), "
        f"mean over seeds {TABLE_SEEDS[0]}-{TABLE_SEEDS[-1]}; each field time is a single "
        "transfer of a few call drops, so a field value far from the mean is not surprising."
    )
    return Findings(rows=rows, notes=notes)


@register(
    "zaghloul-sec-4.1.6-sim",
    published="measured",
    title="Loaded RTT and efficiency of an eight-modem Iridium bundle, simulated",
    source="seed 000, section 4.1.6 and Figure 4.6; seed 001, slide 14",
    engine="sim",
)
def sec_4_1_6_sim(out_dir: Path) -> Findings:
    rtts, efficiency = [], []
    for seed in SEEDS:
        result = simulate(
            "iridium-greenland-8",
            duration="1h",
            seed=seed,
            sets=[
                'links[0].bundle.call_drop_rate="0/min"',
                'flows[0].app={kind="unbounded"}',
                "trace={rtt=true}",
            ],
        )
        rtt = result.trace("rtt")
        loaded = rtt["rtt_ns"][rtt["time_ns"] > 600e9] / 1e9
        rtts.append(float(loaded.mean()))
        efficiency.append(result.summary["flows"][0]["goodput_bps"] / (8 * 2400))
    with_drops = {}
    for cc in ("bic", "cubic", "reno"):
        means = []
        for seed in SEEDS:
            result = simulate(
                "iridium-greenland-8",
                duration="2h",
                seed=seed,
                sets=[f'flows[0].tcp.cc="{cc}"', "trace={rtt=true}"],
            )
            means.append(float(result.trace("rtt")["rtt_ns"].mean() / 1e9))
        with_drops[cc] = float(np.mean(means))
    loaded_rtt = float(np.mean(rtts))
    return Findings(
        rows=[
            Row(
                "mean TCP RTT under load, thesis's Q_P T_MP",
                "s",
                19.5,
                loaded_rtt,
                0.1,
                published_kind="predicted",
            ),
            Row("mean TCP RTT under load, measured (Figure 4.6)", "s", 21.0, loaded_rtt, 0.1),
            Row("mean TCP RTT, 2 h with call drops, BIC", "s", 21.0, with_drops["bic"], 0.1),
            Row("mean TCP RTT, 2 h with call drops, CUBIC", "s", None, with_drops["cubic"]),
            Row("mean TCP RTT, 2 h with call drops, Reno", "s", None, with_drops["reno"]),
            Row(
                "throughput efficiency without call drops",
                "%",
                95.0,
                100 * float(np.mean(efficiency)),
                0.05,
            ),
        ],
        notes=[
            "Under load: no call drops, an unbounded transfer, RTT samples after the first 10 "
            f"minutes; mean over seeds {', '.join(map(str, SEEDS))}. The RTT is not fitted: it "
            "follows from 5 s of clocking per 1500-byte packet, the transmit queue of 3 per "
            "modem, the 47.9 KB window and the ARQ (docs/far-links.md). The frame error rate "
            "was estimated from the 95 % efficiency (seed 001 slide 14), so that row is a "
            "consistency check only.",
            "With call drops: the preset as shipped for two hours, every RTT sample. Each call "
            "drop ends in a timeout and the window restarts from one segment; BIC (the "
            "presets' controller, Linux 2.6's default) and CUBIC regain the window in a few "
            "round trips, Reno in minutes, which shortens its mean RTT. Figure 4.6's 21 s (sd "
            "8.7 s) was measured over a file transfer in the laboratory.",
        ],
    )


def _uptime(hours: int, seed: int) -> tuple[float, float, int]:
    result = simulate(
        "iridium-greenland-8",
        duration=f"{hours}h",
        seed=seed,
        sets=['flows[0].app={kind="telnet", mean_interval="10min"}', NO_TRACES],
    )
    bundle = result.summary["links"][0]["bundle"]
    return 100 * bundle["all_up_fraction"], 100 * bundle["any_up_fraction"], bundle["outages"]


@register(
    "field-uptime",
    published="measured",
    title="Uptime of the eight-modem KUMICS bundle in the 12-h and 32-h field tests, simulated",
    source="seed 001, slides 17 and 18; seed 000, section 7.6 and Figure 7.14",
    engine="sim",
)
def field_uptime(out_dir: Path) -> Findings:
    beta, detection, t_d = 1 / 3000, 30.0, 30.0
    full_12, _, _ = UPTIME_TESTS[12]
    redial = float(fit_redial_time_s(full_12 / 100, 8, beta, detection))
    rows = [
        Row("redial time fitted on the 12-h test (T_d + dial)", "s", None, redial),
        Row("dial time (redial less T_d = 30 s)", "s", None, redial - t_d),
    ]
    for hours, (full, any_up, outages) in UPTIME_TESTS.items():
        runs = [_uptime(hours, seed) for seed in SEEDS[:2]]
        rows.append(
            Row(
                f"{hours}-h test: full capacity",
                "%",
                full,
                float(np.mean([r[0] for r in runs])),
                0.05,
            )
        )
        rows.append(
            Row(
                f"{hours}-h test: at least one modem",
                "%",
                any_up,
                float(np.mean([r[1] for r in runs])),
                0.03,
            )
        )
        rows.append(
            Row(
                f"{hours}-h test: bundle outages",
                "count",
                outages,
                float(np.mean([r[2] for r in runs])),
            )
        )
    model_full = 100 * float(bundle_full_uptime(8, beta, detection, redial))
    return Findings(
        rows=rows,
        notes=[
            "Fitted: R such that A^8 = 0.89 with A = (1/beta + T_L)/(1/beta + T_L + R), beta = "
            "1/50 min, T_L = 30 s (docs/far-links.md); the preset rounds the dial time to 14.5 s. "
            f"The formula gives {model_full:.1f} % full capacity for any test length, so the "
            "32-hour test (85 %) is a check it was not fitted to.",
            "Simulated: iridium-greenland-8 with a sparse telnet flow so the run lasts the test, "
            f"mean over seeds {SEEDS[0]} and {SEEDS[1]}. The primary modem makes every primary "
            "call drop a bundle outage; the field saw fewer but longer outages (4 in 12 h, 24 in "
            "32 h, about 3.5 min each), which neither the fit nor the state machine's timers "
            "reproduce.",
            "Seed 000 section 7.6 prints 87 % and 97 % for what seems the same 12-hour test; "
            "fitted on 87 % the redial would be 53 s.",
        ],
    )


# Seed 001 slide 9 (summer 2003, iperf and ttcp, averages of five runs) and slide 15 (summer 2004,
# FTP uploads of 1.38-55.23 MB between the field camp and KU: "Average throughput for FTP upload of
# large files was observed to be 15.38 Kbps").
FIELD_THROUGHPUT_KBPS = {1: 2.1, 2: 4.25, 3: 6.88, 4: 9.26}
FIELD_FTP_8_KBPS = 15.38


def _goodput_kbps(preset: str) -> list[float]:
    """Goodput (kbit/s) of two hours of ``preset``, one per seed."""
    return [
        simulate(preset, duration="2h", seed=seed, sets=[NO_TRACES]).summary["goodput_bps"] / 1000
        for seed in TABLE_SEEDS
    ]


@register(
    "field-throughput",
    published="measured",
    title="Throughput of 1 to 4 Iridium modems, and of eight with call drops, simulated",
    source="seed 001, slides 9 and 15",
    engine="sim",
)
def field_throughput(out_dir: Path) -> Findings:
    rows = [
        Row.over_seeds(
            f"{n} modem{'s' if n > 1 else ''}", "kbps", kbps, _goodput_kbps(f"iridium-{n}"), 0.15
        )
        for n, kbps in FIELD_THROUGHPUT_KBPS.items()
    ]
    rows.append(
        Row.over_seeds(
            "8 modems, large FTP uploads with call drops",
            "kbps",
            FIELD_FTP_8_KBPS,
            _goodput_kbps("iridium-greenland-8"),
            0.15,
        )
    )
    return Findings(
        rows=rows,
        notes=[
            "Simulated: the presets as shipped (iridium-N for 1-4 modems, iridium-greenland-8 "
            "with the KUMICS primary modem for eight), an unbounded transfer for 2 h with call "
            f"drops at 1/50 min per modem, mean over seeds {TABLE_SEEDS[0]}-{TABLE_SEEDS[-1]}.",
            "The 2003 figures are averages of five iperf/ttcp runs whose durations the slides do "
            "not give; the 2004 figure is the mean over seven FTP uploads of 1.38-55.23 MB.",
        ],
    )


def _fig_6_4_model(beta_per_min):
    """Eq. 36 with Figure 6.4's caption (RTT 18.2 s, p = 5e-4) and Table 6.2's six-link values."""
    from farlink.models import calldrop_prediction

    prediction = calldrop_prediction(
        size_bytes=10e6,
        n_links=6,
        rtt_s=18.2,
        p=5e-4,
        beta_per_s=np.asarray(beta_per_min) / 60,
        t0_s=60.0,
        mss_bytes=1448,
        wmax_bytes=34.7e3,
    )
    return np.asarray(prediction.transfer_time_s) / 60


# Seed 000 Figure 6.4: 10 MB over six modems in the laboratory at call-drop rates of 1/52 min
# (Iridium's own), 1/30 and 1/20 min per modem; RTT 18.2 s, p = 5e-4 in the caption.
FIG_6_4_MINUTES_BETWEEN_DROPS = (52, 30, 20)


@register(
    "zaghloul-fig-6.4",
    published="predicted",
    title="10 MB over six Iridium modems against the call-drop rate: simulated and eq. 36",
    source="seed 000, Figure 6.4 and section 6.3",
    engine="sim",
)
def fig_6_4(out_dir: Path) -> Findings:
    from farlink.reports.plots import line_figure

    rows = []
    medians, lower, upper = [], [], []
    for minutes in FIG_6_4_MINUTES_BETWEEN_DROPS:
        times = _transfer_times_min(
            "iridium-6",
            "10MB",
            TABLE_SEEDS,
            duration="24h",
            sets=(f'links[0].bundle.call_drop_rate="1/{minutes}min"',),
        )
        q25, q50, q75 = np.nanpercentile(times, [25, 50, 75])
        medians.append(q50)
        lower.append(q25)
        upper.append(q75)
        rows.append(Row(f"1/{minutes} min: mean", "min", None, float(np.nanmean(times))))
        rows.append(Row(f"1/{minutes} min: 25th-75th percentile", "min", None, float(q75 - q25)))
        rows.append(
            Row(f"1/{minutes} min: eq. 36", "min", None, float(_fig_6_4_model(1 / minutes)))
        )
    beta_per_min = 1 / np.linspace(15.0, 60.0, 46)
    model_min = _fig_6_4_model(beta_per_min)
    x = 1 / np.array(FIG_6_4_MINUTES_BETWEEN_DROPS, dtype=float)
    figure = line_figure(
        out_dir / "zaghloul-fig-6.4.png",
        x=beta_per_min,
        curves=[("eq. 36 (RTT 18.2 s, p 5e-4, T0 60 s, Wmax 34.7 KB)", model_min)],
        points=[
            ("simulated median (iridium-6)", x, np.array(medians)),
            ("simulated 25th percentile", x, np.array(lower)),
            ("simulated 75th percentile", x, np.array(upper)),
        ],
        xlabel="call drops per minute per modem, beta",
        ylabel="transfer time of 10 MB (min)",
        title="Fig. 6.4: 10 MB over six Iridium modems",
        caption=f"farlink sim, seeds {TABLE_SEEDS[0]}-{TABLE_SEEDS[-1]} per rate; eq. 36",
    )
    return Findings(
        rows=rows,
        notes=[
            "The figure's measured means survive only as a plot (eight transfers per rate, error "
            "bars at the 25th and 75th percentiles), so no published number is compared; the "
            "text says the higher rate 'leads to an exponential increase in TCP transfer "
            "latency' and that the model agrees with the measured means.",
            "The simulated transfer time rises less steeply with the drop rate than eq. 36 "
            f"({rows[0].ours:.0f} to {rows[-3].ours:.0f} min against {rows[2].ours:.0f} to "
            f"{rows[-1].ours:.0f}). Likely causes, not yet separated: the simulated timeout after "
            "a drop follows the measured RTT variance rather than the model's fixed T0 = 60 s, "
            "and the presets' BIC regains the window in a few round trips where eq. 36 "
            "charges a full timeout sequence per drop. Nothing was tuned.",
            "Simulated: the iridium-6 preset (no primary link) with the call-drop rate set per "
            f"point, seeds {TABLE_SEEDS[0]}-{TABLE_SEEDS[-1]}; the model uses the caption's RTT "
            "18.2 s and p = 5e-4 with Table 6.2's T0 = 60 s and Wmax 34.7 KB for six links.",
        ],
        figures=[figure],
    )


# Seed 000 Figure 5.1: "Experiment on 7/17 of a 33 min file transfer using IPERF from Greenland to
# ITTC at the University of Kansas", a tcptrace time-sequence graph with the call drops drawn as
# vertical lines; the text (section 5.2) reports "a strong correlation between call drops and
# timeouts" and that "timeouts due to link errors were negligible".
FIG_5_1_DURATION = "33min"
FIG_5_1_SEED = 1
# A timeout "follows" a call drop when it comes within this time after it: the 30 s detection
# delay of the preset plus about one RTO of the loaded bundle (RTT about 20 s).
FOLLOWS_WITHIN_S = 60.0
FIG_5_1_TRACES = "trace={seq=true,ack=true,rtt=true,member_state=true}"


def _iperf_run(seed: int):
    from farlink.captures.simulated import analyze_result, call_drop_times_s

    result = simulate(
        "iridium-greenland-8",
        duration=FIG_5_1_DURATION,
        seed=seed,
        sets=['flows[0].app={kind="unbounded"}', FIG_5_1_TRACES],
    )
    (conn,) = analyze_result(result)
    return result, conn, call_drop_times_s(result)


def _follow_counts(
    drops_s: np.ndarray, timeouts_s: np.ndarray, skip_s: float, within_s: float = FOLLOWS_WITHIN_S
) -> tuple[int, int]:
    """Call drops followed by a timeout within ``within_s``, and timeouts after ``skip_s``
    that follow no call drop within it."""
    followed = sum(bool(((timeouts_s >= d) & (timeouts_s <= d + within_s)).any()) for d in drops_s)
    lonely = sum(
        not ((drops_s <= t) & (drops_s >= t - within_s)).any() for t in timeouts_s if t > skip_s
    )
    return followed, lonely


@register(
    "zaghloul-fig-5.1",
    published="measured",
    title="A 33-min transfer over eight Iridium modems: time-sequence with call drops, simulated",
    source="seed 000, Figure 5.1 and section 5.2",
    engine="sim",
)
def fig_5_1(out_dir: Path) -> Findings:
    from farlink.captures.figures import plot_connections

    result, conn, drops_s = _iperf_run(FIG_5_1_SEED)
    figures = plot_connections(
        [conn],
        out_dir,
        stem="zaghloul-fig-5.1",
        drops_s=drops_s,
        title=f"Fig. 5.1: {FIG_5_1_DURATION} iperf over 8 Iridium modems, simulated (seed "
        f"{FIG_5_1_SEED}); call drops dashed",
        figures=("tseq",),
    )
    # The first minute is the first round trips: the initial RTO (1 s, RFC 6298) is below the
    # first RTT of a loaded bundle, so timeouts there are not the link's (see the notes).
    skip_s = 60.0
    drops = timeouts = followed = lonely = lonely_2 = 0
    for seed in TABLE_SEEDS:
        _, c, d = _iperf_run(seed)
        f, lone = _follow_counts(d, c.timeouts_s, skip_s)
        drops, timeouts, followed, lonely = (
            drops + len(d),
            timeouts + sum(c.timeouts_s > skip_s),
            followed + f,
            lonely + lone,
        )
        lonely_2 += _follow_counts(d, c.timeouts_s, skip_s, 2 * FOLLOWS_WITHIN_S)[1]
    f1, lone1 = _follow_counts(drops_s, conn.timeouts_s, skip_s)
    flow = result.summary["flows"][0]
    rows = [
        Row(f"seed {FIG_5_1_SEED}: call drops in 33 min", "count", None, float(len(drops_s))),
        Row(f"seed {FIG_5_1_SEED}: call drops followed by a timeout", "count", None, float(f1)),
        Row(f"seed {FIG_5_1_SEED}: timeouts (the sender's)", "count", None, flow["timeouts"]),
        Row(
            f"seed {FIG_5_1_SEED}: timeouts after the first minute following no call drop",
            "count",
            None,
            float(lone1),
        ),
        Row(f"seed {FIG_5_1_SEED}: goodput", "kbps", None, flow["goodput_bps"] / 1e3),
        Row(
            f"seeds {TABLE_SEEDS[0]}-{TABLE_SEEDS[-1]}: call drops followed by a timeout",
            "%",
            None,
            100 * followed / drops if drops else float("nan"),
        ),
        Row(
            f"seeds {TABLE_SEEDS[0]}-{TABLE_SEEDS[-1]}: timeouts following no call drop",
            "%",
            None,
            100 * lonely / timeouts if timeouts else float("nan"),
        ),
        Row(
            f"seeds {TABLE_SEEDS[0]}-{TABLE_SEEDS[-1]}: timeouts following no call drop within "
            f"{2 * FOLLOWS_WITHIN_S:.0f} s",
            "%",
            None,
            100 * lonely_2 / timeouts if timeouts else float("nan"),
        ),
    ]
    return Findings(
        rows=rows,
        notes=[
            "The figure is a tcptrace time-sequence graph of one field transfer that survives "
            "only as its caption, so no number is compared; the text's claims are: call drops "
            "and timeouts strongly correlated, timeouts from link errors negligible.",
            "Simulated: iridium-greenland-8 as shipped (call drops 1/50 min per modem, 30 s "
            "detection, KUMICS primary modem) with an unbounded iperf-like flow for 33 min. The "
            "figure is drawn by the code of `farlink analyze --drops` from the simulator's "
            "seq/ack traces; the call drops (dashed) are the member_state trace's entries into "
            "call_lost, any member. Timeouts are found by the capture heuristic "
            "(docs/captures.md) on the traces.",
            f"A timeout follows a call drop when it comes within {FOLLOWS_WITHIN_S:.0f} s of "
            "it (the 30 s detection delay plus about one RTO). Chance alone would put about "
            f"{100 * FOLLOWS_WITHIN_S * 8 / 3000:.0f} % of timeouts within {FOLLOWS_WITHIN_S:.0f}"
            " s after some call drop of the bundle (eight members at 1/50 min). The timeouts "
            "that follow no call drop within 60 s mostly come 70-100 s after one (a second, "
            "backed-off timeout of the same recovery, or an RTO grown with the loaded RTT); "
            "within 120 s (chance: about 32 %) nearly all follow one. The rest follow a packet "
            "the ARQ gave up on: link errors, rare as the text says.",
            "Timeouts in the first minute are left out of the correlation: the initial RTO of "
            "1 s (RFC 6298) expires before the first ACK of a bundle whose first round trip "
            "takes several seconds, so every run starts with one or two spurious timeouts that "
            "are the sender's and not the link's. The field's Linux 2.6 used an initial RTO of "
            "3 s, which a 19 s loaded RTT also exceeds.",
        ],
        figures=figures,
    )
