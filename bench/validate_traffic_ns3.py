"""farlink's competing traffic beside ns-3's (issue 30); writes its section of docs/validation.md.

Reads ns-3's runs from ``bench/ns3/results/ns3_traffic.json`` (``make ns3-traffic``), runs the
same scenarios on farlink's simulator for ``--seeds`` seeds and puts the two side by side:

- ``onoff``: a UDP on-off source (5 Mbit/s of payload while on, 1000-byte payloads, exponential
  on and off periods of mean 1 s) beside one bulk CUBIC flow: the CUBIC flow's goodput;
- ``poisson``: Poisson arrivals of short NewReno flows, exponential sizes of mean 50 kB, at 50 %
  and 80 % of the bottleneck: each flow's completion time (its SYN to its last byte read by the
  receiving application), p50 and p99.

The path is ns-3's: S --100 Mbit/s, 1 ms-- R --10 Mbit/s, 50 ms-- D, drop-tail queues of 100
packets (waiting, the one in service not counted) at both ends of both links; the TCP settings
are farlink's defaults given explicitly (those ns-3 was set to, see bench/ns3/traffic.py), and
1 MiB socket buffers at both ends. The draws of two simulators cannot be the same, so what is
compared is each metric's mean over runs (ns-3: RngRun 1..N; farlink: seeds 1..M), each with
its 95 % confidence interval (Student's t over the runs). Criteria (the issue's): TCP goodput
within 10 % of ns-3's; FCT p50 and p99 within 15 %.

    make validate-traffic-ns3      # or: .venv/bin/python bench/validate_traffic_ns3.py [--seeds N]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import textwrap
import time
from pathlib import Path

from scipy import stats

from farlink import __version__, simulate

ROOT = Path(__file__).resolve().parents[1]
NS3_RESULTS = ROOT / "bench" / "ns3" / "results" / "ns3_traffic.json"
NS3_DIAGNOSTICS = ROOT / "bench" / "ns3" / "results" / "ns3_traffic_diagnostics.json"
DOC = ROOT / "docs" / "validation.md"
BEGIN = "<!-- validate-traffic-ns3: begin (written by `make validate-traffic-ns3`: "
BEGIN += "bench/validate_traffic_ns3.py) -->"
END = "<!-- validate-traffic-ns3: end -->"

# farlink's TCP defaults, given explicitly so that the comparison does not drift with them;
# the buffers are the scenario's (ns-3 was given the same).
TCP = {
    "mss_bytes": 1460,  # 1448-byte payloads with timestamps: ns-3's SegmentSize
    "timestamps": True,
    "sack": True,
    "window_scaling": True,
    "initial_window_segments": 10,
    "delayed_ack": True,
    "delayed_ack_timeout": "200ms",
    "initial_rto": "1s",
    "min_rto": "1s",
    "recovery": "sack",
    "cwnd_reduction": "immediate",
    "limited_transmit": True,
    "receive_buffer_bytes": 1 << 20,
    "send_buffer_bytes": 1 << 20,
    "handshake": True,
}
CUBIC = {**TCP, "cc": "cubic"}
# ns-3's TcpNewReno grows one segment per ACK (RFC 5681 without byte counting)
NEWRENO = {**TCP, "cc": "reno", "growth": "per-ack"}
UDP_ONOFF = {
    "kind": "udp_onoff",
    "rate": "5Mbps",
    "packet_bytes": 1000,
    "on": "1s",
    "off": "1s",
    "distribution": "exponential",
}
SIZE = {"distribution": "exponential", "mean": "50kB"}
QUEUE = {"queue_pkts": 100}
# crates/farlink-core/src/apps/short_flows.rs SIZE_BUCKET_BYTES
SIZE_BUCKET_BYTES = (0, 10_000, 100_000, 1_000_000, 10_000_000)
GOODPUT_TOLERANCE = 0.10
FCT_TOLERANCE = 0.15


def path(duration_s: float, seed: int, flows: list[dict]) -> dict:
    """The scenario: ns-3's path (bench/ns3/traffic.py ACCESS, BOTTLENECK) with these flows."""
    return {
        "name": "traffic-ns3",
        "duration": f"{duration_s}s",
        "seed": seed,
        "nodes": ["S", "R", "D"],
        "links": [
            # queue_pkts bounds both directions of a link
            {
                "name": "S-R",
                "a": "S",
                "b": "R",
                "rate": "100Mbps",
                "delay": "1ms",
                "queue_pkts": 100,
            },
            {
                "name": "R-D",
                "a": "R",
                "b": "D",
                "rate": "10Mbps",
                "delay": "50ms",
                "queue_pkts": 100,
            },
        ],
        "flows": flows,
    }


