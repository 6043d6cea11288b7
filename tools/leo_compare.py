"""docs/leo.md's comparison: TCP across `farlink leo` schedules in the simulator and the emulator.

For each preset (starlink-like, iridium-leo) `farlink leo` writes a schedule, which one plain
link terminal -> ground station replays in both directions (`schedule = { file = ... }`, the
delay interpolated between the CSV's rows); one unbounded transfer crosses it for the whole
schedule. The simulator runs farlink's controllers, the emulator the kernel's (kernel sender,
TCP_CONGESTION), every run with Linux's connection defaults and sender rules
(:func:`farlink.linux_tcp.linux_sets`, as ``make validate-emu``). Each run is reduced to a JSON
file in the work folder (goodput overall and per second, the smoothed RTT every second,
retransmissions, timeouts); a run whose file exists is not run again, so the emulator's long runs
survive an interrupted invocation. Then the table goes into docs/leo.md between the leo-compare
markers and the figure into docs/leo-compare.png.

The link, per preset (the reasons are in docs/leo.md, "Controllers across the schedules"):

- starlink-like: the preset's 100 Mbit/s; a drop-tail queue of one bandwidth-delay product at
  the schedule's largest RTT, rounded up to whole 1500-byte packets.
- iridium-leo: the schedule's delay and up/down, the rate of seed 000's eight-modem MLPPP
  bundle (8 x 2.4 kbit/s = 19.2 kbit/s: `--capacity 19.2kbps`) on one plain link, and 24
  packets of queue (seed 000 sec. 4.1.6: Linux's 3-packet transmission queue per modem, 8 modems).

Run: ``make leo-compare`` (``python tools/leo_compare.py``; the emulator needs root: four
runs of the schedule's length in real time). ``--duration 20s --no-doc`` is the short form the
test runs.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "leo.md"
FIGURE = ROOT / "docs" / "leo-compare.png"
BEGIN = "<!-- leo-compare: begin (written by `make leo-compare`: tools/leo_compare.py) -->"
END = "<!-- leo-compare: end -->"
PACKET_BYTES = 1500
# Seed 000 sec. 4.1.6: "Linux 2.6.x kernel implements a transmission queue size of 3 packets"
# per modem; its transfers ran over eight modems.
IRIDIUM_MODEMS = 8
IRIDIUM_MODEM_BPS = 2400
IRIDIUM_QUEUE_PKTS_PER_MODEM = 3
# Large enough that the path, not the receiver, limits either engine (the starlink-like
# path's bandwidth-delay product plus its queue is under 300 KB).
RECEIVE_BUFFER = "4MiB"


@dataclass(frozen=True)
class Preset:
    """A schedule and the link that replays it."""

    name: str
    leo_options: tuple[str, ...]
    queue_pkts: int | None  # None: one bandwidth-delay product at the largest RTT


PRESETS = (
    Preset("starlink-like", (), None),
    Preset(
        "iridium-leo",
        ("--capacity", f"{IRIDIUM_MODEMS * IRIDIUM_MODEM_BPS}bps"),
        IRIDIUM_MODEMS * IRIDIUM_QUEUE_PKTS_PER_MODEM,
    ),
)
# (engine, controller): farlink's controllers in the simulator (cubic-linux is its model of
# the kernel's module), the kernel's in the emulator.
RUNS = (
    ("simulate", "reno"),
    ("simulate", "cubic"),
    ("simulate", "cubic-linux"),
    ("simulate", "bbr"),
    ("emulate", "cubic"),
    ("emulate", "bbr"),
)


def farlink_cli() -> list[str]:
    """The `farlink` command of this Python environment."""
    return [sys.executable, "-c", "import sys; from farlink.cli.app import main; sys.exit(main())"]


def write_schedule(preset: Preset, duration: str, folder: Path) -> tuple[Path, dict]:
    """`farlink leo` for `preset`: the CSV in `folder` and the summary it printed."""
    csv = folder / f"{preset.name}.csv"
    argv = [*farlink_cli(), "leo", "--preset", preset.name, "--duration", duration]
    argv += [*preset.leo_options, "--out", str(csv), "--json", "--force"]
    done = subprocess.run(argv, check=True, capture_output=True, text=True)
    return csv, json.loads(done.stdout)


def queue_pkts(preset: Preset, leo: dict, rate_bps: float) -> int:
    """The link's queue in packets: the preset's, or one BDP at the schedule's largest RTT."""
    if preset.queue_pkts is not None:
        return preset.queue_pkts
    return math.ceil(rate_bps * leo["rtt_max_s"] / 8 / PACKET_BYTES)


