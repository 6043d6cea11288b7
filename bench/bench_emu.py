"""Accuracy of the emulator's clock: departure-time error of delivered packets against the link
model's own schedule, at 10 and 100 Mbit/s, waking by timerfd alone and with a spin of 10 us (the
default) or 50 us before each deadline.

Path: one link S-D of the given rate, 10 ms each way, a 1000-packet queue, no loss; kernel CUBIC
moves an unbounded bulk transfer for the run's duration (MTU 1500, receive buffer 4 MiB). The
error of a packet is the instant the driver wrote it to the receiving TUN minus the instant the
link model delivered it; the driver's CPU is its thread's user + system time over the run.
Needs CAP_NET_ADMIN and /dev/net/tun.

    make bench-emu
"""

from __future__ import annotations

import argparse
import json

from farlink.emulate import emulate

RATES_MBPS = (10, 100)
SPINS_US = (0, 10, 50)


def scenario(rate_mbps: int, duration_s: float) -> dict:
    return {
        "name": f"bench-emu-{rate_mbps}mbps",
        "seed": 1,
        "duration": f"{duration_s}s",
        "nodes": ["S", "D"],
        "links": [
            {"name": "S-D", "a": "S", "b": "D", "rate": f"{rate_mbps}Mbps", "delay": "10ms",
             "queue_pkts": 1000},
        ],
        "flows": [
            {"name": "bulk", "from": "S", "to": "D",
             "tcp": {"mss_bytes": 1460, "cc": "cubic", "receive_buffer": "4MiB"},
             "app": {"kind": "unbounded"}},
        ],
    }  # fmt: skip


def measure(rate_mbps: int, spin_us: int, duration_s: float) -> dict:
    result = emulate(scenario(rate_mbps, duration_s), spin_us=spin_us)
    s = result.summary
    emu = s["emulator"]
    return {
        "rate_mbps": rate_mbps,
        "spin_us": spin_us,
        "realtime": emu["realtime"],
        "departure_error_us": emu["departure_error_us"],
        "packets_written": emu["packets_written"],
        "packets_per_s": emu["packets_written"] / s["sim_time_s"],
        "cpu_fraction": emu["cpu_fraction"],
        "normalized_goodput": s["normalized_goodput"],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per run")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = [measure(r, s, args.duration) for r in RATES_MBPS for s in SPINS_US]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(f"departure-time error of delivered packets, kernel CUBIC, {args.duration:g} s per run")
    print(f"{'rate':>9} {'wake':>14} {'p50 us':>8} {'p99 us':>8} {'max us':>9} "
          f"{'pkts/s':>8} {'cpu':>6} {'goodput':>8}")  # fmt: skip
    for r in rows:
        e = r["departure_error_us"]
        wake = "timerfd" if r["spin_us"] == 0 else f"spin {r['spin_us']} us"
        print(f"{r['rate_mbps']:>5} Mb/s {wake:>14} {e['p50']:>8.1f} {e['p99']:>8.1f} "
              f"{e['max']:>9.1f} {r['packets_per_s']:>8.0f} {r['cpu_fraction']:>6.1%} "
              f"{r['normalized_goodput']:>8.3f}")  # fmt: skip
    if not all(r["realtime"] for r in rows):
        print("(the driver could not run SCHED_FIFO: no CAP_SYS_NICE)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