def scenario(case: str, seed: int, grid: dict, load: float | None = None) -> dict:
    if case == "onoff":
        flows = [
            {"name": "bulk", "from": "S", "to": "D", "tcp": CUBIC, "app": {"kind": "unbounded"}},
            {"name": "onoff", "from": "S", "to": "D", "app": UDP_ONOFF},
        ]
        return path(grid["onoff_duration_s"], seed, flows)
    arrivals_s = grid["poisson_arrivals_s"]
    web = {
        "name": "web",
        "from": "S",
        "to": "D",
        "stop": f"{arrivals_s}s",
        "tcp": NEWRENO,
        "app": {"kind": "flows_poisson", "load": load, "size": SIZE},
    }
    return path(arrivals_s + grid["poisson_drain_s"], seed, [web])


def link_drops(summary: dict, name: str) -> int:
    link = next(x for x in summary["links"] if x["name"] == name)
    return sum(link["fwd"]["drops"].values())


def farlink_run(case: str, seed: int, grid: dict, load: float | None = None) -> dict:
    """One farlink run, its figures under the names of ns-3's records."""
    sc = scenario(case, seed, grid, load)
    sc["trace"] = {"drops": True}  # for the SYNs lost
    result = simulate(sc)
    s = result.summary
    tcp = s["flows"][0]
    rec = {
        "tcp_counters": {
            "retransmissions": tcp["retransmissions"],
            "timeouts": tcp["timeouts"],
            # each SYN lost is sent again (the reverse path never drops: ACKs only)
            "syn_retransmissions": int(result.trace("drops")["syn"].sum()),
        },
        "drops": {"queue_r_to_d": link_drops(s, "R-D"), "queue_s_to_r": link_drops(s, "S-R")},
    }
    if case == "onoff":
        udp = s["flows"][1]
        rec["bulk"] = {"goodput_bps": tcp["goodput_bps"]}
        rec["udp"] = {
            "packets_sent": udp["packets_sent"],
            "goodput_bps": udp["goodput_bps"],
            "loss_rate": udp["loss_rate"],
            "one_way_delay_s": udp["one_way_delay_s"],
        }
    else:
        rec["short_flows"] = {
            "flows_arrived": tcp["flows_arrived"],
            "flows_finished": tcp["flows_finished"],
            "fct_s": tcp["fct_s"],
            "by_size": {str(b["min_bytes"]): b["fct_s"] for b in tcp["fct_s"]["by_size"]},
        }
    return rec


def nearest_rank(values: list[float]) -> dict:
    """p50, p90, p99 by nearest rank, as farlink's `Percentiles::of`."""
    v = sorted(values)
    n = len(v)
    return {f"p{q}": v[min(max(math.ceil(q / 100 * n), 1), n) - 1] for q in (50, 90, 99)}


def ns3_by_size(rec: dict) -> dict:
    """ns-3's completion times per farlink size bucket (`SIZE_BUCKET_BYTES`), from its flows."""
    buckets: dict[str, list[float]] = {}
    for size, fct_us in rec["short_flows"]["flows"]:
        if fct_us is None:
            continue
        low = max(b for b in SIZE_BUCKET_BYTES if size >= b)
        buckets.setdefault(str(low), []).append(fct_us / 1e6)
    return {k: nearest_rank(v) for k, v in buckets.items()}


