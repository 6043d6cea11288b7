"""Run an ns-3 reference grid; write its results file under results/.

Grids (`--grid`):
- `reno` (default, results/ns3_stpd_wireless.json): `stpd-wireless`, loss p in {0, 1e-3, 1e-2,
  3e-2, 1e-1} x SACK on/off x {newreno, linuxreno} x runs 1..5.
- `controllers` (results/ns3_controllers.json): `stpd-wireless` and `stpd-geo-t1`, p in {0, 1e-3,
  1e-2} x SACK on x {cubic, bbr, hybla, vegas, westwood} x runs 1..3 (p = 0: run 1 only).
- `diagnostics` (results/ns3_diagnostics.json): `stpd-wireless`, p in {1e-2, 3e-2}, SACK on, the
  three `-diag` variants of stpd_wireless.py (ns-3 with one rule changed), runs 1..5.
Each point is one subprocess of stpd_wireless.py (ns-3 keeps global state, and one process per
point keeps runs independent), at most two at a time (the machine has two cores). Run it with the
interpreter of `.venv-ns3`: `make ns3-reference` (NS3_ARGS="--grid controllers" or "--runs 3").
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "stpd_wireless.py"
GRIDS = {
    "reno": {
        "scenarios": ("stpd-wireless",),
        "variants": ("newreno", "linuxreno"),
        "sacks": (True, False),
        "losses": (0.0, 1e-3, 1e-2, 3e-2, 1e-1),
        "runs": 5,
        "lossless_once": False,
        "out": HERE / "results" / "ns3_stpd_wireless.json",
    },
    "controllers": {
        "scenarios": ("stpd-wireless", "stpd-geo-t1"),
        "variants": ("cubic", "bbr", "hybla", "vegas", "westwood"),
        "sacks": (True,),
        "losses": (0.0, 1e-3, 1e-2),
        "runs": 3,
        "lossless_once": True,
        "out": HERE / "results" / "ns3_controllers.json",
    },
    # ns-3 with one rule changed (the `-diag` variants of stpd_wireless.py): evidence for the
    # explanations in docs/validation-notes.md, not a reference.
    "diagnostics": {
        "scenarios": ("stpd-wireless",),
        "variants": (
            "newreno-cwnd-ssthresh-diag",
            "linuxreno-no-exit-credit-diag",
            "linuxreno-fresh-count-diag",
        ),
        "sacks": (True,),
        "losses": (1e-2, 3e-2),
        "runs": 5,
        "lossless_once": False,
        "out": HERE / "results" / "ns3_diagnostics.json",
    },
}
# What each record keeps of a run's JSON (the rest is the same in every run or is in `configs`).
KEEP = (
    "delivered_bytes",
    "normalized_goodput",
    "retransmissions",
    "retransmissions_minus_drops",
    "timeouts",
    "fast_recoveries",
    "drops",
    "cwnd_mean_segments",
    "cwnd_max_segments",
    "queue_r_mean_packets",
    "hybla_rho",
    "events",
    "wall_import_s",
    "wall_run_s",
    "events_per_wall_s",
    "delivered_packets_per_wall_s",
)


POINT = ("scenario", "variant", "sack", "loss", "run")


def dumps_compact(out: dict) -> str:
    """JSON with one line per cell and per record, so that the file stays small and diffable."""
    lines = ["{"]
    items = list(out.items())
    for i, (k, v) in enumerate(items):
        end = "," if i < len(items) - 1 else ""
        if isinstance(v, list) and v and isinstance(v[0], dict):
            body = ",\n".join("  " + json.dumps(x) for x in v)
            lines.append(f" {json.dumps(k)}: [\n{body}\n ]{end}")
        else:
            lines.append(f" {json.dumps(k)}: {json.dumps(v)}{end}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--grid", choices=sorted(GRIDS), default="reno", help="which grid (above)")
    ap.add_argument("--runs", type=int, default=None, help="runs per cell (default: the grid's)")
    ap.add_argument("--seed", type=int, default=1, help="ns-3 RngSeedManager seed for every run")
    ap.add_argument(
        "--duration", type=float, default=None, help="simulated s per run (default: scenario's)"
    )
    ap.add_argument("--jobs", type=int, default=2, help="simulations at once (at most 2)")
    ap.add_argument("--out", type=Path, default=None, help="results file (default: the grid's)")
    ap.add_argument(
        "--prr-sack-delivered",
        action="store_true",
        help="diagnosis: stpd_wireless.py --prr-sack-delivered on the grid's SACK cells only "
        "(ns-3 3.44's PRR rule acts with SACK alone); needs --out",
    )
    a = ap.parse_args(argv)
    grid = GRIDS[a.grid]
    a.runs = grid["runs"] if a.runs is None else a.runs
    if a.prr_sack_delivered and a.out is None:
        ap.error("--prr-sack-delivered: give --out (the grid's reference file stays as it is)")
    a.out = grid["out"] if a.out is None else a.out
    if a.runs < 1:
        ap.error(f"--runs: expected an integer >= 1, got {a.runs}")
    if not 1 <= a.jobs <= 2:
        ap.error(f"--jobs: expected 1 or 2 (the machine has two cores), got {a.jobs}")
    if a.duration is not None and a.duration <= 0:
        ap.error(f"--duration: expected a positive number of seconds, got {a.duration}")
    return a


def point_args(
    p: dict, seed: int, duration: float | None, prr_sack_delivered: bool = False
) -> list[str]:
    return [
        sys.executable,
        str(SCRIPT),
        "--scenario",
        p["scenario"],
        "--loss",
        repr(p["loss"]),
        "--sack" if p["sack"] else "--no-sack",
        "--variant",
        p["variant"],
        "--seed",
        str(seed),
        "--run",
        str(p["run"]),
        *(["--duration", repr(duration)] if duration is not None else []),
        *(["--prr-sack-delivered"] if prr_sack_delivered else []),
        "--json",
    ]


def run_point(p: dict, seed: int, duration: float | None, prr: bool = False) -> dict:
    proc = subprocess.run(point_args(p, seed, duration, prr), capture_output=True, text=True)
    if proc.returncode != 0:
        # cppyy prints harmless "Failed to materialize symbols" lines on import; show the rest
        tail = [ln for ln in proc.stderr.splitlines() if "materialize symbols" not in ln][-15:]
        return {"inputs": p, "error": f"exit {proc.returncode}: " + "\n".join(tail)}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def rounded(x):
    if isinstance(x, float):
        return float(f"{x:.5g}")
    if isinstance(x, dict):
        return {k: rounded(v) for k, v in x.items()}
    return x


def cell_keys(grid: dict):
    for scenario in grid["scenarios"]:
        for variant in grid["variants"]:
            for sack in grid["sacks"]:
                for loss in grid["losses"]:
                    yield scenario, variant, sack, loss


def summarize(records: list[dict], grid: dict) -> list[dict]:
    cells = []
    for scenario, variant, sack, loss in cell_keys(grid):
        rs = [
            r
            for r in records
            if "error" not in r
            and r["inputs"].get("scenario", "stpd-wireless") == scenario
            and r["inputs"]["variant"] == variant
            and r["inputs"]["sack"] == sack
            and r["inputs"]["loss"] == loss
        ]
        if not rs:
            continue
        g = [r["normalized_goodput"] for r in rs]

        def mean(key, rs=rs):
            return statistics.fmean(r[key] or 0.0 for r in rs)

        cells.append(
            rounded(
                {
                    "scenario": scenario,
                    "variant": variant,
                    "sack": sack,
                    "loss": loss,
                    "n": len(g),
                    "normalized_goodput_mean": statistics.fmean(g),
                    "normalized_goodput_std": statistics.stdev(g) if len(g) > 1 else 0.0,
                    "normalized_goodput_min": min(g),
                    "normalized_goodput_max": max(g),
                    "retransmissions_mean": mean("retransmissions"),
                    "spurious_retransmissions_mean": mean("retransmissions_minus_drops"),
                    "timeouts_mean": mean("timeouts"),
                    "fast_recoveries_mean": mean("fast_recoveries"),
                    "cwnd_mean_segments": mean("cwnd_mean_segments"),
                    "queue_r_mean_packets": mean("queue_r_mean_packets"),
                    # Hybla: how often ns-3's rho changed (0: it stayed at its initial 1)
                    "hybla_rho_changes_max": max(r["hybla_rho"]["changes"] for r in rs),
                    "events_per_wall_s_mean": mean("events_per_wall_s"),
                    "delivered_packets_per_wall_s_mean": mean("delivered_packets_per_wall_s"),
                }
            )
        )
    return cells


def table(cells: list[dict], grid: dict) -> str:
    by = {(c["scenario"], c["variant"], c["sack"], c["loss"]): c for c in cells}
    cols = [(v, s) for v in grid["variants"] for s in grid["sacks"]]
    head = f"{'loss':>7} " + "".join(f"{v + (' sack' if s else ' nosack'):>20}" for v, s in cols)
    lines = []
    for scenario in grid["scenarios"]:
        lines += [f"{scenario}: mean normalised goodput (std) over runs; goodput / 1.5 Mbps", head]
        for loss in grid["losses"]:
            row = f"{loss:>7g} "
            for v, s in cols:
                c = by.get((scenario, v, s, loss))
                cell = (
                    f"{c['normalized_goodput_mean']:.3f} ({c['normalized_goodput_std']:.3f})"
                    if c
                    else "-"
                )
                row += f"{cell:>20}"
            lines.append(row)
        lines += ["", "spurious retransmissions (retransmissions - drops), mean per run", head]
        for loss in grid["losses"]:
            row = f"{loss:>7g} "
            for v, s in cols:
                c = by.get((scenario, v, s, loss))
                row += f"{round(c['spurious_retransmissions_mean']):>20d}" if c else f"{'-':>20}"
            lines.append(row)
        lines.append("")
    if {"newreno", "linuxreno"} <= set(grid["variants"]):
        lines.append("linuxreno / newreno, mean normalised goodput")
        lines.append(f"{'loss':>7} {'sack':>10}{'nosack':>10}")
        for loss in grid["losses"]:
            row = f"{loss:>7g} "
            for s in grid["sacks"]:
                a = by.get((grid["scenarios"][0], "linuxreno", s, loss))
                b = by.get((grid["scenarios"][0], "newreno", s, loss))
                ok = a and b and b["normalized_goodput_mean"] > 0
                ratio = a["normalized_goodput_mean"] / b["normalized_goodput_mean"] if ok else None
                row += f"{ratio:>10.2f}" if ratio is not None else f"{'-':>10}"
            lines.append(row)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    grid = GRIDS[a.grid]
    # Without loss nothing in ns-3's runs is random (every run of a cell is the same), so
    # the `controllers` grid runs p = 0 once.
    points = [
        {"scenario": scenario, "loss": loss, "sack": sack, "variant": v, "run": run}
        for scenario, v, sack, loss in cell_keys(grid)
        for run in range(1, (1 if loss == 0 and grid["lossless_once"] else a.runs) + 1)
        if sack or not a.prr_sack_delivered
    ]
    t0 = time.perf_counter()
    results: list[dict] = []
    with ThreadPoolExecutor(max_workers=a.jobs) as pool:
        futures = [
            pool.submit(run_point, p, a.seed, a.duration, a.prr_sack_delivered) for p in points
        ]
        for i, f in enumerate(futures, 1):
            r = f.result()
            results.append(r)
            p = r["inputs"]
            what = (
                f"error {r['error'].splitlines()[0]}"
                if "error" in r
                else f"{r['normalized_goodput']:.3f}"
            )
            print(
                f"[{i}/{len(points)}] {p['scenario']} {p['variant']} sack={p['sack']} "
                f"loss={p['loss']:g} run={p['run']}: {what}",
                file=sys.stderr,
                flush=True,
            )
    wall = time.perf_counter() - t0

    ok = [r for r in results if "error" not in r]
    failed = [r for r in results if "error" in r]
    configs, topology, durations = {}, {}, {}
    for r in ok:
        i = r["inputs"]
        key = f"{i['scenario']}/{i['variant']}/{'sack' if i['sack'] else 'nosack'}"
        configs.setdefault(key, {"tcp": r["tcp"], "variant_defaults": i["variant_defaults"]})
        topology.setdefault(i["scenario"], r["topology"])
        durations.setdefault(i["scenario"], i["duration_s"])
    cells = summarize(ok, grid)
    out = {
        "engine": "ns-3",
        "ns3_version": ok[0]["ns3_version"] if ok else None,
        "grid_name": a.grid,
        "scenarios": list(grid["scenarios"]),
        "command": "make ns3-reference"
        + ("" if a.grid == "reno" else f' NS3_ARGS="--grid {a.grid}"')
        + "  (bench/ns3/sweep.py)",
        "grid": {
            "loss": list(grid["losses"]),
            "sack": list(grid["sacks"]),
            "variant": list(grid["variants"]),
            "seed": a.seed,
            "runs": list(range(1, a.runs + 1)),
            "duration_s": durations,
        },
        "topology": topology,
        "configs": configs,
        "wall_sweep_s": rounded(wall),
        "cells": cells,
        "records": [
            rounded(
                {
                    **{k: r["inputs"].get(k) for k in POINT},
                    **{k: r[k] for k in KEEP},
                }
            )
            for r in ok
        ]
        + failed,
    }
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(dumps_compact(out))

    print(table(cells, grid))
    if ok:
        imp = [r["wall_import_s"] for r in ok]
        print(
            f"\n{len(ok)} runs in {wall:.0f} s wall "
            f"({a.jobs} at a time); ns-3 import {statistics.fmean(imp):.2f} s mean per process "
            f"(min {min(imp):.2f}, max {max(imp):.2f}), not counted in the rates"
        )
    rep = next(
        (
            c
            for c in cells
            if c["scenario"] == "stpd-wireless"
            and c["variant"] == "newreno"
            and c["sack"]
            and c["loss"] == 1e-2
        ),
        None,
    )
    if rep:
        print(
            "newreno sack p=1e-2: "
            f"{rep['events_per_wall_s_mean']:.0f} events/wall-s, "
            f"{rep['delivered_packets_per_wall_s_mean']:.0f} delivered packets/wall-s "
            "(Simulator::Run only; two simulations ran at once)"
        )
    print(f"wrote {a.out}")
    if failed:
        print(f"{len(failed)} runs failed; see 'error' in the records", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
