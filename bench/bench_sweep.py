"""Speed of sweeps: the process pool's speed-up on 2 workers, and Dask's overhead per run.

Two measurements, each beside its reference in the same run:

* **Speed-up.** A CPU-bound sweep (``stpd-wireless`` for 20,000 simulated seconds, 8 loss rates
  × 2 seeds, about half a second per run) on the local process pool with 1 worker and with 2
  workers, into fresh directories, interleaved, best of ``--repeats``. The wall time is that of
  ``run_sweep`` as a user sees it: planning, starting the pool, running, writing one Parquet file
  per run. Goal: 1 worker / 2 workers ≥ 1.8 on two cores. Beside it, how much longer one run
  took with two workers than with one: near 1.00 when each worker had a core to itself; well
  above it, the machine was busy with other work (or its two "cores" are one core's two hardware
  threads) and the speed-up says more about that than about the pool.
* **Dask's overhead per run.** Many tiny runs (1 s of simulated time, well under a millisecond
  each) on the process pool (2 workers) and on a ``distributed.LocalCluster`` (2 single-threaded
  worker processes, started beforehand and not timed). The cost per run is the slope between a
  small and a large sweep, ``(T(N) - T(n)) / (N - n)``, so fixed costs (the pool's start, the
  scheduler's first contact) cancel; Dask's overhead is its cost per run minus the pool's.
  Measured as farlink sends runs (in batches of about 50 ms of work, ``BATCH_SECONDS``) and
  with one run per submission, which shows each executor's cost per task.

    .venv/bin/python bench/bench_sweep.py [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from farlink.sweeps.dataset import load_results
from farlink.sweeps.executors import DaskCluster, ProcessPool
from farlink.sweeps.run import run_sweep
from farlink.sweeps.sweep import sweep_from_options

LOSSES = "1e-3,2e-3,3e-3,4e-3,5e-3,6e-3,7e-3,8e-3"


def timed_sweep(sweep, executor, folder: Path) -> tuple[float, float]:
    """Wall time of ``run_sweep`` and the mean wall time of one run on its worker."""
    started = time.perf_counter()
    report = run_sweep(sweep, folder, executor=executor)
    elapsed = time.perf_counter() - started
    assert report.computed == report.runs and report.failed == 0, report
    runs = load_results(folder).column("wall_time_s").to_pylist()
    return elapsed, sum(runs) / len(runs)


def speedup(duration: str, repeats: int) -> dict:
    sweep = sweep_from_options(
        "stpd-wireless", grid=[f"loss={LOSSES}"], fixed={"duration": duration}, seeds=2
    )
    best = {1: (float("inf"), 0.0), 2: (float("inf"), 0.0)}
    with tempfile.TemporaryDirectory() as tmp:
        for repeat in range(repeats):  # interleaved, best of each: load from elsewhere varies
            for workers in (1, 2):
                folder = Path(tmp) / f"w{workers}-{repeat}"
                best[workers] = min(best[workers], timed_sweep(sweep, ProcessPool(workers), folder))
    return {
        "runs": 16,
        "duration": duration,
        "wall_1_worker_s": best[1][0],
        "wall_2_workers_s": best[2][0],
        "mean_run_s_1_worker": best[1][1],
        "mean_run_s_2_workers": best[2][1],
        # > 1 when the two workers did not each have a core to themselves (other load, SMT)
        "run_slowdown_2_workers": best[2][1] / best[1][1],
        "speedup": best[1][0] / best[2][0],
    }


def tiny_sweep(runs: int):
    losses = ",".join(f"{0.001 + 0.0001 * i:.4f}" for i in range(runs // 2))
    return sweep_from_options(
        "stpd-wireless", grid=[f"loss={losses}"], fixed={"duration": "1s"}, seeds=2
    )


def per_run_cost(executor, small: int, large: int, tmp: Path, label: str) -> dict:
    t_small, _ = timed_sweep(tiny_sweep(small), executor, tmp / f"{label}-small")
    t_large, _ = timed_sweep(tiny_sweep(large), executor, tmp / f"{label}-large")
    return {
        "small_runs": small,
        "large_runs": large,
        "wall_small_s": t_small,
        "wall_large_s": t_large,
        "per_run_ms": (t_large - t_small) / (large - small) * 1e3,
    }


def dask_overhead(small: int, large: int) -> dict:
    from distributed import Client, LocalCluster

    import farlink.sweeps.run

    result = {}
    with (
        tempfile.TemporaryDirectory() as name,
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
            host="127.0.0.1",
        ) as cluster,
        Client(cluster) as client,
    ):  # fmt: skip
        client.run(lambda: __import__("farlink.sweeps.run"))  # warm the workers' imports
        tmp = Path(name)
        default = farlink.sweeps.run.BATCH_SECONDS
        for batching, seconds in (("batched", default), ("unbatched", 0.0)):
            farlink.sweeps.run.BATCH_SECONDS = seconds
            try:
                pool = per_run_cost(ProcessPool(2), small, large, tmp, f"pool-{batching}")
                dask = per_run_cost(
                    DaskCluster(client=client), small, large, tmp, f"dask-{batching}"
                )
            finally:
                farlink.sweeps.run.BATCH_SECONDS = default
            result[batching] = {
                "pool": pool,
                "dask": dask,
                "dask_overhead_per_run_ms": dask["per_run_ms"] - pool["per_run_ms"],
            }
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", default="20000s", help="simulated time of a CPU-bound run")
    parser.add_argument("--repeats", type=int, default=3, help="best of this many, per size")
    parser.add_argument("--small", type=int, default=100, help="runs of the small tiny sweep")
    parser.add_argument("--large", type=int, default=1000, help="runs of the large tiny sweep")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()

    result = {
        "cores": os.cpu_count(),
        "load_average_1min_before": os.getloadavg()[0],
        "speedup": speedup(args.duration, args.repeats),
        "overhead": dask_overhead(args.small, args.large),
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return
    s, o = result["speedup"], result["overhead"]
    print(
        f"cores: {result['cores']}, load average before: {result['load_average_1min_before']:.2f}"
    )
    print(
        f"CPU-bound sweep, {s['runs']} runs of stpd-wireless for {s['duration']} "
        f"({s['mean_run_s_1_worker']:.3f} s per run with 1 worker):"
    )
    print(f"  process pool, 1 worker : {s['wall_1_worker_s']:.2f} s")
    print(f"  process pool, 2 workers: {s['wall_2_workers_s']:.2f} s")
    print(f"  speed-up 2 vs 1 worker : {s['speedup']:.2f}x (goal >= 1.8)")
    print(
        f"  one run took {s['run_slowdown_2_workers']:.2f}x as long beside a second worker "
        "(1.00 when each worker has a core to itself)"
    )
    for batching in ("batched", "unbatched"):
        b = o[batching]
        how = "in batches of ~50 ms" if batching == "batched" else "one run per submission"
        print(
            f"tiny runs (1 s simulated), {how}; cost per run = slope "
            f"{b['pool']['small_runs']} -> {b['pool']['large_runs']} runs:"
        )
        for label in ("pool", "dask"):
            r = b[label]
            name = "process pool, 2 workers" if label == "pool" else "Dask LocalCluster, 2 workers"
            print(
                f"  {name:<29}: {r['per_run_ms']:.2f} ms per run "
                f"({r['wall_small_s']:.2f} s for {r['small_runs']}, "
                f"{r['wall_large_s']:.2f} s for {r['large_runs']})"
            )
        print(f"  Dask's overhead per run     : {b['dask_overhead_per_run_ms']:+.2f} ms")


if __name__ == "__main__":
    main()
