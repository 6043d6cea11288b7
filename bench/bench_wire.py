"""farlink's user-space CUBIC on the wire beside the kernel's CUBIC on the same lossless long fat
path, and the user-space sender's ACK-to-send latency.

The path is the one of ``bench_emu_throughput.py``: one link of 100 Mbit/s, 50 ms each way,
a drop-tail queue of one bandwidth-delay product (833 packets of 1500 bytes), no loss, MTU 1500,
socket buffers of 16 MiB asked (above the 2.5 MB of path and queue; the kernel caps them at
net.core.rmem_max / wmem_max), an unbounded transfer for 30 s. Each round runs the kernel's
CUBIC (``--sender kernel``) and farlink's (``--sender farlink``), the order alternating from one
round to the next so neither always runs second on a machine whose load drifts.

Printed per run: payload goodput over the rate, the same from 5 s on (after slow start, from
the sender's own acknowledged-bytes counter), retransmissions, timeouts, the driver thread's
CPU and, for farlink's sender, the time spent inside its own calls (its CPU: it runs on the
driver's thread) and its ACK-to-send latency (a received ACK to the first segment it released,
and to the last of that burst; p50, p99, max in µs). Then, per round, farlink's goodput over
the kernel's (goal: at least 0.90) and the spread over the rounds. The load average is printed
beside each run: the machine's other work moves every figure. The goal is for 30 s runs: a
shorter one is mostly slow start and the recovery from its overshoot, where a timeout of
farlink's sender (RFC recovery, no RACK or HyStart) weighs far more (docs/performance.md).

Needs CAP_NET_ADMIN and /dev/net/tun (root).

    make bench-wire     # or: .venv/bin/python bench/bench_wire.py [--duration 10] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os

import numpy as np

from bench_emu_throughput import BDP_PKTS, cubic_scenario, socket_caps
from farlink.emulate import emulate

GOAL_RATIO = 0.90
STEADY_FROM_S = 5.0


def acked_rate_bps(trace: dict, from_s: float) -> float | None:
    """Payload acknowledged per second from `from_s` to the last sample, from the sender's own
    counter (the `tcp_info` trace's acked_bytes), in bit/s."""
    t = np.asarray(trace["time_s"], dtype=float)
    acked = np.asarray(trace["acked_bytes"], dtype=float)
    after = np.flatnonzero(t >= from_s)
    if len(after) < 2:
        return None
    i, j = after[0], after[-1]
    return float((acked[j] - acked[i]) * 8 / (t[j] - t[i]))


def run(sender: str, duration_s: float) -> dict:
    load = os.getloadavg()[0]
    result = emulate(cubic_scenario(duration_s), sender=sender)
    s = result.summary
    (flow,) = s["flows"]
    emu = s["emulator"]
    steady = acked_rate_bps(result.trace("tcp_info"), STEADY_FROM_S)
    row = {
        "sender": flow["sender"],
        "load_avg_1min": load,
        "goodput_bps": flow["goodput_bps"],
        "normalized_goodput": flow["normalized_goodput"],
        "steady_normalized": None if steady is None else steady / flow["bottleneck_bps"],
        "retransmissions": flow["retransmissions"],
        "timeouts": flow["timeouts"],
        "queue_overflows": flow["drops"]["queue_overflow"],
        "driver_cpu_fraction": emu["cpu_fraction"],
        "error": flow["error"],
    }
    if "wire" in flow:
        timing = flow["wire"]["timing"]
        row["sender_cpu_fraction"] = timing["busy_s"] / s["sim_time_s"]
        row["ack_to_first_send_us"] = timing["ack_to_first_send_us"]
        row["ack_to_burst_end_us"] = timing["ack_to_burst_end_us"]
    return row


def rounds(n: int, duration_s: float) -> list[dict[str, dict]]:
    out = []
    for r in range(n):
        order = ("kernel", "farlink") if r % 2 == 0 else ("farlink", "kernel")
        out.append({sender: run(sender, duration_s) for sender in order})
    return out


def fmt_latency(p: dict) -> str:
    return f"{p['p50']:.1f} / {p['p99']:.1f} / {p['max']:.0f} ({p['count']} ACKs)"


def report(results: list[dict[str, dict]], duration_s: float) -> None:
    caps = socket_caps()
    print(f"CUBIC, 100 Mbit/s, 100 ms RTT, queue {BDP_PKTS} packets (one BDP), no loss, "
          f"{duration_s:g} s; buffers asked 16 MiB, capped at rmem_max {caps['rmem_max']} / "
          f"wmem_max {caps['wmem_max']}; {os.cpu_count()} CPUs")  # fmt: skip
    print(f"{'round':>5} {'sender':>8} {'load':>5} {'goodput':>8} {'from 5 s':>8} {'retx':>5} "
          f"{'RTOs':>4} {'driver cpu':>10} {'sender cpu':>10}")  # fmt: skip
    ratios = []
    for r, pair in enumerate(results, start=1):
        for sender, row in pair.items():
            steady = row["steady_normalized"]
            own = row.get("sender_cpu_fraction")
            print(f"{r:>5} {sender:>8} {row['load_avg_1min']:>5.1f} "
                  f"{row['normalized_goodput']:>8.3f} "
                  f"{'-' if steady is None else f'{steady:.3f}':>8} "
                  f"{row['retransmissions']:>5} {row['timeouts']:>4} "
                  f"{row['driver_cpu_fraction']:>10.1%} "
                  f"{'-' if own is None else f'{own:.1%}':>10}")  # fmt: skip
            if row["error"]:
                print(f"      error: {row['error']}")
        ratios.append(pair["farlink"]["goodput_bps"] / pair["kernel"]["goodput_bps"])
    print("farlink's ACK-to-send latency, µs, p50 / p99 / max:")
    for r, pair in enumerate(results, start=1):
        f = pair["farlink"]
        print(f"  round {r}: first segment {fmt_latency(f['ack_to_first_send_us'])}; "
              f"whole burst {fmt_latency(f['ack_to_burst_end_us'])}")  # fmt: skip
    listed = ", ".join(f"{x:.3f}" for x in ratios)
    print(f"goodput farlink / kernel: {listed}; mean {np.mean(ratios):.3f}, "
          f"spread {min(ratios):.3f}-{max(ratios):.3f} (goal >= {GOAL_RATIO:.2f}: "
          f"{'met' if min(ratios) >= GOAL_RATIO else 'NOT met'})")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=30.0, help="seconds of each run")
    parser.add_argument("--rounds", type=int, default=1, help="kernel and farlink, alternated")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.duration <= 0 or args.rounds < 1:
        parser.error("--duration must be positive and --rounds at least 1")
    results = rounds(args.rounds, args.duration)
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        report(results, args.duration)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