def get(rec: dict, dotted: str) -> float:
    for k in dotted.split("."):
        rec = rec[k]
    return float(rec)


def mean_ci(values: list[float]) -> tuple[float, float]:
    """The mean and the half-width of its 95 % confidence interval (Student's t)."""
    m = statistics.fmean(values)
    if len(values) < 2:
        return m, float("nan")
    t = stats.t.ppf(0.975, len(values) - 1)
    return m, t * statistics.stdev(values) / len(values) ** 0.5


# (case label, metric path in a record, what it is, unit scale, unit, tolerance or None)
ROWS = [
    ("onoff", "bulk.goodput_bps", "CUBIC goodput", 1e-6, "Mbit/s", GOODPUT_TOLERANCE),
    ("onoff", "udp.goodput_bps", "UDP goodput", 1e-6, "Mbit/s", None),
    ("onoff", "udp.loss_rate", "UDP loss rate", 100, "%", None),
    ("onoff", "udp.one_way_delay_s.p50", "UDP one-way delay p50", 1e3, "ms", None),
    ("onoff", "tcp_counters.retransmissions", "CUBIC retransmissions", 1, "", None),
    ("onoff", "tcp_counters.timeouts", "CUBIC timeouts", 1, "", None),
    ("onoff", "drops.queue_r_to_d", "drops at R (TCP + UDP)", 1, "", None),
    ("poisson", "short_flows.fct_s.p50", "FCT p50", 1e3, "ms", FCT_TOLERANCE),
    ("poisson", "short_flows.fct_s.p99", "FCT p99", 1e3, "ms", FCT_TOLERANCE),
    ("poisson", "short_flows.fct_s.p90", "FCT p90", 1e3, "ms", None),
    ("poisson", "short_flows.fct_s.mean", "FCT mean", 1e3, "ms", None),
    ("poisson", "short_flows.by_size.0.p99", "FCT p99, sizes below 10 kB", 1e3, "ms", None),
    ("poisson", "short_flows.by_size.100000.p50", "FCT p50, 100 kB to 1 MB", 1e3, "ms", None),
    ("poisson", "short_flows.by_size.100000.p90", "FCT p90, 100 kB to 1 MB", 1e3, "ms", None),
    ("poisson", "short_flows.by_size.100000.p99", "FCT p99, 100 kB to 1 MB", 1e3, "ms", None),
    ("poisson", "short_flows.flows_arrived", "flows per run", 1, "", None),
    ("poisson", "tcp_counters.retransmissions", "retransmissions per run", 1, "", None),
    ("poisson", "tcp_counters.timeouts", "timeouts per run", 1, "", None),
    ("poisson", "tcp_counters.syn_retransmissions", "SYNs lost per run", 1, "", None),
    ("poisson", "drops.queue_r_to_d", "drops at R per run", 1, "", None),
]


def fmt(m: float, h: float, scale: float) -> str:
    digits = 3 if abs(m * scale) < 10 else (1 if abs(m * scale) < 1000 else 0)
    return f"{m * scale:.{digits}f} ± {h * scale:.{digits}f}"


def table(ns3: dict[str, list[dict]], ours: dict[str, list[dict]]) -> tuple[list[str], int, int]:
    lines, passed, checked = [], 0, 0
    for cell in ns3:
        case = "onoff" if cell == "onoff" else "poisson"
        for row_case, key, what, scale, unit, tol in ROWS:
            if row_case != case:
                continue
            a = [get(r, key) for r in ns3[cell]]
            b = [get(r, key) for r in ours[cell]]
            (ma, ha), (mb, hb) = mean_ci(a), mean_ci(b)
            diff = mb / ma - 1 if ma else float("nan")
            # could the two means differ by chance alone? (Welch's t-test)
            welch = stats.ttest_ind(a, b, equal_var=False).pvalue
            if tol is None:
                verdict = ""
            else:
                checked += 1
                ok = abs(diff) <= tol
                passed += ok
                verdict = f"±{tol:.0%}: {'yes' if ok else '**no**'}"
            name = f"{what} ({unit})" if unit else what
            label = "UDP on-off + CUBIC" if cell == "onoff" else f"Poisson NewReno, load {cell[8:]}"
            lines.append(
                f"| {label} | {name} | {fmt(ma, ha, scale)} | {fmt(mb, hb, scale)} "
                f"| {diff:+.1%} | {welch:.2f} | {verdict} |"
            )
    return lines, passed, checked


