"""Diagnosis of the AQM cells outside the tolerance: one cell over several seeds and start
staggers, ns-3 and farlink side by side, read from both sides' traces.

For each (seed, stagger) it runs ns-3 (bench/ns3/aqm.py with `--trace`, in .venv-ns3) and
farlink's simulator (bench/aqm_scenario.py with the cwnd, drops and queue_delay traces) and
prints, per side: the bottleneck's drops after the warm-up, how they fall on the flows, in how
many episodes (drops closer than EPISODE_GAP_S to the last one belong to its episode) and how
many flows each episode hits, the flows' window reductions (fast recovery or timeout) and
timeouts after the warm-up, the queue delay's median and 95th percentile and goodput. Then the
mean, standard deviation and range of each figure over the runs.

The seed is ns-3's RngRun and farlink's scenario seed (as bench/validate_aqm_ns3.py pairs
them). Drop-tail and CoDel draw nothing at random on either side, so only a stagger (flow i
starting at i times it, a diagnosis on both sides) moves those cells; RED and PIE draw their
drops, and the seed moves them.

    .venv/bin/python bench/aqm_cells_diag.py --cell red:1 --seeds 1-10
    .venv/bin/python bench/aqm_cells_diag.py --cell droptail:4 --stagger-ms 0,1,2,5,10,20
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

import farlink
from aqm_scenario import DROP_CAUSE_AQM, DROP_CAUSE_QUEUE_OVERFLOW, WARM_S, measure, scenario

ROOT = Path(__file__).resolve().parents[1]
NS3_SCRIPT = ROOT / "bench" / "ns3" / "aqm.py"
NS3_PYTHON = ROOT / ".venv-ns3" / "bin" / "python"
SEGMENT_BYTES = 1436
# Drops closer together than this belong to one episode: longer than a round trip through the
# full drop-tail queue (1.3 s), shorter than the time between two overflows of four flows.
EPISODE_GAP_S = 1.5
# ns-3's TcpSocketState::TcpCongState_t: CA_RECOVERY and CA_LOSS (a retransmission timeout)
NS3_CA_RECOVERY, NS3_CA_LOSS = 3, 4
# --ns3-set's name for bench/ns3/aqm.py --prr-sack-delivered (not an ns-3 attribute)
PRR_SACK_DELIVERED = "prr-sack-delivered"
CUBIC_BETA = 0.7  # both sides' (ns-3's TcpCubic::Beta, farlink's DEFAULT_BETA)
# farlink's window falling below this fraction of the row before is a reduction (CUBIC's 0.7)
REDUCTION_RATIO = 0.9

FIGURES = (
    "drops_after_warm",
    "episodes",
    "drops_per_episode",
    "flows_per_episode",
    "reductions_after_warm",
    "timeouts_after_warm",
    "window_at_reduction",
    "reduction_interval_s",
    "fast_convergence_share",
    "delay_p50_ms",
    "delay_p95_ms",
    "delay_high_share",
    "goodput",
)


def episodes(times_s: np.ndarray, flows: np.ndarray) -> list[dict]:
    """The episodes of drops (times sorted): first and last drop, drops, the flows hit."""
    out: list[dict] = []
    last = -np.inf
    for t, f in zip(times_s, flows, strict=True):
        if t - last > EPISODE_GAP_S:
            out.append({"first_s": float(t), "drops": 0, "flows": set()})
        out[-1]["drops"] += 1
        out[-1]["flows"].add(int(f))
        out[-1]["last_s"] = float(t)
        last = t
    return out


def window_at(cwnd: list[tuple[np.ndarray, np.ndarray]], t_s: float) -> float:
    """The flows' windows added up at t_s (segments; a flow not started yet counts 0)."""
    total = 0.0
    for times, segments in cwnd:
        k = int(np.searchsorted(times, t_s, side="right")) - 1
        total += float(segments[k]) if k >= 0 else 0.0
    return total


def episode_detail(eps: list[dict], cwnd) -> list[dict]:
    """Each episode with the flows' windows added up one second before its first drop, at it,
    and at its largest during the episode (segments)."""
    out = []
    for e in eps:
        grid = np.linspace(e["first_s"], e["last_s"], 50)
        out.append(
            {
                "first_s": round(e["first_s"], 3),
                "last_s": round(e["last_s"], 3),
                "drops": e["drops"],
                "flows": sorted(e["flows"]),
                "window_1s_before": round(window_at(cwnd, e["first_s"] - 1.0), 1),
                "window_at_first_drop": round(window_at(cwnd, e["first_s"]), 1),
                "window_peak": round(max(window_at(cwnd, t) for t in grid), 1),
            }
        )
    return out


