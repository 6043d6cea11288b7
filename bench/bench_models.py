"""Benchmark of the model engine: one million call-drop points in one vectorised call.

Prints points per second for ``calldrop_prediction`` over a 10^6-point grid (sizes × per-member
drop rates × loss rates × RTTs), and beside it the same count of a bare NumPy reference (one
``sqrt`` and one divide over 10^6 floats, the ceiling of any array expression on this machine),
so the figure is read as a ratio on a shared, noisy machine. Best of several repeats.

    make bench          # or: .venv/bin/python bench/bench_models.py [--points N] [--repeat R]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from farlink.models import calldrop_prediction


def grid(points: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(2005)
    return {
        "size_bytes": rng.uniform(1e5, 1e8, points),
        "n_links": rng.integers(1, 9, points).astype(float),
        "rtt_s": rng.uniform(0.5, 25.0, points),
        "p": 10 ** rng.uniform(-5, -2, points),
        "beta_per_s": 1 / rng.uniform(600, 12000, points),
        "t0_s": rng.uniform(30, 120, points),
        "mss_bytes": np.full(points, 1448.0),
        "wmax_bytes": rng.uniform(8e3, 64e3, points),
    }


def best_of(repeat: int, work) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    params = grid(args.points)
    model_s = best_of(args.repeat, lambda: calldrop_prediction(**params))
    x = params["p"]
    bare_s = best_of(args.repeat, lambda: np.sqrt(x) / params["rtt_s"])
    print(
        f"calldrop_prediction: {args.points:,} points in {model_s * 1e3:.1f} ms "
        f"= {args.points / model_s:,.0f} points/s"
    )
    print(
        f"bare numpy sqrt+divide: {args.points:,} points in {bare_s * 1e3:.1f} ms "
        f"= {args.points / bare_s:,.0f} points/s"
    )
    print(f"ratio (model time / bare time): {model_s / bare_s:.1f}")


if __name__ == "__main__":
    main()
