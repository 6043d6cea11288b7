"""``make demo``: the Greenland–Kansas 8-modem Iridium bundle of seed 000.

Predicted transfer times (seed 000 eq. 36, Table 6.1 parameters) for a range of file sizes and
call-drop rates, printed as a table and drawn as a figure in the output folder, followed by the
Table 6.1 reproduction.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

from farlink.models import calldrop_prediction
from farlink.reports.plots import line_figure
from farlink.reports.terminal import plain, print_reproduction
from farlink.reproduce import run
from farlink.reproduce.zaghloul import GREENLAND, TABLE_6_1_MEASURED_MIN, TABLE_6_1_SIZES_MB

SIZES_MB = np.array([0.1, 0.5, 1.38, 5.62, 10.0, 20.6, 35.7, 100.0])
MINUTES_BETWEEN_DROPS = np.array([200.0, 100.0, 50.0, 30.0, 20.0, 10.0])
N_LINKS = 8
WMAX_BYTES = 47.9e3


def demo_grid() -> dict[str, np.ndarray]:
    """Transfer time (min) on a size × call-drop-rate grid; one vectorised model call."""
    params = {k: v for k, v in GREENLAND.items() if k != "beta_per_s"}
    prediction = calldrop_prediction(
        size_bytes=SIZES_MB[:, None] * 1e6,
        beta_per_s=1 / (MINUTES_BETWEEN_DROPS[None, :] * 60),
        n_links=N_LINKS,
        wmax_bytes=WMAX_BYTES,
        **params,
    )
    return {
        "transfer_time_min": np.asarray(prediction.transfer_time_s) / 60,
        "throughput_bps": np.asarray(prediction.throughput_bps)[0],
    }


def _draw_figure(path: Path) -> Path:
    """Transfer time against the call-drop rate for the Table 6.1 files, measurements marked."""
    minutes_between = np.geomspace(5.0, 500.0, 120)
    params = {k: v for k, v in GREENLAND.items() if k != "beta_per_s"}
    sizes_mb = np.array(TABLE_6_1_SIZES_MB)
    hours = (
        np.asarray(
            calldrop_prediction(
                size_bytes=sizes_mb[:, None] * 1e6,
                beta_per_s=1 / (minutes_between[None, :] * 60),
                n_links=N_LINKS,
                wmax_bytes=WMAX_BYTES,
                **params,
            ).transfer_time_s
        )
        / 3600
    )
    measured_h = np.array(TABLE_6_1_MEASURED_MIN) / 60
    return line_figure(
        path,
        x=minutes_between,
        curves=[(f"{mb} MB (model)", hours[i]) for i, mb in enumerate(sizes_mb)],
        points=[("field, summer 2004 (Table 6.1)", np.full(len(sizes_mb), 50.0), measured_h)],
        xlabel="mean time between call drops per modem, 1/beta (min)",
        ylabel="transfer time (h)",
        title="8-modem Iridium bundle, Greenland to Kansas (seed 000 eq. 36)",
        caption="RTT 19 s, p = 5e-4, T0 = 60 s, MSS 1448 B, Wmax 47.9 KB, b = 2",
        logx=True,
        logy=True,
    )


def run_demo(out: Path) -> None:
    console = Console()
    out.mkdir(parents=True, exist_ok=True)
    grid = demo_grid()
    minutes = grid["transfer_time_min"]

    table = Table(
        title="Greenland-Kansas bundle, 8 Iridium modems x 2.4 kbps: predicted transfer time (min)"
        "\nby mean time between call drops per modem (1/beta); seed 000 eq. 36,"
        "\nRTT 19 s, p 5e-4, T0 60 s, MSS 1448 B, Wmax 47.9 KB",
        title_justify="left",
    )
    table.add_column("file size")
    for m in MINUTES_BETWEEN_DROPS:
        table.add_column(f"{m:.0f} min", justify="right")
    for size_mb, row in zip(SIZES_MB, minutes, strict=True):
        table.add_row(f"{size_mb:g} MB", *(f"{v:,.1f}" for v in row))
    table.add_row("goodput (bit/s)", *(f"{v:,.0f}" for v in grid["throughput_bps"]), style="italic")
    console.print(table)

    figure = _draw_figure(out / "demo-greenland-8.png")
    (out / "demo-greenland-8.json").write_text(
        json.dumps(
            plain(
                {
                    "sizes_mb": SIZES_MB,
                    "minutes_between_drops_per_modem": MINUTES_BETWEEN_DROPS,
                    **grid,
                }
            ),
            indent=2,
        )
        + "\n"
    )
    console.print(f"figure: {figure}", highlight=False)
    console.print()
    print_reproduction(run("zaghloul-table-6.1", out / "reproduce"))
    console.print()
    _bundle_simulated_beside_predicted(console)
    console.print()
    _simulation_beside_prediction(console, out)


def _bundle_simulated_beside_predicted(console: Console) -> None:
    """The same bundle on the packet engine (preset iridium-greenland-8) beside eq. 36."""
    from farlink.sim import simulate

    seeds = range(1, 5)
    table = Table(
        title="The same bundle simulated (preset iridium-greenland-8: 8 members with ARQ, call "
        "drops 1/50 min,\nredial, primary modem) beside eq. 36 and the field (seed 000 Table 6.1)",
        title_justify="left",
    )
    for column in ("file", "field (min)", "eq. 36 (min)", f"simulated, {len(seeds)} seeds (min)"):
        table.add_column(column, justify="left" if column == "file" else "right")
    for size_mb, measured in zip(TABLE_6_1_SIZES_MB[:2], TABLE_6_1_MEASURED_MIN[:2], strict=True):
        predicted = float(
            calldrop_prediction(
                size_bytes=size_mb * 1e6, n_links=N_LINKS, wmax_bytes=WMAX_BYTES, **GREENLAND
            ).transfer_time_s
        )
        minutes = [
            simulate(
                "iridium-greenland-8",
                size=f"{size_mb}MB",
                seed=seed,
                duration="12h",
                sets=["trace={}"],
            ).summary["flows"][0]["transfer_time_s"]
            / 60
            for seed in seeds
        ]
        table.add_row(
            f"{size_mb} MB", f"{measured}", f"{predicted / 60:.1f}", f"{np.mean(minutes):.1f}"
        )
    console.print(table)


def _simulation_beside_prediction(console: Console, out: Path) -> None:
    """The packet engine on seed 003's lossy wireless path, beside the closed-form models."""
    from farlink.models import mathis_throughput, pftk_full_throughput
    from farlink.scenario import apply_overrides, load_scenario
    from farlink.sim import simulate
    from farlink.sweeps.model import pftk_inputs

    loss = 0.01
    table = Table(
        title="stpd-wireless (seed 003 Fig. 4.7): 10 Mbps 0.1 ms + lossy 1.5 Mbps 80 ms, "
        f"p = {loss:g}, 100 s\nsimulated (farlink sim, Rust core) beside predicted (PFTK, Mathis)",
        title_justify="left",
    )
    for column in ("TCP", "normalised goodput", "retx", "timeouts", "events/wall-s"):
        table.add_column(column, justify="left" if column == "TCP" else "right")
    for variant in ("tahoe", "reno", "newreno", "sack"):
        result = simulate("stpd-wireless", tcp=variant, loss=loss, sets=["trace={}"])
        agg = s = result.summary
        table.add_row(
            variant,
            f"{agg['normalized_goodput']:.3f}",
            f"{agg['retransmissions']:,}",
            f"{agg['timeouts']:,}",
            f"{s['events'] / s['wall_time_s']:,.0f}",
        )
    # The models' inputs as the core resolves the same scenario (base RTT, T0, b, W_max).
    x = pftk_inputs(apply_overrides(load_scenario("stpd-wireless"), loss=loss))
    if x is None:
        raise RuntimeError("stpd-wireless no longer has a single flow over a lossy link")
    to_normalised = x.wire_bytes * 8 / x.bottleneck_bps
    pftk = float(pftk_full_throughput(x.p, x.rtt_s, x.t0_s, x.b, x.wmax_pkts)) * to_normalised
    mathis = float(mathis_throughput(x.p, x.rtt_s, x.b)) * to_normalised
    table.add_row("PFTK (predicted)", f"{min(pftk, 1.0):.3f}", "", "", "", style="italic")
    table.add_row("Mathis (predicted)", f"{min(mathis, 1.0):.3f}", "", "", "", style="italic")
    console.print(table)