def below_w_max(windows: list[float], integer: bool) -> list[bool]:
    """For each reduction but the first, whether the window it came at was below W_max as
    CUBIC's fast convergence (RFC 9438 4.7) leaves it after the one before: W_max is the
    window at a reduction, or (1 + beta)/2 of it if that window was below the W_max before (then
    fast convergence applied). `integer`: ns-3's rule, whole segments and W_max truncated
    (`TcpCubic::GetSsThresh`); else farlink's, fractional windows."""
    out = []
    w_max = windows[0] if windows else 0.0
    for w in windows[1:]:
        fc = w < w_max
        out.append(fc)
        w_max = w * (1 + CUBIC_BETA) / 2 if fc else w
        if integer:
            w_max = float(int(w_max))
    return out


def reduction_figures(cwnd, reductions: list[tuple[float, int]], integer: bool) -> dict:
    """The flows' windows just before each reduction after the warm-up (segments), the time
    between one flow's reductions (s), as means, and the share of reductions at a window below
    the reconstructed W_max (fast convergence)."""
    before, gaps, fc = [], [], []
    for f, (times, segments) in enumerate(cwnd):
        mine = sorted(t for t, g in reductions if g == f)
        windows = []
        for t in mine:
            k = int(np.searchsorted(times, t, side="left")) - 1
            if k >= 0:
                windows.append(float(segments[k]))
        before += windows
        fc += below_w_max(windows, integer)
        gaps += list(np.diff(mine))
    return {
        "window_at_reduction": statistics.fmean(before) if before else 0.0,
        "reduction_interval_s": statistics.fmean(gaps) if gaps else 0.0,
        "fast_convergence_share": statistics.fmean(fc) if fc else 0.0,
    }


# What the printout adds on request (set from the command line by main).
WINDOW_LEVELS: list[float] = []  # --window-levels
WINDOW_SERIES: tuple[float, float] | None = None  # --window-series
DELAY_WINDOW_S = 3.0  # --delay-windows: the queue delay's p95 over each of these after warm-up
DELAY_HIGH_MS = 10.0


def pick(sorted_ms: np.ndarray, f: float) -> float:
    """The percentile as bench/aqm_scenario.py and bench/ns3/aqm.py pick it."""
    return float(sorted_ms[int((len(sorted_ms) - 1) * f)]) if len(sorted_ms) else -1.0


def delay_figures(wait_t: np.ndarray, wait_ms: np.ndarray, duration_s: float) -> dict:
    """The share of waits after the warm-up above DELAY_HIGH_MS, and the p95 of each
    DELAY_WINDOW_S from the warm-up on."""
    steady = wait_t >= WARM_S
    by_window = []
    for lo in np.arange(WARM_S, duration_s - 1e-9, DELAY_WINDOW_S):
        mine = steady & (wait_t >= lo) & (wait_t < lo + DELAY_WINDOW_S)
        by_window.append(round(pick(np.sort(wait_ms[mine]), 0.95), 1))
    return {
        "delay_high_share": float(np.mean(wait_ms[steady] > DELAY_HIGH_MS)),
        "delay_p95_by_window_ms": by_window,
    }


def window_figures(cwnd, duration_s: float) -> dict:
    """The share of time after the warm-up the flows' windows, added up, are at or above each
    of WINDOW_LEVELS (segments, sampled every ms), and their sum every 0.25 s in WINDOW_SERIES."""
    grid = np.arange(WARM_S, duration_s, 0.001)
    total = np.zeros_like(grid)
    for times, segments in cwnd:
        k = np.searchsorted(times, grid, side="right") - 1
        total += np.where(k >= 0, segments[np.maximum(k, 0)], 0.0)
    out: dict = {
        "window_at_or_above": {f"{x:g}": float(np.mean(total >= x)) for x in WINDOW_LEVELS}
    }
    if WINDOW_SERIES:
        ts = np.arange(WINDOW_SERIES[0], WINDOW_SERIES[1] + 1e-9, 0.25)
        out["window_series"] = [(round(float(t), 2), round(window_at(cwnd, t), 1)) for t in ts]
    return out