def first_row(csv: Path) -> tuple[float, float]:
    """The schedule's first rate (bit/s) and one-way delay (s): the link's own values."""
    header, row = csv.read_text().splitlines()[:2]
    cells = dict(zip(header.split(","), row.split(","), strict=True))
    return float(cells["rate_bps"]), float(cells["delay_s"])


def scenario(preset: Preset, csv: Path, leo: dict, duration_s: float) -> dict:
    """One link terminal -> ground station replaying `csv` both ways, one unbounded flow."""
    rate_bps, delay_s = first_row(csv)
    return {
        "name": f"leo-compare-{preset.name}",
        "duration": f"{duration_s}s",
        "nodes": ["terminal", "ground"],
        "links": [
            {
                "a": "terminal",
                "b": "ground",
                "rate_bps": int(rate_bps),
                "delay_s": delay_s,
                "queue_pkts": queue_pkts(preset, leo, rate_bps),
                "schedule": {"file": str(csv), "interpolate_delay": True, "down": "drop"},
            }
        ],
        "flows": [
            {
                "from": "terminal",
                "to": "ground",
                "app": {"kind": "unbounded"},
                "tcp": {"receive_buffer": RECEIVE_BUFFER},
            }
        ],
        "trace": {"rtt": True, "goodput": True, "goodput_interval": "1s"},
    }


def per_second(times_s, cumulative_bytes, duration_s: float) -> list[float]:
    """Goodput (bit/s) in each whole second from a cumulative byte count sampled at
    `times_s` (the count held between samples)."""
    grid = np.arange(0, math.floor(duration_s) + 1, dtype=float)
    t = np.asarray(times_s, dtype=float)
    b = np.asarray(cumulative_bytes, dtype=float)
    at = np.searchsorted(t, grid, side="right") - 1
    held = np.where(at >= 0, b[np.clip(at, 0, None)], 0.0)
    return (np.diff(held) * 8).tolist()


def srtt_every_second(times_s, srtt_s, duration_s: float) -> list[float | None]:
    """The smoothed RTT held at each whole second 1..duration (None before the first)."""
    grid = np.arange(1, math.floor(duration_s) + 1, dtype=float)
    t = np.asarray(times_s, dtype=float)
    v = np.asarray(srtt_s, dtype=float)
    at = np.searchsorted(t, grid, side="right") - 1
    return [None if k < 0 else float(v[k]) for k in at]


def reduce(engine: str, result, duration_s: float) -> dict:
    """What the table and figure need from a run."""
    (flow,) = result.summary["flows"]
    if engine == "simulate":
        g, r = result.trace("goodput"), result.trace("rtt")
        goodput = per_second(np.asarray(g["time_ns"]) / 1e9, g["delivered_bytes"], duration_s)
        srtt = srtt_every_second(
            np.asarray(r["time_ns"]) / 1e9, np.asarray(r["srtt_ns"]) / 1e9, duration_s
        )
    else:
        info = result.trace("tcp_info")
        goodput = per_second(info["time_s"], info["acked_bytes"], duration_s)
        srtt = srtt_every_second(info["time_s"], np.asarray(info["rtt_us"]) / 1e6, duration_s)
    return {
        "goodput_bps": flow["goodput_bps"],
        "retransmissions": flow["retransmissions"],
        "timeouts": flow["timeouts"],
        "goodput_per_second_bps": goodput,
        "srtt_per_second_s": srtt,
        # The emulator's own account of itself (departure-time error, packets moved).
        "emulator": result.summary.get("emulator"),
    }


