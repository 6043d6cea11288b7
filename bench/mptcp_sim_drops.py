"""The simulator's side of docs/multipath.md's Multipath TCP comparison with call drops, by what
it models of Linux's Multipath TCP: the bundles, sizes, seeds and flow of
bench/validate_mptcp.py (each bundle sped up 20 times, its call drops too), run with Linux's
default scheduler and its connection-level retransmission timer on or off
(``[flows.mptcp] scheduler`` and ``retransmit_timer``, crates/farlink-core/src/mptcp/linux.rs),
with Linux's scheduler and timer but a subflow's close sending again only what that subflow
carried (``close_resends = "subflow"``, where Linux sends the whole unacknowledged send queue
again), and with a subflow silent over more than four of the timer's expiries marked stale
(``stale_loss_count = 4``, Linux's default; farlink's is 0), beside the kernel's transfer times
that docs/multipath.md's table prints.

``--calm`` prints iridium-4's 1 MB without call drops instead (goodput per seed).
``--send-buffer 128KB`` runs every variant with that send buffer in place of the validation's
64 KB (the kernel doubles the 64 KB ``SO_SNDBUF`` both engines are given); ``--keep-first``
with member 0's subflow kept through its member's drops, as the emulator leaves the kernel's
first subflow (``keep_first_subflow``). ``--sent`` prints, per bundle and seed with call drops,
the payload the members carried per byte delivered, the kernel's (from the comparisons
``make validate-mptcp`` keeps in ``--runs``, default farlink-out/validate-mptcp) beside the
simulator's with each close (and the share of it the receiver got twice). ``--diag BUNDLE
SEED`` prints one run's detail instead: per member its subflows, the bytes they carried, their
timeouts, what limited them (``limited_s``), and the connection's goodput per second.

Run from the repository's root: ``python bench/mptcp_sim_drops.py`` (seconds per run).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from statistics import fmean
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import validate_mptcp as v  # noqa: E402

#: What each variant sets beside the validation's flow (the defaults: Linux's scheduler and
#: timer, a close sending the whole send queue again, no subflow marked stale).
VARIANTS = {
    "minrtt, no timer": [
        'flows[0].mptcp.scheduler="minrtt"',
        "flows[0].mptcp.retransmit_timer=false",
    ],
    "minrtt, timer": ['flows[0].mptcp.scheduler="minrtt"'],
    "linux, no timer": ["flows[0].mptcp.retransmit_timer=false"],
    "linux, timer, subflow's data on close": ['flows[0].mptcp.close_resends="subflow"'],
    "linux, timer": [],
    "linux, timer, stale after 4": ["flows[0].mptcp.stale_loss_count=4"],
}


def kernel_times() -> dict[tuple[str, int], float]:
    """The kernel's transfer times per bundle and seed, from docs/multipath.md's table."""
    row = re.compile(r"^\| `([\w-]+)` \| (\d) \| [^|]* \| [\d.]+ \| ([\d.]+) \|")
    out = {}
    for line in v.DOC.read_text(encoding="utf-8").splitlines():
        m = row.match(line)
        if m:
            out[(m.group(1), int(m.group(2)))] = float(m.group(3))
    return out


def scenario(name: str, drops: bool = True) -> tuple[dict[str, Any], list[str]]:
    """Bundle ``name`` sped up, and the validation's flow and call drops (or none)."""
    from farlink.bonding import speed_up
    from farlink.scenario import load_scenario

    doc = speed_up(load_scenario(name), v.SPEEDUP)
    rate = v.drop_rate_sets(doc, v.BUNDLES[name]) if drops else [v.NO_DROPS]
    return doc, v.flow_sets() + rate


def run(name: str, seed: int, extra: list[str], traced: bool = False, drops: bool = True):
    from farlink import simulate

    doc, sets = scenario(name, drops)
    sets = [*sets, *extra, "trace={}"]
    if traced:
        sets += ["trace.goodput=true", 'trace.goodput_interval="1s"']
    size = v.BUNDLES[name] if drops else "1MB"
    return simulate(doc, size=size, seed=seed, sets=sets, transport="mptcp")


def kernel_goodputs() -> dict[int, float]:
    """The kernel's goodput without call drops per seed (kbit/s), from docs/multipath.md."""
    row = re.compile(r"^\| (\d) \| [\d.]+ \| ([\d.]+) \| [^|]* \| (?:yes|no) \|")
    out = {}
    for line in v.DOC.read_text(encoding="utf-8").splitlines():
        m = row.match(line)
        if m:
            out[int(m.group(1))] = float(m.group(2))
    return out


def calm_table() -> None:
    """Without call drops: iridium-4's 1 MB, the goodput per seed and variant."""
    kernel = kernel_goodputs()
    print("| seed | kernel (kbit/s) | " + " | ".join(VARIANTS) + " |")
    print("|---|---|" + "---|" * len(VARIANTS))
    for seed in range(1, v.SEEDS + 1):
        k = kernel[seed]
        cells = []
        for extra in VARIANTS.values():
            f = run("iridium-4", seed, extra, drops=False).summary["flows"][0]
            g = f["goodput_bps"] / 1e3
            cells.append(f"{g:.1f} ({100 * (g - k) / k:+.1f} %)")
        print(f"| {seed} | {k:.1f} | " + " | ".join(cells) + " |", flush=True)