def summarize(
    drop_t, drop_flow, cwnd, reductions, timeouts, delay, goodput, integer, waits, duration_s
) -> dict:
    n_flows = len(cwnd)
    steady = drop_t >= WARM_S
    eps = episodes(drop_t[steady], drop_flow[steady])
    n = int(steady.sum())
    return {
        "drops_after_warm": n,
        "drops_per_flow": [int((drop_flow[steady] == f).sum()) for f in range(n_flows)],
        "episodes": len(eps),
        "drops_per_episode": n / len(eps) if eps else 0.0,
        "flows_per_episode": statistics.fmean(len(e["flows"]) for e in eps) if eps else 0.0,
        "episode_detail": episode_detail(eps, cwnd),
        "reductions_after_warm": len(reductions),
        **reduction_figures(cwnd, reductions, integer),
        "timeouts_after_warm": timeouts,
        "delay_p50_ms": delay["p50"],
        "delay_p95_ms": delay["p95"],
        **delay_figures(*waits, duration_s),
        "goodput": goodput,
        **window_figures(cwnd, duration_s),
    }


def run_ns3(cell, seed: int, stagger_ms: float, duration_s: float, python: Path, sets) -> dict:
    discipline, flows, ecn = cell
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "trace.csv"
        argv = [str(python), str(NS3_SCRIPT), "--json", "--discipline", discipline]
        argv += ["--flows", str(flows), "--run", str(seed), "--stagger-ms", f"{stagger_ms:g}"]
        argv += ["--duration", f"{duration_s:g}"]
        argv += ["--trace", str(trace)] + (["--ecn"] if ecn else [])
        argv += [f"--set={item}" for item in sets if item != PRR_SACK_DELIVERED]
        argv += ["--prr-sack-delivered"] if PRR_SACK_DELIVERED in sets else []
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"ns-3 {cell} seed {seed} failed:\n{done.stderr[-2000:]}")
        res = json.loads(done.stdout.strip().splitlines()[-1])
        with trace.open() as fh:
            rows = list(csv.DictReader(fh))
    drops = [(float(r["time_s"]), int(r["flow"])) for r in rows if r["kind"] == "drop"]
    drop_t = np.array([t for t, _ in drops])
    drop_flow = np.array([f for _, f in drops])
    waits = np.array(
        [(float(r["time_s"]), float(r["value"])) for r in rows if r["kind"] == "wait"]
    ).reshape(-1, 2)
    cwnd = []
    for f in range(flows):
        mine = [r for r in rows if r["kind"] == "cwnd" and int(r["flow"]) == f]
        times = np.array([float(r["time_s"]) for r in mine])
        cwnd.append((times, np.array([float(r["value"]) for r in mine])))
    reductions: list[tuple[float, int]] = []
    timeouts = 0
    state = {}
    for r in rows:
        if r["kind"] != "state":
            continue
        f, new = int(r["flow"]), int(float(r["value"]))
        old = state.get(f, 0)
        state[f] = new
        if float(r["time_s"]) < WARM_S:
            continue
        if new in (NS3_CA_RECOVERY, NS3_CA_LOSS) and old not in (NS3_CA_RECOVERY, NS3_CA_LOSS):
            reductions.append((float(r["time_s"]), f))
        if new == NS3_CA_LOSS and old != NS3_CA_LOSS:
            timeouts += 1
    return summarize(
        drop_t,
        drop_flow,
        cwnd,
        reductions,
        timeouts,
        res["queue_delay_ms"],
        res["normalized_goodput"],
        integer=True,
        waits=(waits[:, 0], waits[:, 1]),
        duration_s=duration_s,
    )


