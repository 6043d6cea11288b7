"""What a queue discipline costs the engine per event, beside drop-tail.

Scenario: the AQM tests' bottleneck (crates/farlink-core/tests/integration/aqm.rs): one
unbounded CUBIC flow
over a 1 Gbit/s, 1 ms access link into a 10 Mbit/s, 50 ms bottleneck with a 1000-packet queue,
traces off, 120 s simulated. Each discipline (its defaults) runs the same flow; the runs are
interleaved, each the best of several repeats, so the machine's load falls on all alike.

A discipline changes what the flow does (CoDel keeps the queue short, so the flow sends
differently and the run has a different number of events), so the cost is compared per event:
wall time over the engine's event count. The issue's goal: CoDel at most 15 % above drop-tail.

    make bench                      # runs this among the others
    .venv/bin/python bench/bench_aqm.py [--repeats 7] [--duration-s 120]
"""

from __future__ import annotations

import argparse
import json
import time

from farlink import _core

DISCIPLINES = ("droptail", "codel", "fq_codel", "pie", "red", "dualpi2")
#: The issue's bound on CoDel's cost per event, relative to drop-tail's.
CODEL_GOAL = 1.15


def scenario(discipline: str, duration_s: float) -> str:
    bottleneck = {
        "name": "bottleneck", "a": "R", "b": "D", "rate": "10Mbps", "delay": "50ms",
        "queue_pkts": 1000, "queue_discipline": discipline,
    }  # fmt: skip
    access = {"a": "S", "b": "R", "rate": "1Gbps", "delay": "1ms", "queue_pkts": 1000}
    flow = {
        "name": "bulk", "from": "S", "to": "D", "app": {"kind": "unbounded"},
        "tcp": {"cc": "cubic", "mss_bytes": 1448, "receive_buffer": "8MiB"},
    }  # fmt: skip
    doc = {
        "duration": f"{duration_s}s", "seed": 1, "nodes": ["S", "R", "D"],
        "links": [bottleneck, access], "flows": [flow], "trace": {},
    }  # fmt: skip
    return json.dumps(doc)


def measure(duration_s: float, repeats: int) -> dict[str, dict]:
    texts = {d: scenario(d, duration_s) for d in DISCIPLINES}
    best: dict[str, dict] = {}
    for _ in range(repeats):
        for d, text in texts.items():
            started = time.perf_counter()
            raw = _core.run_scenario(text)
            wall_s = time.perf_counter() - started
            events = json.loads(raw["summary"])["events"]
            if d not in best or wall_s < best[d]["wall_s"]:
                ns_per_event = wall_s / events * 1e9
                best[d] = {"wall_s": wall_s, "events": events, "ns_per_event": ns_per_event}
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--duration-s", type=float, default=120.0)
    args = parser.parse_args()
    best = measure(args.duration_s, args.repeats)
    base = best["droptail"]["ns_per_event"]
    print(f"bench_aqm: 10 Mbit/s, 50 ms, one CUBIC flow, {args.duration_s:g} s simulated, "
          f"best of {args.repeats}")  # fmt: skip
    for d, r in best.items():
        print(
            f"  {d:9s} {r['events']:>9d} events  {r['wall_s'] * 1e3:8.1f} ms  "
            f"{r['ns_per_event']:6.1f} ns/event  x{r['ns_per_event'] / base:.3f} of drop-tail"
        )
    ratio = best["codel"]["ns_per_event"] / base
    verdict = "within" if ratio <= CODEL_GOAL else "ABOVE"
    print(f"codel / droptail per event: {ratio:.3f} ({verdict} the goal of {CODEL_GOAL})")


if __name__ == "__main__":
    main()
