"""Speed of the packet engine beside ns-3 and beside a bare event loop, measured in one go.

Scenario: seed 003's lossy wireless path (``stpd-wireless``) at p = 1e-2 with SACK and ns-3's
TCP defaults, the cell ``newreno, SACK on`` of ``docs/validation.md``. Three runs, each the best
of several repeats:

* farlink: ``_core.run_scenario`` from Python (the GIL released, wall time around the call);
* farlink as a user runs it: ``farlink simulate`` with the preset's traces on, written into
  ``--out`` (on their writer thread), the engine's own wall time (``wall_time_s`` of the result)
  and the whole process's;
* ns-3 3.44 through its Python bindings (``bench/ns3/stpd_wireless.py``; wall time of
  ``Simulator::Run`` only, the 5–7 s import excluded), if ``make ns3-env`` has made
  ``.venv-ns3``;
* the bare event loop (``examples/bare_event_loop.rs``): the event queue alone, the engine's
  ceiling on this machine.

It prints events per wall-second and delivered data packets per wall-second for each, and the
ratios the engine is judged by: farlink / ns-3 per delivered packet (goal ≥ 20) and farlink's
event rate / the bare loop's (goal ≥ 0.25). Figures from a shared machine vary from run to run;
the ratios, measured side by side, are what to quote.

    make bench        # also runs bench/bench_models.py
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from farlink import _core
from farlink.scenario import apply_overrides, load_scenario

ROOT = Path(__file__).resolve().parents[1]
NS3_PY = ROOT / ".venv-ns3" / "bin" / "python"
LOSS = 0.01


def farlink_rates(duration_s: float, repeats: int) -> dict:
    doc = apply_overrides(
        load_scenario("stpd-wireless"),
        tcp="sack",
        loss=LOSS,
        duration=f"{duration_s}s",
        sets=[
            'flows[0].tcp.growth="per-ack"',
            "flows[0].tcp.sack=true",
            "trace={}",
        ],
    )
    text = json.dumps(doc)
    best = float("inf")
    summary = {}
    for _ in range(repeats):
        started = time.perf_counter()
        raw = _core.run_scenario(text)
        best = min(best, time.perf_counter() - started)
        summary = json.loads(raw["summary"])
    delivered = summary["aggregate"]["data_segments_delivered"]
    return {
        "engine": "farlink",
        "sim_time_s": summary["sim_time_s"],
        "events": summary["events"],
        "delivered_packets": delivered,
        "wall_s": best,
        "events_per_wall_s": summary["events"] / best,
        "delivered_packets_per_wall_s": delivered / best,
    }


def farlink_cli_rates(duration_s: float, repeats: int) -> dict:
    """``farlink simulate`` with the preset's traces written, as a user runs it."""
    farlink = str(Path(sys.executable).with_name("farlink"))
    best: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(repeats):
            started = time.perf_counter()
            subprocess.run(
                [farlink, "simulate", "stpd-wireless", "--tcp", "sack", "--loss", str(LOSS),
                 "--duration", f"{duration_s}s", "--set", 'flows[0].tcp.growth="per-ack"',
                 "--set", "flows[0].tcp.sack=true", "--out", "run", "--force"],
                cwd=tmp, capture_output=True, text=True, check=True,
            )  # fmt: skip
            process_s = time.perf_counter() - started
            summary = json.loads(Path(tmp, "run", "summary.json").read_text())
            if not best or summary["wall_time_s"] < best["wall_s"]:
                best = {"wall_s": summary["wall_time_s"], "summary": summary}
            best["process_s"] = min(best.get("process_s", process_s), process_s)
        traces = sorted(p.stem for p in Path(tmp, "run").glob("*.parquet"))
    summary = best["summary"]  # the result document: the aggregate at its top level
    delivered = summary["data_segments_delivered"]
    return {
        "engine": "farlink CLI",
        "traces": traces,
        "sim_time_s": summary["sim_time_s"],
        "events": summary["events"],
        "delivered_packets": delivered,
        "wall_s": best["wall_s"],
        "process_s": best["process_s"],
        "events_per_wall_s": summary["events"] / best["wall_s"],
        "delivered_packets_per_wall_s": delivered / best["wall_s"],
    }