def ns3_cells(doc: dict) -> dict[str, list[dict]]:
    """ns-3's runs by cell (`onoff`, `poisson-<load>`), failed runs left out."""
    cells: dict[str, list[dict]] = {}
    for r in doc["records"]:
        if "error" in r:
            continue
        i = r["inputs"]
        if i["case"] == "poisson":
            r["short_flows"]["by_size"] = ns3_by_size(r)
        cell = "onoff" if i["case"] == "onoff" else f"poisson-{i['load']:g}"
        cells.setdefault(cell, []).append(r)
    return cells


P99 = "short_flows.fct_s.p99"
# What the diagnostic table shows of each short-flow cell.
DIAG_ROWS = [r for r in ROWS if r[0] == "poisson" and r[1] != "short_flows.flows_arrived"]


def diagnostic_section(ns3: dict, ours: dict) -> list[str]:
    """ns-3 with one rule changed (`traffic.py --diag`), beside ns-3 and farlink: evidence for
    an explanation in docs/validation-notes.md, never a reference."""
    if not NS3_DIAGNOSTICS.exists():
        return []
    doc = json.loads(NS3_DIAGNOSTICS.read_text())
    diag = ns3_cells(doc)
    rows, paired = [], []
    for cell, runs in diag.items():
        ref = {r["inputs"]["run"]: r for r in ns3[cell]}
        pairs = [
            f"{get(ref[r['inputs']['run']], P99) * 1e3:.0f} → {get(r, P99) * 1e3:.0f}"
            for r in runs
            if r["inputs"]["run"] in ref
        ]
        paired.append(
            f"Load {cell[8:]}, FCT p99 (ms) of each RngRun, ns-3 → ns-3 with the rule changed: "
            + ", ".join(pairs)
            + "."
        )
        for _, key, what, scale, unit, _ in DIAG_ROWS:
            vals = [mean_ci([get(r, key) for r in rs]) for rs in (ns3[cell], runs, ours[cell])]
            name = f"{what} ({unit})" if unit else what
            rows.append(
                f"| {cell[8:]} | {name} | " + " | ".join(fmt(m, h, scale) for m, h in vals) + " |"
            )
    return [
        "",
        f"### ns-3 with one rule changed: `{doc['grid']['diag']}`",
        "",
        textwrap.fill(
            f"`{doc['command']}` (`bench/ns3/results/ns3_traffic_diagnostics.json`): ns-3's "
            "TcpNewReno with ssthresh = max(2 segments, cwnd / 2) on every short flow "
            "(farlink's RFC 5681 rule) instead of ns-3's max(2 segments, pipe / 2); the same "
            "RngRuns, so the same arrivals and sizes as ns-3's runs above. Not a reference: "
            'evidence for docs/validation-notes.md, "Competing traffic".',
            96,
        ),
        "",
        "| load | metric | ns-3 | ns-3, ssthresh = cwnd / 2 | farlink |",
        "|---|---|---|---|---|",
        *rows,
        "",
        *(textwrap.fill(x, 96) for x in paired),
    ]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=20, help="farlink runs per case (seeds 1..N)")
    ap.add_argument("--out", type=Path, default=DOC)
    ap.add_argument("--no-write", action="store_true", help="print the table only")
    a = ap.parse_args()
    if a.seeds < 2:
        print(f"--seeds: expected at least 2 (for a confidence interval), got {a.seeds}")
        return 2
    if not NS3_RESULTS.exists():
        print(f"no ns-3 results at {NS3_RESULTS}: run `make ns3-traffic` first", file=sys.stderr)
        return 2
    doc = json.loads(NS3_RESULTS.read_text())
    grid = doc["grid"]
    ns3 = ns3_cells(doc)

    t0 = time.perf_counter()
    ours: dict[str, list[dict]] = {}
    for cell in ns3:
        load = None if cell == "onoff" else float(cell[8:])
        case = "onoff" if cell == "onoff" else "poisson"
        ours[cell] = [farlink_run(case, seed, grid, load) for seed in range(1, a.seeds + 1)]
    wall = time.perf_counter() - t0

    lines, passed, checked = table(ns3, ours)
    intro = (
        "`make validate-traffic-ns3` (`bench/validate_traffic_ns3.py`) beside ns-3's runs in "
        f"`bench/ns3/results/ns3_traffic.json` (`make ns3-traffic`, ns-3 {doc['ns3_version']}), "
        f"farlink {__version__}. Path: S –100 Mbit/s, 1 ms– R –10 Mbit/s, 50 ms– D, drop-tail "
        "queues of 100 packets at both ends of both links; TCP: 1448-byte payloads with "
        "timestamps, SACK, initial window 10, delayed ACKs (every second segment, 200 ms), "
        "minimum and initial RTO 1 s (ns-3's SYN timer too), RFC 6675 recovery with cwnd = "
        "ssthresh on entry (ns-3 `TcpClassicRecovery`), 1 MiB socket buffers at both ends. "
        f"UDP on-off beside CUBIC: {grid['onoff_duration_s']:g} s runs; 5 Mbit/s of 1000-byte "
        "payloads while on, exponential on and off periods of mean 1 s (ns-3 "
        "`OnOffApplication`), one unbounded CUBIC flow (ns-3 `TcpCubic` without HyStart). "
        f"Poisson NewReno: flows arriving for {grid['poisson_arrivals_s']:g} s, then "
        f"{grid['poisson_drain_s']:g} s to drain; exponential sizes of mean 50 kB; each its own "
        "connection with its handshake (ns-3 `BulkSendApplication` with `MaxBytes`, "
        "`TcpNewReno`; farlink `reno` with per-ACK growth); completion time from the SYN to the "
        "last byte read by the receiver."
    )
    method = (
        "Each cell: the mean over runs ± the half-width of its 95 % confidence interval (ns-3: "
        f"RngRun {grid['runs'][0]}..{grid['runs'][-1]}; farlink: seeds 1..{a.seeds}); a FCT "
        "percentile is taken in each run (nearest rank, as farlink's result) and then averaged. "
        "Difference: farlink's mean over ns-3's; Welch p: the p-value of Welch's t-test of the "
        "two sets of runs (small: a difference the runs' spread does not explain). The cells "
        'outside the criterion are discussed in docs/validation-notes.md, "Competing traffic".'
    )
    section = [
        BEGIN,
        "",
        "## Competing traffic against ns-3",
        "",
        textwrap.fill(intro, 96),
        "",
        textwrap.fill(method, 96),
        "",
        f"**{passed} of {checked} checked cells within the criterion.**",
        "",
        "| case | metric | ns-3 | farlink | difference | Welch p | criterion |",
        "|---|---|---|---|---|---|---|",
        *lines,
        *diagnostic_section(ns3, ours),
        "",
        END,
    ]
    print("\n".join(section))
    print(f"farlink: {a.seeds} seeds per case in {wall:.0f} s wall")
    if not a.no_write:
        write_section(a.out, section)
        print(f"wrote its section of {a.out}")
    return 0


def write_section(out: Path, section: list[str]) -> None:
    """Replaces the section between the markers, or appends it (the other sections stay)."""
    old = out.read_text() if out.exists() else ""
    text = "\n".join(section)
    if BEGIN in old and END in old:
        head, rest = old.split(BEGIN, 1)
        tail = rest.split(END, 1)[1]
        out.write_text(head + text + tail)
    else:
        out.write_text(old.rstrip("\n") + "\n\n" + text + "\n")


if __name__ == "__main__":
    sys.exit(main())