def run_farlink(cell, seed: int, stagger_ms: float, duration_s: float, tcp: dict) -> dict:
    discipline, flows, ecn = cell
    doc = scenario(
        discipline, flows, ecn, duration_s=duration_s, seed=seed, stagger_s=stagger_ms / 1e3
    )
    doc["trace"].update(cwnd=True)
    for f in doc["flows"]:
        f["tcp"].update(tcp)
    r = farlink.simulate(doc)
    ours = measure(r, duration_s)
    q = r.trace("queue_delay")
    at_r = (q["link"] == 0) & q["forward"]
    d = r.trace("drops")
    mine = (
        (d["link"] == 0)
        & d["forward"]
        & np.isin(d["cause"], [DROP_CAUSE_QUEUE_OVERFLOW, DROP_CAUSE_AQM])
    )
    c = r.trace("cwnd")
    reductions: list[tuple[float, int]] = []
    timeouts = 0
    cwnd = []
    for f in range(flows):
        m = c["flow"] == f
        t, ss, cw = c["time_ns"][m] / 1e9, c["ssthresh_bytes"][m], c["cwnd_bytes"][m]
        cwnd.append((t, cw / SEGMENT_BYTES))
        after = t >= WARM_S
        # a reduction sets ssthresh and brings the window down: every change of ssthresh after
        # the warm-up, and every fall of the window by more than a tenth (ssthresh is often the
        # same as the last reduction's where the window comes back to the same level)
        changed = np.concatenate([[False], ss[1:] != ss[:-1]])
        changed |= np.concatenate([[False], cw[1:] < REDUCTION_RATIO * cw[:-1]])
        reductions += [(float(x), f) for x in t[changed & after]]
        # a timeout: the window falls to the loss window (one segment) from more
        to_one = np.concatenate([[False], (cw[1:] <= SEGMENT_BYTES) & (cw[:-1] > SEGMENT_BYTES)])
        timeouts += int((to_one & after).sum())
    return summarize(
        d["time_ns"][mine] / 1e9,
        d["flow"][mine],
        cwnd,
        reductions,
        timeouts,
        ours["queue_delay_ms"],
        ours["normalized_goodput"],
        # Linux's CUBIC keeps its window and W_max in whole segments, as ns-3's TcpCubic
        integer=tcp.get("cc") == "cubic-linux",
        waits=(q["time_ns"][at_r] / 1e9, q["sojourn_ns"][at_r] / 1e6),
        duration_s=duration_s,
    )


def parse_cell(text: str) -> tuple[str, int, bool]:
    parts = text.split(":")
    if len(parts) not in (2, 3) or not parts[1].isdigit():
        raise argparse.ArgumentTypeError(f"expected DISCIPLINE:FLOWS[:ecn], got {text!r}")
    return parts[0], int(parts[1]), len(parts) == 3 and parts[2] == "ecn"


def parse_seeds(text: str) -> list[int]:
    lo, _, hi = text.partition("-")
    try:
        seeds = list(range(int(lo), int(hi or lo) + 1))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected N or N-M, got {text!r}") from None
    if not seeds or seeds[0] < 1:
        raise argparse.ArgumentTypeError(f"expected seeds >= 1, got {text!r}")
    return seeds


def line(label: str, fig: dict) -> str:
    return (
        f"{label:<24} drops {fig['drops_after_warm']:4d} {fig['drops_per_flow']} "
        f"episodes {fig['episodes']:3d} ({fig['drops_per_episode']:5.1f} drops, "
        f"{fig['flows_per_episode']:.2f} flows each) reductions {fig['reductions_after_warm']:3d} "
        f"timeouts {fig['timeouts_after_warm']:2d} window at reduction "
        f"{fig['window_at_reduction']:5.1f} every {fig['reduction_interval_s']:4.1f} s "
        f"({fig['fast_convergence_share']:.0%} below W_max) "
        f"delay p50 {fig['delay_p50_ms']:6.1f} "
        f"p95 {fig['delay_p95_ms']:6.1f} ms ({fig['delay_high_share']:.0%} over "
        f"{DELAY_HIGH_MS:g} ms) goodput {fig['goodput']:.3f}"
    )


def print_extras(fig: dict, a: argparse.Namespace) -> None:
    if a.episodes:
        print_episodes(fig)
    if a.delay_windows:
        print(
            f"    delay p95 per {DELAY_WINDOW_S:g} s from {WARM_S:g} s (ms):",
            fig["delay_p95_by_window_ms"],
        )
    for level, share in fig["window_at_or_above"].items():
        print(f"    windows added up at or above {level} segments {share:.0%} of the time")
    if "window_series" in fig:
        print(
            "    windows added up every 0.25 s:",
            " ".join(f"{t:g}:{w:.0f}" for t, w in fig["window_series"]),
        )


def print_episodes(fig: dict) -> None:
    for e in fig["episode_detail"]:
        print(
            f"    episode {e['first_s']:6.2f}-{e['last_s']:6.2f} s: {e['drops']:3d} drops, "
            f"flows {e['flows']}; windows added up: {e['window_1s_before']:.0f} one second "
            f"before, {e['window_at_first_drop']:.0f} at the first drop, "
            f"{e['window_peak']:.0f} at most"
        )


