"""farlink's queue disciplines beside ns-3's traffic-control queue discs; writes docs/validation.md.

Reads ns-3's runs of the AQM dumbbell (bench/ns3/results/ns3_aqm.json, made by `make ns3-aqm`),
runs farlink's simulator on the same scenario per cell (bench/aqm_scenario.py: the bottleneck of
crates/farlink-core/tests/integration/aqm.rs, its queue delay from the `queue_delay` trace), and
writes the
side-by-side table into its own section of docs/validation.md, with the issue's tolerances
(issue 29, "Against ns-3"): goodput within 10 %, the median and 95th-percentile queue delay
within 20 % or 2 ms, drops and CE marks within 20 %.

    make validate-aqm-ns3          # .venv/bin/python bench/validate_aqm_ns3.py
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import farlink
from aqm_scenario import WARM_S, measure, scenario

ROOT = Path(__file__).resolve().parents[1]
NS3_RESULTS = ROOT / "bench" / "ns3" / "results" / "ns3_aqm.json"
DOC = ROOT / "docs" / "validation.md"
BEGIN = (
    "<!-- validate-aqm-ns3: begin (written by `make validate-aqm-ns3`: "
    "bench/validate_aqm_ns3.py) -->"
)
END = "<!-- validate-aqm-ns3: end -->"

GOODPUT_REL = 0.10
DELAY_REL, DELAY_ABS_MS = 0.20, 2.0
COUNT_REL = 0.20


def within(ours: float, theirs: float, rel: float, abs_: float = 0.0) -> bool:
    return abs(ours - theirs) <= max(rel * abs(theirs), abs_)


def cell_line(ns3: dict, ours: dict) -> tuple[str, list[str]]:
    """The table row of one cell, and the names of the figures outside the tolerance."""
    i = ns3["inputs"]
    out = []

    def pair(name: str, theirs: float, mine: float, ok: bool, fmt: str) -> str:
        if not ok:
            out.append(name)
        text = f"{theirs:{fmt}} / {mine:{fmt}}"
        return text if ok else f"**{text}**"

    g = pair(
        "goodput",
        ns3["normalized_goodput"],
        ours["normalized_goodput"],
        within(ours["normalized_goodput"], ns3["normalized_goodput"], GOODPUT_REL),
        ".3f",
    )
    delays = []
    for q in ("p50", "p95"):
        theirs, mine = ns3["queue_delay_ms"][q], ours["queue_delay_ms"][q]
        ok = within(mine, theirs, DELAY_REL, DELAY_ABS_MS)
        delays.append(pair(f"delay {q}", theirs, mine, ok, ".1f"))
    counts = []
    for name, theirs, mine in (
        ("drops", ns3["disc"]["dropped"], ours["dropped"]),
        ("drops after warm-up", ns3["disc"]["dropped_after_warm"], ours["dropped_after_warm"]),
        ("marks", ns3["disc"]["marked"], ours["marked"]),
    ):
        counts.append(pair(name, theirs, mine, within(mine, theirs, COUNT_REL), "d"))
    row = (
        f"| {i['discipline']} | {i['flows']} | {'on' if i['ecn'] else 'off'} | {g} "
        f"| {delays[0]} | {delays[1]} | {counts[0]} | {counts[1]} | {counts[2]} "
        f"| {', '.join(out) if out else 'all within'} |"
    )
    return row, out


def section(ns3_doc: dict, rows: list[str], outside: int) -> list[str]:
    first = ns3_doc["records"][0]
    duration_s = first["inputs"]["duration_s"]
    return [
        BEGIN,
        "",
        "## Queue disciplines against ns-3's traffic control",
        "",
        "Written by `make validate-aqm-ns3` (`bench/validate_aqm_ns3.py`) from ns-3's runs in",
        f"`bench/ns3/results/ns3_aqm.json` (`make ns3-aqm`, ns-3 {ns3_doc['ns3_version']}) and",
        f"farlink {farlink.__version__} runs of the same cells. Do not edit by hand; the cells",
        'outside are explained in `docs/validation-notes.md` ("Queue disciplines against ns-3:',
        'the cells outside").',
        "",
        "Scenario (crates/farlink-core/tests/integration/aqm.rs's bottleneck): senders on 1",
        "Gbit/s, 1 ms access links to R; R–D 10 Mbit/s, 50 ms, a 1000-packet queue at R toward D",
        "running the",
        "discipline with farlink's defaults (ns-3's set to them where they differ:",
        "`disc_defaults_changed` in the results file); unbounded CUBIC flows (ns-3 `TcpCubic`,",
        "HyStart off) of 1436-byte segments in 1488-byte IP packets, 8 MiB buffers, all",
        f"starting at 0; {duration_s:g} s, one seed per cell (ns-3 RngRun 1, farlink seed 1).",
        "Goodput: payload",
        f"delivered from {WARM_S:g} s to the end over 10 Mbit/s. Queue delay: each packet's wait",
        "at the bottleneck from its arrival to its first bit on the wire, for the packets leaving",
        f"after {WARM_S:g} s (ns-3: from the disc's enqueue to the device's `PhyTxBegin`, the",
        "device's one-packet queue included; farlink: the `queue_delay` trace), median and 95th",
        "percentile in ms. Drops and CE marks: the bottleneck queue's, over the whole run (ns-3:",
        "`QueueDisc::Stats`; farlink: the link's `drops`, aqm + queue_overflow, and `ce_marked`),",
        f"and the drops after {WARM_S:g} s, past slow start (ns-3: the disc's `Drop` trace;",
        "farlink: the `drops` trace). Each cell reads ns-3 / farlink; bold is outside the",
        "tolerance: goodput within 10 %, delays within 20 % or 2 ms, drops and marks within 20 %.",
        "",
        f"**{len(rows) - outside} of {len(rows)} cells within every tolerance.**",
        "",
        "| discipline | flows | ECN | goodput | delay p50 (ms) | delay p95 (ms) | drops "
        f"| drops after {WARM_S:g} s | CE marks | outside |",
        "|---|---|---|---|---|---|---|---|---|---|",
        *rows,
        "",
        END,
    ]


def write_section(doc: Path, lines: list[str]) -> None:
    """Replaces this script's section of `doc`, or appends it (the other generators keep what
    follows their own sections)."""
    old = doc.read_text() if doc.exists() else ""
    text = "\n".join(lines) + "\n"
    if BEGIN in old and END in old:
        head, rest = old.split(BEGIN, 1)
        tail = rest.split(END, 1)[1].lstrip("\n")
        new = head + text + ("\n" + tail if tail else "")
    else:
        new = old.rstrip("\n") + "\n\n" + text
    doc.write_text(new)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ns3", type=Path, default=NS3_RESULTS)
    parser.add_argument("--out", type=Path, default=DOC)
    parser.add_argument("--json", type=Path, help="also write every cell's figures here")
    args = parser.parse_args()
    if not args.ns3.exists():
        print(f"no ns-3 results at {args.ns3}: run `make ns3-aqm` first", file=sys.stderr)
        return 2
    ns3_doc = json.loads(args.ns3.read_text())
    rows, outside, cells = [], 0, []
    for rec in ns3_doc["records"]:
        i = rec["inputs"]
        duration_s = float(i["duration_s"])
        doc = scenario(i["discipline"], i["flows"], i["ecn"], duration_s=duration_s, seed=i["run"])
        ours = measure(farlink.simulate(doc), duration_s)
        row, out = cell_line(rec, ours)
        rows.append(row)
        outside += bool(out)
        cells.append({"inputs": i, "ns3": rec, "farlink": ours, "outside": out})
        print(row, flush=True)
    write_section(args.out, section(ns3_doc, rows, outside))
    if args.json:
        args.json.write_text(json.dumps(cells, indent=1) + "\n")
    print(f"{len(rows) - outside}/{len(rows)} cells within every tolerance; wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