def table(bundles: list[str]) -> None:
    kernel = kernel_times()
    print("| bundle | seed | kernel (s) | " + " | ".join(VARIANTS) + " |")
    print("|---|---|---|" + "---|" * len(VARIANTS))
    for name in bundles:
        means: dict[str, list[float]] = {k: [] for k in VARIANTS}
        for seed in range(1, v.SEEDS + 1):
            k = kernel[(name, seed)]
            cells = []
            for label, extra in VARIANTS.items():
                f = run(name, seed, extra).summary["flows"][0]
                t = f["transfer_time_s"]
                means[label].append(t)
                rtx, stale = f["mptcp"]["timer_retransmissions"], f["mptcp"]["stale_subflows"]
                timer = "" if rtx is None else f", {rtx} rtx, {stale} stale"
                cells.append(f"{t:.1f} ({100 * (t - k) / k:+.1f} %{timer})")
            print(f"| `{name}` | {seed} | {k:.1f} | " + " | ".join(cells) + " |", flush=True)
        k = fmean(kernel[(name, s)] for s in range(1, v.SEEDS + 1))
        cells = [f"{fmean(ts):.1f} ({100 * (fmean(ts) - k) / k:+.1f} %)" for ts in means.values()]
        print(f"| `{name}` | mean | {k:.1f} | " + " | ".join(cells) + " |", flush=True)


def sent_table(runs: Path, bundles: list[str]) -> int:
    """Payload sent per byte delivered with call drops: the kernel's kept runs beside the
    simulator's, with each close."""
    labels = ["linux, timer, subflow's data on close", "linux, timer"]
    kept = {}
    for name in bundles:
        path = runs / f"{name}-drops.json"
        try:
            kept[name] = json.loads(path.read_text(encoding="utf-8"))["mptcp"]["emulate"]["runs"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            print(f"error: {path}: no kept kernel runs ({e})", file=sys.stderr)
            return 2
    print("| bundle | seed | kernel | " + " | ".join(labels) + " |")
    print("|---|---|---|" + "---|" * len(labels))
    for name in bundles:
        for r in kept[name]:
            delivered = r["goodput_bps"] * r["transfer_time_s"] / 8
            kernel = sum(s["bytes_sent"] for s in r["subflows"]) / delivered
            cells = []
            for label in labels:
                f = run(name, r["seed"], VARIANTS[label]).summary["flows"][0]
                sent = sum(s["bytes_sent"] for s in f["subflows"]) / f["delivered_bytes"]
                twice = f["mptcp"]["duplicate_bytes"] / f["delivered_bytes"]
                cells.append(f"{sent:.2f} ({twice:.2f} twice)")
            print(f"| `{name}` | {r['seed']} | {kernel:.2f} | " + " | ".join(cells) + " |")
    return 0


def diag(name: str, seed: int, variant: str) -> None:
    r = run(name, seed, VARIANTS[variant], traced=True)
    f = r.summary["flows"][0]
    print(
        f"{name} seed {seed} ({variant}): {f['transfer_time_s']:.1f} s, mptcp {f['mptcp']}, "
        f"limited_s { ({k: round(x, 1) for k, x in f['limited_s'].items() if x}) }"
    )
    for s in f["subflows"]:
        downs = ", ".join(f"{a:.1f}-{b:.1f}" for a, b in s["down_intervals_s"])
        lim = {k: round(x, 1) for k, x in s["limited_s"].items() if x}
        print(
            f"  {s['route']}: {s['established']} subflows, {s['bytes']} bytes, "
            f"{s['bytes_sent']} sent, {s['retransmissions']} rtx, {s['timeouts']} timeouts, "
            f"limited_s {lim}, down {downs}"
        )
    g = r.trace("goodput")
    line, before = [], 0
    for t, b in zip(g["time_ns"], g["delivered_bytes"], strict=True):
        line.append(f"{t / 1e9:.0f}:{(int(b) - before) / 1000:.1f}")
        before = int(b)
    print("  KB read per second: " + " ".join(line))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bundles", nargs="*", default=list(v.BUNDLES))
    p.add_argument("--diag", nargs=2, metavar=("BUNDLE", "SEED"))
    p.add_argument("--variant", default="linux, timer", choices=list(VARIANTS))
    p.add_argument("--calm", action="store_true", help="iridium-4 without call drops instead")
    p.add_argument(
        "--send-buffer",
        help="every variant with this send buffer in place of the validation's 64 KB "
        "(a diagnosis: the kernel doubles SO_SNDBUF)",
    )
    p.add_argument(
        "--keep-first",
        action="store_true",
        help="member 0's subflow is not closed on its drop (as the emulator leaves it)",
    )
    p.add_argument(
        "--sent",
        action="store_true",
        help="payload sent per byte delivered, the kernel's kept runs beside the simulator's",
    )
    p.add_argument("--runs", type=Path, default=ROOT / "farlink-out" / "validate-mptcp")
    a = p.parse_args(argv)
    if a.keep_first:
        for label in VARIANTS:
            VARIANTS[label] = [*VARIANTS[label], v.KEEP_FIRST]
    if a.send_buffer:
        extra = f'flows[0].tcp.send_buffer="{a.send_buffer}"'
        for label in VARIANTS:
            VARIANTS[label] = [*VARIANTS[label], extra]
    if a.sent:
        return sent_table(a.runs, a.bundles)
    if a.calm:
        calm_table()
    elif a.diag:
        diag(a.diag[0], int(a.diag[1]), a.variant)
    else:
        table(a.bundles)
    return 0


if __name__ == "__main__":
    sys.exit(main())
