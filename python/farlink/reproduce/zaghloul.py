"""Seed 000 (Zaghloul, University of Kansas, 2005): the call-drop model against its own tables.

Parameters come from the captions of Tables 6.1 and 6.2 and the text of section 6.4.1; sizes are
decimal (1 MB = 10^6 bytes, 1 KB = 10^3 bytes) and b = 2 (delayed ACKs, section 6.1 item 3).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from farlink.models import (
    calldrop_prediction,
    clocking_time_s,
    loaded_rtt_s,
    packets_lost_per_call_drop,
)
from farlink.reports.plots import line_figure
from farlink.reproduce import Findings, Row, register

MIN = 60.0

# Table 6.1 caption: T_0 = 60 s, p = 5e-4, β = 1/50 min, MSS = 1448, RTT = 19 s, W_max = 47.9 KB.
GREENLAND = {
    "rtt_s": 19.0,
    "p": 5e-4,
    "beta_per_s": 1 / (50 * MIN),
    "t0_s": 60.0,
    "mss_bytes": 1448.0,
}

TABLE_6_1_SIZES_MB = [1.38, 5.62, 20.6, 35.7]
TABLE_6_1_MEASURED_MIN = [11, 46, 180, 315]
TABLE_6_1_PREDICTED_MIN = [12.5, 51, 187, 324]

TABLE_6_2_LINKS = [3, 4, 5, 6, 7, 8]
TABLE_6_2_SIZES_MB = [4.82, 0.85, 1.91, 1.39, 3.40, 1.40]
TABLE_6_2_WMAX_KB = [16.1, 22.0, 28.3, 34.7, 41, 47.9]
TABLE_6_2_MEASURED_MIN = [96, 15, 21, 13, 30, 12]
TABLE_6_2_PREDICTED_MIN = [98.1, 13.4, 24.1, 15.4, 33.2, 12.7]

# Section 6.4.1: Inmarsat bundle of four 128 kbps members, 100 MB, RTT 0.61 s, MSS 1 KB,
# W_max 40 KB. The text gives neither β nor T_0 for Figure 6.5; farlink uses Table 6.1's.
INMARSAT = {
    "size_bytes": 100e6,
    "n_links": 4,
    "rtt_s": 0.61,
    "mss_bytes": 1e3,
    "wmax_bytes": 40e3,
}
FIG_6_4_BETAS_PER_MIN = [1 / 52, 1 / 30, 1 / 20]


def _minutes(**params: object) -> np.ndarray:
    return np.asarray(calldrop_prediction(**params).transfer_time_s) / MIN  # type: ignore[arg-type]


@register(
    "zaghloul-table-6.1",
    published="predicted",
    title="8-modem Iridium bundle, Greenland to Kansas: predicted transfer times (eq. 36)",
    source="seed 000, Table 6.1",
)
def table_6_1(out_dir: Path) -> Findings:
    sizes = np.array(TABLE_6_1_SIZES_MB) * 1e6
    ours = _minutes(size_bytes=sizes, n_links=8, wmax_bytes=47.9e3, **GREENLAND)
    rows = [
        Row(f"{mb} MB predicted", "min", pub, float(o), tolerance_rel=0.01)
        for mb, pub, o in zip(TABLE_6_1_SIZES_MB, TABLE_6_1_PREDICTED_MIN, ours, strict=True)
    ]
    measured = [
        f"{mb} MB: measured {m} min, model {o:.1f} min"
        for mb, m, o in zip(TABLE_6_1_SIZES_MB, TABLE_6_1_MEASURED_MIN, ours, strict=True)
    ]
    return Findings(
        rows=rows,
        notes=[
            "T0=60 s, p=5e-4, beta=1/50 min per member, 8 members, MSS=1448 B, RTT=19 s, "
            "Wmax=47.9 KB (33.1 segments), b=2; window-limited branch of eq. 28",
            "Measured rows (field, summer 2004) for reference: " + "; ".join(measured),
        ],
    )


@register(
    "zaghloul-table-6.2",
    published="predicted",
    title="3 to 8 Iridium modems: predicted transfer times (eq. 36)",
    source="seed 000, Table 6.2",
)
def table_6_2(out_dir: Path) -> Findings:
    ours = _minutes(
        size_bytes=np.array(TABLE_6_2_SIZES_MB) * 1e6,
        n_links=np.array(TABLE_6_2_LINKS),
        wmax_bytes=np.array(TABLE_6_2_WMAX_KB) * 1e3,
        **GREENLAND,
    )
    rows = [
        Row(f"{n} links, {mb} MB, Wmax {w} KB predicted", "min", pub, float(o), 0.05)
        for n, mb, w, pub, o in zip(
            TABLE_6_2_LINKS,
            TABLE_6_2_SIZES_MB,
            TABLE_6_2_WMAX_KB,
            TABLE_6_2_PREDICTED_MIN,
            ours,
            strict=True,
        )
    ]
    binary = _minutes(
        size_bytes=np.array(TABLE_6_2_SIZES_MB) * 1e6,
        n_links=np.array(TABLE_6_2_LINKS),
        wmax_bytes=np.array(TABLE_6_2_WMAX_KB) * 1024,
        **GREENLAND,
    )
    worst_binary = np.max(np.abs(binary / TABLE_6_2_PREDICTED_MIN - 1))
    errors = ours / TABLE_6_2_PREDICTED_MIN - 1
    worst = int(np.argmax(np.abs(errors)))
    return Findings(
        rows=rows,
        notes=[
            "T0=60 s, p=5e-4, beta=1/50 min per member, MSS=1448 B, RTT=19 s, b=2; "
            "lambda = n*beta; Wmax per row as printed",
            f"Our largest departure is the {TABLE_6_2_LINKS[worst]}-link point, "
            f"{errors[worst]:+.1%} against the printed {TABLE_6_2_PREDICTED_MIN[worst]} min. "
            "Reading the printed Wmax as binary kilobytes (1 KB = 1024 B) would bring every row "
            f"within {worst_binary:.1%}; farlink keeps the decimal reading of Table 6.1.",
            "Measured (min): "
            + ", ".join(
                f"{n} links {m}"
                for n, m in zip(TABLE_6_2_LINKS, TABLE_6_2_MEASURED_MIN, strict=True)
            ),
        ],
    )


@register(
    "zaghloul-fig-6.5",
    published="predicted",
    title="Inmarsat 4x128 kbps bundle: transfer time of 100 MB against the packet loss rate",
    source="seed 000, Figure 6.5 and section 6.4.1",
)
def fig_6_5(out_dir: Path) -> Findings:
    p = np.linspace(5e-4, 1.5e-3, 41)
    t0_s = 60.0
    curves = []
    for beta_per_min in FIG_6_4_BETAS_PER_MIN:
        minutes = _minutes(p=p, beta_per_s=beta_per_min / MIN, t0_s=t0_s, **INMARSAT)
        curves.append((f"beta = 1/{1 / beta_per_min:.0f} min", minutes))
    base = _minutes(p=p, beta_per_s=1 / (50 * MIN), t0_s=t0_s, **INMARSAT)
    rows = [
        Row(f"p = {pi:.2%}, beta = 1/50 min", "min", None, float(ti))
        for pi, ti in zip(p[::10], base[::10], strict=True)
    ]
    increase = float(base[-1] - base[0])
    rows.append(Row("increase from p = 0.05 % to 0.15 %", "min", 25.0, increase))
    limited = calldrop_prediction(p=p, beta_per_s=1 / (50 * MIN), t0_s=t0_s, **INMARSAT)
    last_limited = p[np.asarray(limited.window_limited)].max()
    fast = _minutes(p=p[[0, -1]], beta_per_s=1 / (20 * MIN), t0_s=120.0, **INMARSAT)
    path = line_figure(
        out_dir / "zaghloul-fig-6.5.png",
        x=p * 100,
        curves=[*curves, ("beta = 1/50 min (table rows)", base)],
        xlabel="packet loss probability p (%)",
        ylabel="transfer time (min)",
        title="Fig. 6.5: 100 MB over 4 x 128 kbps Inmarsat (RTT 0.61 s, MSS 1 KB, Wmax 40 KB)",
        caption="farlink model engine, seed 000 eq. 36; T0 = 60 s, b = 2",
    )
    return Findings(
        rows=rows,
        notes=[
            "The text gives 4 members, 100 MB, 128 kbps each, RTT 0.61 s, MSS 1 KB, Wmax 40 KB "
            "but not beta or T0; farlink uses Table 6.1's T0 = 60 s and beta = 1/50 min per "
            "member for the rows and draws beta = 1/52, 1/30, 1/20 min as further curves.",
            f"The text's 'approximately 25-minute increase' over the range is not reproduced at "
            f"these values: ours is {increase:.1f} min. The increase scales with 1/(1 - lambda "
            f"E[Z_TO]); at beta = 1/20 min and T0 = 120 s it is {fast[1] - fast[0]:.1f} min, so "
            "the figure was probably drawn at a higher call-drop rate or longer timeout than "
            "those of Table 6.1. The model is not adjusted to close the gap.",
            "The eq. 28 branch changes inside the range: the window limit binds up to "
            f"p = {last_limited:.3%}, above it E[W_u] < Wmax.",
        ],
        figures=[path],
    )


@register(
    "zaghloul-fig-6.6",
    published="predicted",
    title="Inmarsat 4x128 kbps bundle: transfer time of 100 MB against the timeout T0",
    source="seed 000, Figure 6.6 and section 6.4.1",
)
def fig_6_6(out_dir: Path) -> Findings:
    t0_s = np.linspace(60.0, 120.0, 61)
    p = 5e-4
    curves = []
    rows = []
    for beta_per_min in FIG_6_4_BETAS_PER_MIN:
        minutes = _minutes(p=p, beta_per_s=beta_per_min / MIN, t0_s=t0_s, **INMARSAT)
        label = f"beta = 1/{1 / beta_per_min:.0f} min"
        curves.append((label, minutes))
        rows += [
            Row(f"T0 = {t:.0f} s, {label}", "min", None, float(m))
            for t, m in zip(t0_s[::20], minutes[::20], strict=True)
        ]
    path = line_figure(
        out_dir / "zaghloul-fig-6.6.png",
        x=t0_s,
        curves=curves,
        xlabel="initial timeout T0 (s)",
        ylabel="transfer time (min)",
        title="Fig. 6.6: 100 MB over 4 x 128 kbps Inmarsat (RTT 0.61 s, p = 0.05 %)",
        caption="farlink model engine, seed 000 eq. 36; MSS 1 KB, Wmax 40 KB, b = 2",
    )
    return Findings(
        rows=rows,
        notes=[
            "The text studies T0 from 60 to 120 s for the Inmarsat parameters of Figure 6.5 and "
            "does not print beta or p; farlink uses p = 5e-4 (Table 6.1) and the call-drop rates "
            "of Figure 6.4. As the text says, T0 matters more as the call-drop rate rises: the "
            "slope of each curve grows with beta.",
        ],
        figures=[path],
    )


@register(
    "zaghloul-sec-4.1.6",
    published="predicted",
    title="Loaded RTT of an Iridium bundle: RTT = Q_P T_MP",
    source="seed 000, section 4.1.6",
)
def sec_4_1_6(out_dir: Path) -> Findings:
    clocking = float(clocking_time_s(1500, 2400))
    return Findings(
        rows=[
            Row("clocking time of 1500 B at 2400 bit/s", "s", 5.0, clocking, 0.005),
            Row("RTT with T_MP = 6.5 s, Q_P = 3", "s", 19.5, float(loaded_rtt_s(6.5, 3)), 0.005),
            Row(
                "RTT on an error-free channel, Q_P = 3",
                "s",
                15.0,
                float(loaded_rtt_s(clocking)),
                0.005,
            ),
        ],
        notes=[
            "T_MP = 6.5 s is the thesis's own figure (5 s clocking + ARQ, from its ref. [25]); "
            "measured mean TCP RTT 20-21 s (Figure 4.6)."
        ],
    )


@register(
    "zaghloul-sec-5.2",
    published="predicted",
    title="Packets lost by one call drop (worked example)",
    source="seed 000, section 5.2",
)
def sec_5_2(out_dir: Path) -> Findings:
    lost = float(packets_lost_per_call_drop(10.0, 2400.0, 4500.0, 1500.0, 1500.0))
    return Findings(
        rows=[
            Row("packets lost", "packets", 9.0, lost, 0.005),
            Row("bytes lost", "KB", 13.5, lost * 1.5, 0.005),
        ],
        notes=[
            "R = 300 B/s, B_M = 4.5 KB, B_S = 1.5 KB, T_L = 10 s, P = 1.5 KB; 13.5 KB exceeds "
            "half of Wmax = 22.5 KB, so even SACK times out."
        ],
    )