def run_one(engine: str, cc: str, doc: dict) -> object:
    """One run: farlink's `cc` in the simulator, the kernel's in the emulator."""
    from farlink import simulate
    from farlink.linux_tcp import linux_sets

    sets = [*linux_sets(0), f'flows[0].tcp.cc="{cc}"']
    if engine == "simulate":
        return simulate(doc, sets=sets)
    from farlink.emulate import emulate

    return emulate(doc, tcp=cc, sender="kernel", sets=linux_sets(0, cc))


def run_all(duration: str, work: Path, engines: set[str]) -> dict[str, dict]:
    """Every preset's schedule and runs; each run's reduction read from `work` if there."""
    from farlink import units

    duration_s = units.parse_duration_s(duration)
    work.mkdir(parents=True, exist_ok=True)
    out: dict[str, dict] = {}
    for preset in PRESETS:
        csv, leo = write_schedule(preset, duration, work)
        doc = scenario(preset, csv, leo, duration_s)
        runs = {}
        for engine, cc in RUNS:
            if engine not in engines:
                continue
            kept = work / f"{preset.name}-{engine}-{cc}.json"
            if kept.exists():
                runs[f"{engine} {cc}"] = json.loads(kept.read_text())
                continue
            print(f"leo-compare: {preset.name}: {engine} {cc} ...", file=sys.stderr, flush=True)
            result = run_one(engine, cc, doc)
            if result.summary.get("interrupted"):
                # A run cut short is not kept: the next invocation runs it again.
                print(f"leo-compare: {preset.name}: {engine} {cc} interrupted", file=sys.stderr)
                raise SystemExit(130)
            reduced = reduce(engine, result, duration_s)
            kept.write_text(json.dumps(reduced))
            runs[f"{engine} {cc}"] = reduced
        out[preset.name] = {"leo": leo, "link": doc["links"][0], "runs": runs}
    return out


def _rate(bps: float) -> str:
    return f"{bps / 1e6:.2f} Mbit/s" if bps >= 1e6 else f"{bps / 1e3:.2f} kbit/s"


def _median_ms(values: list[float | None]) -> str:
    v = [x for x in values if x is not None]
    return f"{1e3 * float(np.median(v)):.1f}" if v else "-"


