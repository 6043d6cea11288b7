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


def _transfer_minutes(preset: str, size: str, seeds=SEEDS) -> float:
    times = []
    for seed in seeds:
        result = simulate(preset, size=size, seed=seed, duration="12h", sets=[NO_TRACES])
        flow = result.summary["flows"][0]
        times.append(flow["transfer_time_s"] / 60 if flow["finished"] else np.nan)
    return float(np.mean(times))


@register(
    "zaghloul-table-6.1-sim",
    title="Transfers over eight Iridium modems with call drops, simulated (iridium-greenland-8)",
    source="seed 000, Table 6.1",
    engine="sim",
)
def table_6_1_sim(out_dir: Path) -> Findings:
    rows = []
    notes = []
    for size, (measured, predicted) in TABLE_6_1.items():
        ours = _transfer_minutes("iridium-greenland-8", f"{size}MB", TABLE_SEEDS)
        rows.append(Row(f"{size} MB, measured in the field", "min", measured, ours, 0.2))
        notes.append(f"{size} MB: eq. 36 predicted {predicted} min (Table 6.1).")
    notes.append(
        "Simulated: the iridium-greenland-8 preset as shipped (KUMICS primary modem, call drops "
        f"1/50 min per modem), mean over seeds {TABLE_SEEDS[0]}-{TABLE_SEEDS[-1]}. The field "
        "column is one transfer each."
    )
    return Findings(rows=rows, notes=notes)


@register(
    "zaghloul-table-6.2-sim",
    title="Transfers over 3 to 8 Iridium modems with call drops, simulated (iridium-N)",
    source="seed 000, Table 6.2",
    engine="sim",
)
def table_6_2_sim(out_dir: Path) -> Findings:
    rows = []
    notes = []
    for n, (size, measured, predicted) in TABLE_6_2.items():
        ours = _transfer_minutes(f"iridium-{n}", f"{size}MB", TABLE_SEEDS)
        rows.append(Row(f"{n} links, {size} MB, measured", "min", measured, ours, 0.2))
        notes.append(f"{n} links: eq. 36 predicted {predicted} min.")
    notes.append(
        "Simulated: the iridium-N presets as shipped (no primary link, as the chapter 6 model), "
        f"mean over seeds {TABLE_SEEDS[0]}-{TABLE_SEEDS[-1]}; each field time is a single "
        "transfer of a few call drops, so a field value far from the mean is not surprising."
    )
    return Findings(rows=rows, notes=notes)


@register(
    "zaghloul-sec-4.1.6-sim",
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
    for cc in ("cubic", "reno"):
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
            Row("mean TCP RTT under load, thesis's Q_P T_MP", "s", 19.5, loaded_rtt, 0.1),
            Row("mean TCP RTT under load, measured (Figure 4.6)", "s", 21.0, loaded_rtt, 0.1),
            Row("mean TCP RTT, 2 h with call drops, CUBIC", "s", 21.0, with_drops["cubic"], 0.1),
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
            "drop ends in a timeout and the window restarts from one segment; CUBIC (standing "
            "in for Linux 2.6's BIC) regains W_max in a few round trips, Reno in minutes, which "
            "shortens its mean RTT. Figure 4.6's 21 s (sd 8.7 s) was measured over a file "
            "transfer in the laboratory.",
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
    "kumics-uptime",
    title="Uptime of the eight-modem KUMICS bundle: the redial time fitted and checked",
    source="seed 001, slides 17 and 18; seed 000, section 7.6 and Figure 7.14",
    engine="sim",
)
def kumics_uptime(out_dir: Path) -> Findings:
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


def _goodput_kbps(preset: str) -> float:
    return float(
        np.mean(
            [
                simulate(preset, duration="2h", seed=seed, sets=[NO_TRACES]).summary["aggregate"][
                    "goodput_bps"
                ]
                / 1000
                for seed in TABLE_SEEDS
            ]
        )
    )


@register(
    "field-throughput",
    title="Throughput of 1 to 4 Iridium modems, and of eight with call drops, simulated",
    source="seed 001, slides 9 and 15",
    engine="sim",
)
def field_throughput(out_dir: Path) -> Findings:
    rows = [
        Row(f"{n} modem{'s' if n > 1 else ''}", "kbps", kbps, _goodput_kbps(f"iridium-{n}"), 0.15)
        for n, kbps in FIELD_THROUGHPUT_KBPS.items()
    ]
    rows.append(
        Row(
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
