"""Run the ns-3 reference grid of `stpd-wireless`; write results/ns3_stpd_wireless.json beside it.

Grid: loss p in {0, 1e-3, 1e-2, 3e-2, 1e-1} x SACK on/off x {newreno, linuxreno} x runs 1..N.
Each point is one subprocess of stpd_wireless.py (ns-3 keeps global state, and one process per
point keeps runs independent), at most two at a time (the machine has two cores). Run it with the
interpreter of `.venv-ns3`: `make ns3-reference` (NS3_ARGS="--runs 3" to pass options).
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
DEFAULT_OUT = HERE / "results" / "ns3_stpd_wireless.json"
LOSSES = (0.0, 1e-3, 1e-2, 3e-2, 1e-1)
VARIANTS = ("newreno", "linuxreno")
SACKS = (True, False)
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
    "events",
    "wall_import_s",
    "wall_run_s",
    "events_per_wall_s",
    "delivered_packets_per_wall_s",
)


POINT = ("variant", "sack", "loss", "run")


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
    ap.add_argument("--runs", type=int, default=5, help="runs (ns-3 RNG substreams) per cell")
    ap.add_argument("--seed", type=int, default=1, help="ns-3 RngSeedManager seed for every run")
    ap.add_argument("--duration", type=float, default=100.0, help="simulated seconds per run")
    ap.add_argument("--jobs", type=int, default=2, help="simulations at once (at most 2)")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="results file")
    a = ap.parse_args(argv)
    if a.runs < 1:
        ap.error(f"--runs: expected an integer >= 1, got {a.runs}")
    if not 1 <= a.jobs <= 2:
        ap.error(f"--jobs: expected 1 or 2 (the machine has two cores), got {a.jobs}")
    if a.duration <= 0:
        ap.error(f"--duration: expected a positive number of seconds, got {a.duration}")
    return a


def point_args(p: dict, seed: int, duration: float) -> list[str]:
    return [
        sys.executable,
        str(SCRIPT),
        "--loss",
        repr(p["loss"]),
        "--sack" if p["sack"] else "--no-sack",
        "--variant",
        p["variant"],
        "--seed",
        str(seed),
        "--run",
        str(p["run"]),
        "--duration",
        repr(duration),
        "--json",
    ]


def run_point(p: dict, seed: int, duration: float) -> dict:
    proc = subprocess.run(point_args(p, seed, duration), capture_output=True, text=True)
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


def summarize(records: list[dict]) -> list[dict]:
    cells = []
    for variant in VARIANTS:
        for sack in SACKS:
            for loss in LOSSES:
                rs = [
                    r
                    for r in records
                    if "error" not in r
                    and r["inputs"]["variant"] == variant
                    and r["inputs"]["sack"] == sack
                    and r["inputs"]["loss"] == loss
                ]
                if not rs:
                    continue
                g = [r["normalized_goodput"] for r in rs]
                cells.append(
                    rounded(
                        {
                            "variant": variant,
                            "sack": sack,
                            "loss": loss,
                            "n": len(g),
                            "normalized_goodput_mean": statistics.fmean(g),
                            "normalized_goodput_std": statistics.stdev(g) if len(g) > 1 else 0.0,
                            "normalized_goodput_min": min(g),
                            "normalized_goodput_max": max(g),
                            "retransmissions_mean": statistics.fmean(
                                r["retransmissions"] for r in rs
                            ),
                            "spurious_retransmissions_mean": statistics.fmean(
                                r["retransmissions_minus_drops"] for r in rs
                            ),
                            "timeouts_mean": statistics.fmean(r["timeouts"] for r in rs),
                            "fast_recoveries_mean": statistics.fmean(
                                r["fast_recoveries"] for r in rs
                            ),
                            "cwnd_mean_segments": statistics.fmean(
                                r["cwnd_mean_segments"] or 0.0 for r in rs
                            ),
                            "events_per_wall_s_mean": statistics.fmean(
                                r["events_per_wall_s"] for r in rs
                            ),
                            "delivered_packets_per_wall_s_mean": statistics.fmean(
                                r["delivered_packets_per_wall_s"] for r in rs
                            ),
                        }
                    )
                )
    return cells


def table(cells: list[dict]) -> str:
    by = {(c["variant"], c["sack"], c["loss"]): c for c in cells}
    cols = [(v, s) for v in VARIANTS for s in SACKS]
    head = f"{'loss':>7} " + "".join(f"{v + (' sack' if s else ' nosack'):>20}" for v, s in cols)
    lines = ["mean normalised goodput (std) over runs; goodput / 1.5 Mbps", head]
    for loss in LOSSES:
        row = f"{loss:>7g} "
        for v, s in cols:
            c = by.get((v, s, loss))
            cell = (
                f"{c['normalized_goodput_mean']:.3f} ({c['normalized_goodput_std']:.3f})"
                if c
                else "-"
            )
            row += f"{cell:>20}"
        lines.append(row)
    lines.append("")
    lines.append("spurious retransmissions (retransmissions - drops), mean per run")
    lines.append(head)
    for loss in LOSSES:
        row = f"{loss:>7g} "
        for v, s in cols:
            c = by.get((v, s, loss))
            row += f"{round(c['spurious_retransmissions_mean']):>20d}" if c else f"{'-':>20}"
        lines.append(row)
    lines.append("")
    lines.append("linuxreno / newreno, mean normalised goodput")
    lines.append(f"{'loss':>7} {'sack':>10}{'nosack':>10}")
    for loss in LOSSES:
        row = f"{loss:>7g} "
        for s in SACKS:
            a, b = by.get(("linuxreno", s, loss)), by.get(("newreno", s, loss))
            ok = a and b and b["normalized_goodput_mean"] > 0
            ratio = a["normalized_goodput_mean"] / b["normalized_goodput_mean"] if ok else None
            row += f"{ratio:>10.2f}" if ratio is not None else f"{'-':>10}"
        lines.append(row)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    points = [
        {"loss": loss, "sack": sack, "variant": v, "run": run}
        for v in VARIANTS
        for sack in SACKS
        for loss in LOSSES
        for run in range(1, a.runs + 1)
    ]
    t0 = time.perf_counter()
    results: list[dict] = []
    with ThreadPoolExecutor(max_workers=a.jobs) as pool:
        futures = [pool.submit(run_point, p, a.seed, a.duration) for p in points]
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
                f"[{i}/{len(points)}] {p['variant']} sack={p['sack']} loss={p['loss']:g} "
                f"run={p['run']}: {what}",
                file=sys.stderr,
                flush=True,
            )
    wall = time.perf_counter() - t0

    ok = [r for r in results if "error" not in r]
    failed = [r for r in results if "error" in r]
    configs = {}
    for r in ok:
        key = f"{r['inputs']['variant']}/{'sack' if r['inputs']['sack'] else 'nosack'}"
        configs.setdefault(key, r["tcp"])
    cells = summarize(ok)
    out = {
        "engine": "ns-3",
        "ns3_version": ok[0]["ns3_version"] if ok else None,
        "scenario": "stpd-wireless",
        "command": "make ns3-reference  (bench/ns3/sweep.py)",
        "grid": {
            "loss": list(LOSSES),
            "sack": list(SACKS),
            "variant": list(VARIANTS),
            "seed": a.seed,
            "runs": list(range(1, a.runs + 1)),
            "duration_s": a.duration,
        },
        "topology": ok[0]["topology"] if ok else None,
        "configs": configs,
        "wall_sweep_s": rounded(wall),
        "cells": cells,
        "records": [
            rounded({**{k: r["inputs"][k] for k in POINT}, **{k: r[k] for k in KEEP}}) for r in ok
        ]
        + failed,
    }
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(dumps_compact(out))

    print(table(cells))
    if ok:
        imp = [r["wall_import_s"] for r in ok]
        print(
            f"\n{len(ok)} runs of {a.duration:g} simulated s in {wall:.0f} s wall "
            f"({a.jobs} at a time); ns-3 import {statistics.fmean(imp):.2f} s mean per process "
            f"(min {min(imp):.2f}, max {max(imp):.2f}), not counted in the rates"
        )
    rep = next(
        (c for c in cells if c["variant"] == "newreno" and c["sack"] and c["loss"] == 1e-2),
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