def ns3_rates(duration_s: float, repeats: int) -> dict | None:
    if not NS3_PY.exists():
        return None
    best = None
    for run in range(1, repeats + 1):
        out = subprocess.run(
            [str(NS3_PY), str(ROOT / "bench" / "ns3" / "stpd_wireless.py"),
             "--loss", str(LOSS), "--sack", "--variant", "newreno", "--seed", "1",
             "--run", str(run), "--duration", str(duration_s), "--json"],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        record = json.loads(out)
        if best is None or record["wall_run_s"] < best["wall_run_s"]:
            best = record
    delivered = best["delivered_bytes"] / 948
    return {
        "engine": "ns-3",
        "sim_time_s": duration_s,
        "events": best["events"],
        "delivered_packets": delivered,
        "wall_s": best["wall_run_s"],
        "events_per_wall_s": best["events"] / best["wall_run_s"],
        "delivered_packets_per_wall_s": delivered / best["wall_run_s"],
    }


def bare_loop_rates(events: int, repeats: int) -> dict:
    out = subprocess.run(
        ["cargo", "run", "--release", "-q", "-p", "farlink-core", "--example",
         "bare_event_loop", "--", str(events), "64", str(repeats)],
        capture_output=True, text=True, check=True, cwd=ROOT,
    ).stdout  # fmt: skip
    record = json.loads(out)
    return {
        "engine": "bare event loop",
        "events": record["events"],
        "wall_s": record["best_wall_s"],
        "events_per_wall_s": record["events_per_wall_s"],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--farlink-duration", type=float, default=2000.0, help="simulated s")
    parser.add_argument(
        "--cli-duration",
        type=float,
        default=12000.0,
        help="simulated s of the CLI run: long enough for its rate to be the engine's steady one "
        "(2,000 s take 0.06 s, mostly the first chunks' hand-over and the writer's start)",
    )
    parser.add_argument("--ns3-duration", type=float, default=100.0, help="simulated s")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    ours = farlink_rates(args.farlink_duration, args.repeats)
    cli = farlink_cli_rates(args.cli_duration, args.repeats)
    ns3 = ns3_rates(args.ns3_duration, args.repeats)
    bare = bare_loop_rates(50_000_000, args.repeats)
    ratios = {
        "farlink_events_over_bare_loop": ours["events_per_wall_s"] / bare["events_per_wall_s"],
        "farlink_cli_events_over_bare_loop": cli["events_per_wall_s"] / bare["events_per_wall_s"],
    }
    if ns3 is not None:
        ratios["farlink_over_ns3_per_delivered_packet"] = (
            ours["delivered_packets_per_wall_s"] / ns3["delivered_packets_per_wall_s"]
        )
        ratios["farlink_cli_over_ns3_per_delivered_packet"] = (
            cli["delivered_packets_per_wall_s"] / ns3["delivered_packets_per_wall_s"]
        )
        ratios["farlink_over_ns3_per_event"] = ours["events_per_wall_s"] / ns3["events_per_wall_s"]
    if args.json:
        runs = [r for r in (ours, cli, ns3, bare) if r]
        print(json.dumps({"runs": runs, "ratios": ratios}, indent=2))
        return 0
    print(f"stpd-wireless, p = {LOSS:g}, SACK, per-ACK growth; best of {args.repeats}")
    print(f"{'engine':<16} {'sim s':>8} {'events/wall-s':>15} {'delivered pkts/wall-s':>22}")
    for r in (ours, cli, ns3, bare):
        if r is None:
            print(f"{'ns-3':<16} (not run: `make ns3-env` first)")
            continue
        delivered = r.get("delivered_packets_per_wall_s")
        print(
            f"{r['engine']:<16} {r.get('sim_time_s', float('nan')):>8.0f} "
            f"{r['events_per_wall_s']:>15,.0f} "
            f"{'-' if delivered is None else f'{delivered:,.0f}':>22}"
        )
    print(
        f"farlink CLI: traces {', '.join(cli['traces'])} written; the engine {cli['wall_s']:.3f} s,"
        f" the whole process {cli['process_s']:.3f} s"
    )
    for name, value in ratios.items():
        print(f"{name}: {value:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