def table(results: dict[str, dict]) -> list[str]:
    """The markdown table: a row per schedule, engine and controller."""
    lines = [
        "| schedule | engine | controller | goodput | of the link | median sRTT (ms) "
        "| p95 sRTT (ms) | retransmissions | timeouts |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, block in results.items():
        rate_bps = block["link"]["rate_bps"]
        for key, run in block["runs"].items():
            engine, cc = key.split(" ", 1)
            who = f"farlink {cc}" if engine == "simulate" else f"kernel {cc}"
            v = [x for x in run["srtt_per_second_s"] if x is not None]
            p95 = f"{1e3 * float(np.percentile(v, 95)):.1f}" if v else "-"
            lines.append(
                f"| {name} | {engine} | {who} | {_rate(run['goodput_bps'])} "
                f"| {run['goodput_bps'] / rate_bps:.3f} | {_median_ms(run['srtt_per_second_s'])} "
                f"| {p95} | {run['retransmissions']} | {run['timeouts']} |"
            )
    return lines


# A line per run: the simulator's solid, the emulator's dashed.
COLORS = {
    "simulate reno": "C0",
    "simulate cubic": "C1",
    "simulate cubic-linux": "C2",
    "simulate bbr": "C3",
    "emulate cubic": "k",
    "emulate bbr": "C4",
}
# The figure's goodput is a mean over this many seconds: at 19.2 kbit/s a 1500-byte packet
# takes 0.625 s, so single seconds alternate between one and two packets.
FIGURE_MEAN_S = 10


def windowed_mean(values: list[float], window: int) -> np.ndarray:
    """Means of consecutive `window`-long blocks of `values` (a shorter last block dropped)."""
    v = np.asarray(values, dtype=float)
    blocks = len(v) // window
    return v[: blocks * window].reshape(blocks, window).mean(axis=1)


def departure_errors(results: dict[str, dict]) -> list[str]:
    """A line per emulator run: how far from their scheduled instants its packets left."""
    lines = []
    for name, block in results.items():
        for key, run in block["runs"].items():
            error = (run.get("emulator") or {}).get("departure_error_us")
            if error:
                lines.append(
                    f"- {name}, kernel {key.split(' ', 1)[1]}: departure error p50 "
                    f"{error['p50']:.1f} µs, p99 {error['p99']:.1f} µs, max "
                    f"{error['max'] / 1e3:.1f} ms over {error['count']} packets"
                )
    return lines


def figure(results: dict[str, dict], path: Path) -> None:
    """Goodput (top, means over FIGURE_MEAN_S) and smoothed RTT (bottom, every second) over
    time, a column per schedule."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, len(results), figsize=(12, 7), sharex="col", squeeze=False)
    for col, (name, block) in enumerate(results.items()):
        scale, unit = (1e6, "Mbit/s") if block["link"]["rate_bps"] >= 1e6 else (1e3, "kbit/s")
        for key, run in block["runs"].items():
            style = {"linestyle": "-" if key.startswith("simulate") else "--", "color": COLORS[key]}
            label = key.replace("simulate", "sim farlink").replace("emulate", "emu kernel")
            per_s = run["goodput_per_second_bps"]
            window = min(FIGURE_MEAN_S, max(1, len(per_s)))
            g = windowed_mean(per_s, window) / scale
            axes[0][col].step(
                window * np.arange(1, len(g) + 1), g, where="pre", lw=1.0, label=label, **style
            )
            rtt = [np.nan if x is None else 1e3 * x for x in run["srtt_per_second_s"]]
            axes[1][col].plot(np.arange(1, len(rtt) + 1), rtt, lw=0.8, label=label, **style)
        axes[0][col].set_title(f"{name} ({_rate(block['link']['rate_bps'])})", fontsize=10)
        axes[0][col].set_ylabel(f"goodput, {FIGURE_MEAN_S} s means ({unit})")
        axes[1][col].set_ylabel("smoothed RTT (ms)")
        axes[1][col].set_xlabel("time (s)")
        for ax in axes[:, col]:
            ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", default="600s", help="schedule and run length")
    parser.add_argument(
        "--work",
        type=Path,
        help="folder of the schedules and kept runs (default farlink-out/leo-compare/DURATION)",
    )
    parser.add_argument(
        "--engines", default="simulate,emulate", help="comma-separated: simulate, emulate"
    )
    parser.add_argument("--figure", type=Path, default=FIGURE)
    parser.add_argument(
        "--no-doc", action="store_true", help="print the table instead of writing docs/leo.md"
    )
    args = parser.parse_args(argv)
    engines = set(args.engines.split(","))
    if not engines <= {"simulate", "emulate"}:
        parser.error(f"--engines: {args.engines!r}: give simulate, emulate or both")
    work = args.work or ROOT / "farlink-out" / "leo-compare" / args.duration
    results = run_all(args.duration, work, engines)
    lines = table(results)
    errors = departure_errors(results)
    if errors:
        lines += ["", "The emulator's own account (`emulator.departure_error_us`):", "", *errors]
    if args.no_doc:
        print("\n".join(lines))
    else:
        from farlink.outputs import write_between_markers

        command = f"`python tools/leo_compare.py --duration {args.duration}`"
        write_between_markers(DOC, BEGIN, END, "\n".join([f"Made by {command}:", "", *lines]))
        print("\n".join(lines))
    figure(results, args.figure)
    return 0


if __name__ == "__main__":
    sys.exit(main())
