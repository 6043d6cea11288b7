"""Kernel TCP through the emulator beside the same TCP through a real kernel bottleneck (tbf).

For each controller (reno, cubic, bbr), rate (10, 100 Mbit/s) and loss (0, 1e-2), with no
added delay and a 50-packet drop-tail queue: repetitions alternating emulator and kernel path
(farlink.tbf_compare states how rate, queue and loss are matched). Prints the table and, with
--write, puts it in docs/emulator.md between its markers. Root: namespaces, TUN, tc, iptables.

The criterion, fixed before any run: goodput within 5 %, and median srtt within 10 % or 0.5 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from farlink.outputs import write_between_markers
from farlink.tbf_compare import emulator_run, kernel_run, median_of
from farlink.testbed import missing_capability

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "emulator.md"
BEGIN = "<!-- compare-tbf: begin (written by `make compare-emu-tbf`: bench/compare_tbf.py) -->"
END = "<!-- compare-tbf: end -->"
QUEUE_PKTS = 50
GOODPUT_TOLERANCE = 0.05
SRTT_TOLERANCE = 0.10
SRTT_SLACK_MS = 0.5


def within(emu: float | None, ker: float | None, rel: float, slack: float = 0.0) -> bool:
    if emu is None or ker is None:
        return False
    return abs(emu - ker) <= max(rel * abs(ker), slack)


def row(cc: str, rate_bps: float, loss: float, emu: list[dict], ker: list[dict]) -> dict:
    m = {
        side: {k: median_of(runs, k) for k in
               ("goodput_bps", "retransmissions", "timeouts", "srtt_ms", "queue_delay_ms",
                "cwnd_pkts")}
        for side, runs in (("emu", emu), ("kernel", ker))
    }  # fmt: skip
    ok_goodput = within(m["emu"]["goodput_bps"], m["kernel"]["goodput_bps"], GOODPUT_TOLERANCE)
    ok_srtt = within(m["emu"]["srtt_ms"], m["kernel"]["srtt_ms"], SRTT_TOLERANCE, SRTT_SLACK_MS)
    return {"cc": cc, "rate_bps": rate_bps, "loss": loss, **m, "goodput_ok": ok_goodput,
            "srtt_ok": ok_srtt, "runs": {"emu": emu, "kernel": ker}}  # fmt: skip


def fmt(v: float | None, scale: float = 1.0, digits: int = 1) -> str:
    return "-" if v is None else f"{v / scale:.{digits}f}"


def table(rows: list[dict], meta: dict) -> list[str]:
    lines = [
        f"{meta['reps']} repetitions of {meta['duration_s']:g} s per path and cell, alternated;"
        f" medians shown as emulator / kernel path. Load average (1 min) before "
        f"{meta['load_before']:.2f}, after {meta['load_after']:.2f} on {meta['cpus']} CPUs;"
        f" {meta['wall_s'] / 60:.0f} min in all.",
        "",
        "| cc | R (Mbit/s) | p | goodput (Mbit/s) | retrans | timeouts | srtt (ms) "
        "| queue delay (ms) | cwnd (pkts) | goodput / srtt within |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        e, k = r["emu"], r["kernel"]

        def both(key: str, s: float = 1.0, d: int = 1, e: dict = e, k: dict = k) -> str:
            return f"{fmt(e[key], s, d)} / {fmt(k[key], s, d)}"

        verdict = f"{'yes' if r['goodput_ok'] else 'NO'} / {'yes' if r['srtt_ok'] else 'NO'}"
        lines.append(
            f"| {r['cc']} | {r['rate_bps'] / 1e6:g} | {r['loss']:g} | {both('goodput_bps', 1e6, 2)}"
            f" | {both('retransmissions', d=0)} | {both('timeouts', d=0)} | {both('srtt_ms', d=2)}"
            f" | {both('queue_delay_ms', d=2)} | {both('cwnd_pkts', d=0)} | {verdict} |"
        )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=20.0, help="seconds per run")
    parser.add_argument("--reps", type=int, default=3, help="repetitions per path and cell")
    parser.add_argument("--cc", default="reno,cubic,bbr")
    parser.add_argument("--rates", default="10e6,100e6", help="bit/s, comma-separated")
    parser.add_argument("--losses", default="0,0.01")
    parser.add_argument("--write", action="store_true", help="update docs/emulator.md")
    parser.add_argument("--json", type=Path, help="also write every run here")
    args = parser.parse_args()
    why = missing_capability()
    if why:
        print(f"compare_tbf: {why}", file=sys.stderr)
        return 2
    cells = [
        (cc, float(rate), float(loss))
        for cc in args.cc.split(",")
        for rate in args.rates.split(",")
        for loss in args.losses.split(",")
    ]
    started = time.monotonic()
    load_before = os.getloadavg()[0]
    rows = []
    for cc, rate, loss in cells:
        runs: dict[str, list[dict]] = {"emu": [], "kernel": []}
        for rep in range(args.reps):
            order = ("emu", "kernel") if rep % 2 == 0 else ("kernel", "emu")
            # A seed per repetition: iptables draws afresh each run, so must the emulator.
            for side in order:
                if side == "emu":
                    out = emulator_run(rate, QUEUE_PKTS, loss, cc, args.duration, seed=rep + 1)
                else:
                    out = kernel_run(rate, QUEUE_PKTS, loss, cc, args.duration)
                runs[side].append(out)
        r = row(cc, rate, loss, runs["emu"], runs["kernel"])
        rows.append(r)
        print(table([r], {"reps": args.reps, "duration_s": args.duration, "load_before":
              load_before, "load_after": os.getloadavg()[0], "cpus": os.cpu_count(),
              "wall_s": time.monotonic() - started})[-1], flush=True)  # fmt: skip
    meta = {
        "reps": args.reps,
        "duration_s": args.duration,
        "load_before": load_before,
        "load_after": os.getloadavg()[0],
        "cpus": os.cpu_count(),
        "wall_s": time.monotonic() - started,
    }
    lines = table(rows, meta)
    print("\n".join(lines))
    if args.json:
        args.json.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1, default=str))
    if args.write:
        write_between_markers(DOC, BEGIN, END, "\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
