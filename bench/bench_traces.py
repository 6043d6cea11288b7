"""What a simulation's traces cost, through the command a user runs, beside the same run without.

Runs ``farlink simulate stpd-wireless --tcp sack --loss 0 --duration 12000s`` (14.75 M events)
as whole processes, alternating in one go:

* ``--json``: the document printed, no ``--out`` (so no trace is recorded or written);
* ``--json --set trace={}``: the reference, every trace switched off;
* ``--out DIR``: the preset's traces recorded and written (the writer thread, delta encoding).

For each it prints the process's wall time (min and median of the repeats) and the engine's own
(``wall_time_s`` of the result: the core's run, the trace writer's last chunks excluded), and
their ratios to the reference. It then writes the traces of the ``--out`` run again with
pyarrow's default Parquet options, to show what the encoding saves in bytes and seconds.

    make bench        # also runs this
    .venv/bin/python bench/bench_traces.py --repeats 5 --duration 12000s
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FARLINK = [str(Path(sys.executable).with_name("farlink"))]  # the entry point a user runs
BASE = ["simulate", "stpd-wireless", "--tcp", "sack", "--loss", "0"]


def timed(args: list[str], cwd: Path) -> tuple[float, dict]:
    """One process: its wall time and the result document it wrote or printed."""
    started = time.perf_counter()
    out = subprocess.run(
        [*FARLINK, *args], capture_output=True, text=True, check=True, cwd=cwd
    ).stdout
    wall_s = time.perf_counter() - started
    if "--json" in args:
        return wall_s, json.loads(out)
    folder = Path(cwd, args[args.index("--out") + 1])
    return wall_s, json.loads((folder / "summary.json").read_text())


def rewrite_with_defaults(folder: Path) -> tuple[int, float, int]:
    """The traces in ``folder`` written again with pyarrow's defaults: (their bytes, seconds,
    farlink's bytes)."""
    import pyarrow.parquet as pq

    files = sorted(folder.glob("*.parquet"))
    tables = [pq.read_table(f) for f in files]
    ours = sum(f.stat().st_size for f in files)
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        for f, table in zip(files, tables, strict=True):
            pq.write_table(table, Path(tmp, f.name))
        seconds = time.perf_counter() - started
        theirs = sum(p.stat().st_size for p in Path(tmp).iterdir())
    return theirs, seconds, ours


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", default="12000s", help="simulated time")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    base = [*BASE, "--duration", args.duration]
    cases = {
        "--json (no --out)": [*base, "--json"],
        "--json --set trace={} (reference)": [*base, "--json", "--set", "trace={}"],
        "--out DIR (traces written)": [*base, "--out", "traced", "--force"],
    }
    walls: dict[str, list[float]] = {name: [] for name in cases}
    engines: dict[str, list[float]] = {name: [] for name in cases}
    events = 0
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.repeats):
            for name, argv in cases.items():
                wall_s, doc = timed(argv, Path(tmp))
                walls[name].append(wall_s)
                engines[name].append(doc["wall_time_s"])
                events = doc["events"]
        reference = "--json --set trace={} (reference)"
        ref_wall, ref_engine = statistics.median(walls[reference]), min(engines[reference])
        print(f"farlink {' '.join(base)}: {events:,} events, {args.repeats} alternated repeats")
        print(
            f"{'run':<36} {'process s (min/median)':>23} {'/ ref':>6} "
            f"{'engine s (min)':>15} {'/ ref':>6} {'Mevents/s':>10}"
        )
        for name in cases:
            wall_min, wall_med, engine = (
                min(walls[name]),
                statistics.median(walls[name]),
                min(engines[name]),
            )
            print(
                f"{name:<36} {wall_min:>11.2f}/{wall_med:<11.2f} {wall_med / ref_wall:>6.2f} "
                f"{engine:>15.3f} {engine / ref_engine:>6.2f} {events / engine / 1e6:>10.2f}"
            )
        theirs, seconds, ours = rewrite_with_defaults(Path(tmp, "traced"))
        print(
            f"traces: {ours / 1e6:.1f} MB as farlink writes them; pyarrow's defaults write "
            f"{theirs / 1e6:.1f} MB and took {seconds:.2f} s on this thread"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