def spread(runs: list[dict]) -> dict:
    out = {}
    for k in FIGURES:
        v = [float(r[k]) for r in runs]
        sd = statistics.stdev(v) if len(v) > 1 else 0.0
        out[k] = {"mean": statistics.fmean(v), "sd": sd, "min": min(v), "max": max(v)}
    return out


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cell", type=parse_cell, required=True, help="e.g. droptail:4, red:1:ecn")
    ap.add_argument("--seeds", type=parse_seeds, default=[1], help="N or N-M (default 1)")
    ap.add_argument(
        "--duration", type=float, default=40.0, help="simulated seconds (default 40, the table's)"
    )
    ap.add_argument("--stagger-ms", default="0", help="comma-separated staggers (default 0)")
    ap.add_argument(
        "--farlink-tcp",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="diagnosis: a scenario key of farlink's flows' tcp table (JSON value, or a string), "
        "e.g. cwnd_reduction=prr, max_ooo_ranges=window; repeatable",
    )
    ap.add_argument(
        "--ns3-set",
        action="append",
        default=[],
        metavar="ATTR=VALUE",
        help="diagnosis: an extra ns-3 default (bench/ns3/aqm.py --set), or prr-sack-delivered "
        "(bench/ns3/aqm.py --prr-sack-delivered); repeatable",
    )
    ap.add_argument("--no-ns3", action="store_true", help="farlink's side only")
    ap.add_argument("--ns3-python", type=Path, default=NS3_PYTHON)
    ap.add_argument("--episodes", action="store_true", help="also print every episode")
    ap.add_argument(
        "--delay-windows", action="store_true", help="also print the delay p95 of every 3 s"
    )
    ap.add_argument(
        "--window-levels",
        default="",
        help="comma-separated window levels (segments, the flows' added up): print the share "
        "of time at or above each",
    )
    ap.add_argument(
        "--window-series", metavar="START:END", help="print the windows added up every 0.25 s"
    )
    ap.add_argument("--json", type=Path, help="also write every run's figures here")
    a = ap.parse_args()
    try:
        staggers = [float(x) for x in a.stagger_ms.split(",")]
    except ValueError:
        ap.error(f"--stagger-ms: expected numbers separated by commas, got {a.stagger_ms!r}")
    tcp = {}
    for item in a.farlink_tcp:
        key, sep, value = item.partition("=")
        if not sep or not key:
            ap.error(f"--farlink-tcp: expected KEY=VALUE, got {item!r}")
        try:
            tcp[key] = json.loads(value)
        except json.JSONDecodeError:
            tcp[key] = value
    if a.duration <= WARM_S:
        ap.error(f"--duration: expected more than the {WARM_S:g} s warm-up, got {a.duration}")
    if not a.no_ns3 and not a.ns3_python.exists():
        ap.error(f"--ns3-python: no interpreter at {a.ns3_python} (make ns3-env)")
    global WINDOW_SERIES
    try:
        WINDOW_LEVELS.extend(float(x) for x in a.window_levels.split(",") if x)
        if a.window_series:
            lo, _, hi = a.window_series.partition(":")
            WINDOW_SERIES = (float(lo), float(hi))
    except ValueError:
        ap.error("--window-levels / --window-series: expected numbers (N,M / START:END)")
    a.staggers, a.tcp = staggers, tcp
    return a


def main() -> int:
    a = parse_args()
    sides: dict[str, list[dict]] = {"ns-3": [], "farlink": []}
    for stagger in a.staggers:
        for seed in a.seeds:
            label = f"seed {seed} stagger {stagger:g} ms"
            if not a.no_ns3:
                fig = run_ns3(a.cell, seed, stagger, a.duration, a.ns3_python, a.ns3_set)
                sides["ns-3"].append({"seed": seed, "stagger_ms": stagger, **fig})
                print(line(f"ns-3    {label}", fig), flush=True)
                print_extras(fig, a)
            fig = run_farlink(a.cell, seed, stagger, a.duration, a.tcp)
            sides["farlink"].append({"seed": seed, "stagger_ms": stagger, **fig})
            print(line(f"farlink {label}", fig), flush=True)
            print_extras(fig, a)
    summary = {side: spread(runs) for side, runs in sides.items() if runs}
    for side, s in summary.items():
        print(f"{side} over {len(sides[side])} runs (mean ± sd [min, max]):")
        for k, v in s.items():
            print(f"  {k:<22} {v['mean']:8.2f} ± {v['sd']:6.2f} [{v['min']:g}, {v['max']:g}]")
    if a.json:
        a.json.write_text(json.dumps({"cell": a.cell, "runs": sides, "summary": summary}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
