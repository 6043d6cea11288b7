"""10,000 short flows through stpd-wireless (issue 30's speed check), as a user runs it.

Runs ``farlink simulate stpd-wireless`` with its flow replaced by a class of short TCP flows
(``flows_poisson``: 2 connections a second, exponential sizes of mean 50 kB, each with its
handshake, over the preset's lossy 1.5 Mbit/s link, about 53 % of it) for 5,000 simulated
seconds (about 10,000 arrivals), as one process with ``--json``. Prints the connections that
arrived and finished, the completion times, the process's wall time and peak memory (its
maximum resident set), and the ratio of simulated to wall time. The issue asks for at least 10
times real time within 2 GiB; the script exits 1 if either fails.

    .venv/bin/python bench/bench_short_flows.py
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

FARLINK = str(Path(sys.executable).with_name("farlink"))  # the entry point a user runs
CLASS = (
    'flows[0].app={kind="flows_poisson", rate=2, size={distribution="exponential", mean="50kB"}}'
)
LIMIT_BYTES = 2 * 1024**3
MIN_SPEEDUP = 10.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", default="5000s", help="simulated time")
    args = parser.parse_args()
    cmd = [FARLINK, "simulate", "stpd-wireless", "--duration", args.duration]
    cmd += ["--set", CLASS, "--json"]
    print("$", " ".join(cmd[1:]))
    started = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    wall_s = time.perf_counter() - started
    # ru_maxrss is in KiB on Linux: the largest child this process waited for.
    peak_bytes = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    doc = json.loads(out)
    flow = doc["flows"][0]
    fct = flow["fct_s"]
    speedup = doc["sim_time_s"] / wall_s
    print(f"connections arrived {flow['flows_arrived']}, finished {flow['flows_finished']}")
    print(
        f"FCT p50 {fct['p50']:.3f} s, p90 {fct['p90']:.3f} s, p99 {fct['p99']:.3f} s; "
        f"slowdown p50 {flow['slowdown']['p50']:.2f}, p99 {flow['slowdown']['p99']:.2f}"
    )
    print(f"simulated {doc['sim_time_s']:.0f} s, {doc['events']:,} events")
    print(f"wall time {wall_s:.2f} s (engine {doc['wall_time_s']:.2f} s): {speedup:.0f}x real time")
    print(f"peak resident memory {peak_bytes / 2**20:.0f} MiB (limit 2048 MiB)")
    ok = speedup >= MIN_SPEEDUP and peak_bytes <= LIMIT_BYTES
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
