"""The link manager for an hour: the demo's bundle (two namespaces, eight simulated Iridium modems
of ``iridium-greenland-8``, a daemon at each end) carrying an unbounded TCP transfer checked byte
for byte, then the air daemon's event log read by ``farlink linkmgr uptime`` and ``farlink
fit-drops`` beside the configured call-drop rate and the simulator's run of the same preset,
seed, timers and duration, with the bundle's goodput against 8 x 2400 bit/s. Writes its table
into docs/linkmgr.md (between the validate-linkmgr markers). Root (namespaces, TUN).

An hour at β = 1/50 min gives about ten drops over eight members: the fit's interval is wide,
and nothing here is tuned to narrow it.

    make validate-linkmgr
    .venv/bin/python bench/validate_linkmgr.py --duration 3min --time-scale 10 --no-doc
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from farlink import units
from farlink.linkmgr.demo import DemoError
from farlink.linkmgr.validation import run_validation, table_markdown
from farlink.outputs import write_between_markers

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "linkmgr.md"
BEGIN = (
    "<!-- validate-linkmgr: begin (written by `make validate-linkmgr`: "
    "bench/validate_linkmgr.py) -->"
)
END = "<!-- validate-linkmgr: end -->"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--duration", default="60min", help="how long the transfer runs (60min)")
    p.add_argument("--time-scale", type=float, default=1.0, help="timers divided by X (1)")
    p.add_argument("--modems", type=int, default=8)
    p.add_argument("--dir", type=Path, default=ROOT / "farlink-out" / "validate-linkmgr")
    p.add_argument("--no-doc", action="store_true", help="print the table only")
    a = p.parse_args(argv)
    try:
        duration_s = units.parse_duration_s(a.duration)
        if a.time_scale < 1:
            raise ValueError(f"--time-scale must be >= 1, got {a.time_scale}")
        v = run_validation(
            modems=a.modems,
            duration_s=duration_s,
            time_scale=a.time_scale,
            folder=a.dir,
            say=lambda line: print(line, file=sys.stderr, flush=True),
        )
    except (ValueError, DemoError) as err:
        print(f"farlink: error: validate-linkmgr: {err}", file=sys.stderr)
        return 2
    table = table_markdown(v)
    print(json.dumps(v.to_dict()))
    print(table)
    if not a.no_doc:
        write_between_markers(DOC, BEGIN, END, table.rstrip("\n"))
        print(f"written to {DOC}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
