"""What one saturating flow gets through CoDel on the bottleneck of
crates/farlink-core/tests/integration/aqm.rs
(10 Mbit/s, 50 ms each way, 1000 packets, CoDel's 5 ms / 100 ms), by controller and ECN, over
the test's 40 s and over a long steady state, beside what a fluid model of the epochs expects.

For each run it prints the goodput as the test measures it (payload delivered over what the
10 Mbit/s carries of payload, 1448 of each 1488-byte packet) from 10 to 40 s and from STEADY_S
to the end; the window reductions after STEADY_S, the mean time between them (an epoch), the
share of them that came below the W_max the one before left (where fast convergence, RFC 9438
4.7, lowers the next W_max to (1 + beta)/2 of the window; "off" where the run has it off), the
drops per reduction, the CE
marks of the whole run, the median queue delay after STEADY_S and the flow's timeouts.

The fluid model: the window starts an epoch at beta times the window it was reduced from,
W_drop, follows the controller's curve and the epoch ends when it is back at W_drop, where
CoDel drops (W_drop = the bandwidth-delay product plus CoDel's 5 ms target of queue); the link
carries min(W, BDP) a round trip. CUBIC's curve is RFC 9438's W_cubic with its Reno-friendly
W_est (Figure 4); fast convergence sets W_max to (1 + beta)/2 W_drop, otherwise W_max =
W_drop. Linux's CUBIC (and ns-3's) reaches W_max in whole segments once C (K - t)^3 < 1, 1.36 s
before K, so its epoch without fast convergence ends then. Reno halves and grows half a segment
a round trip (one per ACK of two segments).

    .venv/bin/python bench/aqm_codel_goodput.py            # about 5 s
"""

from __future__ import annotations

import argparse
import statistics
import sys

import numpy as np

import farlink
from aqm_cells_diag import below_w_max
from aqm_scenario import scenario

STEADY_S = 20.0  # past slow start's overshoot (cubic-linux's ends in timeouts until ~15 s)
TEST_WINDOW_S = (10.0, 40.0)  # tests/aqm.rs: goodput from 10 s of a 40 s run
MSS_BYTES = 1448
RATE_BPS = 10e6
CODEL_TARGET_S = 0.005
# A reduction: the window falls to less than this fraction of what it was (CUBIC's 0.7,
# Reno's 0.5; a timeout's one segment).
REDUCTION_RATIO = 0.9
# farlink's Reno (per-ACK growth, RFC 5681) behind a receiver that ACKs every second segment
RENO_SEGMENTS_PER_RTT = 0.5
# (controller, fast convergence, ECN): each controller as farlink runs it by default, and the
# two CUBICs without fast convergence (`fast_convergence = false`), the rule that sets them apart
CONFIGS = (
    ("cubic", True, False),
    ("cubic", True, True),
    ("cubic", False, False),
    ("cubic", False, True),
    ("cubic-linux", True, False),
    ("cubic-linux", True, True),
    ("cubic-linux", False, False),
    ("reno", None, False),
    ("reno", None, True),
)


def goodput_share(r, lo_s: float, hi_s: float) -> float:
    """Payload delivered from lo_s to hi_s over what the bottleneck carries of payload."""
    g = r.trace("goodput")
    t, b = g["time_ns"], g["delivered_bytes"].astype(float)
    fwd = r.summary["links"][0]["fwd"]
    wire_bytes = fwd["delivered_bytes"] / fwd["delivered_pkts"]
    i, j = np.searchsorted(t, lo_s * 1e9), np.searchsorted(t, hi_s * 1e9) - 1
    return float((b[j] - b[i]) * 8 / ((hi_s - lo_s) * RATE_BPS * MSS_BYTES / wire_bytes))


def reductions(r, smss: int) -> tuple[np.ndarray, np.ndarray]:
    """Times (s) of the window's reductions after STEADY_S and the window before each
    (segments), from the cwnd trace."""
    c = r.trace("cwnd")
    t, w = c["time_ns"] / 1e9, c["cwnd_bytes"] / smss
    fell = np.concatenate([[False], w[1:] < REDUCTION_RATIO * w[:-1]]) & (t >= STEADY_S)
    k = np.flatnonzero(fell)
    return t[k], w[k - 1]


def run(cc: str, fast_convergence: bool | None, ecn: bool, duration_s: float) -> dict:
    doc = scenario("codel", 1, ecn, duration_s=duration_s)
    doc["flows"][0]["tcp"]["cc"] = cc
    if fast_convergence is False:
        doc["flows"][0]["tcp"]["fast_convergence"] = False
    doc["trace"].update(cwnd=True)
    r = farlink.simulate(doc)
    times, windows = reductions(r, MSS_BYTES)
    q = r.trace("queue_delay")
    mine = (q["link"] == 0) & q["forward"] & (q["time_ns"] >= STEADY_S * 1e9)
    d = r.trace("drops")
    drops = int(((d["link"] == 0) & d["forward"] & (d["time_ns"] >= STEADY_S * 1e9)).sum())
    fc = below_w_max(list(windows), integer=cc != "cubic") if fast_convergence else []
    n = max(len(times), 1)
    return {
        "test_window": goodput_share(r, *TEST_WINDOW_S),
        "steady": goodput_share(r, STEADY_S, duration_s),
        "reductions": len(times),
        "epoch_s": statistics.fmean(np.diff(times)) if len(times) > 1 else float("nan"),
        "fast_convergence": statistics.fmean(fc) if fc else float("nan"),
        "window_at_reduction": statistics.fmean(windows) if len(windows) else float("nan"),
        "drops_per_reduction": drops / n,
        "ce_marks": int(r.summary["links"][0]["fwd"]["ce_marked"]),
        "delay_p50_ms": float(np.median(q["sojourn_ns"][mine])) / 1e6,
        "timeouts": r.summary["flows"][0]["timeouts"],
    }


def fluid_epoch(bdp: float, w_drop: float, beta: float, cubic: bool, fc: bool, integer: bool):
    """The fluid model's epoch: (length s, the link's share over it)."""
    rtt_s = bdp * (MSS_BYTES + 40) * 8 / RATE_BPS
    c = 0.4
    w0 = beta * w_drop
    w_max = (1 + beta) / 2 * w_drop if fc else w_drop
    k = ((w_max - w0) / c) ** (1 / 3) if cubic else 0.0
    # RFC 9438's W_est grows per segment acknowledged; Reno grows per ACK, and the receiver
    # ACKs every second segment: half a segment a round trip
    alpha = 3 * (1 - beta) / (1 + beta) if cubic else RENO_SEGMENTS_PER_RTT
    dt, t, w, busy = 0.001, 0.0, w0, 0.0
    w_est = w0
    while w < w_drop - 1e-9:
        t += dt
        w_est += (alpha if w_est < w_drop or not cubic else 1.0) * dt / rtt_s
        if cubic:
            w_cubic = c * (t - k) ** 3 + w_max
            if integer and not fc and c * (k - t) ** 3 < 1.0 and t < k:
                w_cubic = w_max  # whole segments: W_max once the distance is under one
            w = max(w_cubic, w_est)
        else:
            w = w_est
        busy += min(w, bdp) / bdp * dt
    return t, busy / t


def print_fluid() -> None:
    base_rtt_s = 2 * (0.050 + 0.001) + (MSS_BYTES + 40) * 8 / RATE_BPS
    packet_s = (MSS_BYTES + 40) * 8 / RATE_BPS
    bdp = base_rtt_s / packet_s
    w_drop = bdp + CODEL_TARGET_S / packet_s
    print(
        f"fluid model: BDP {bdp:.1f} segments (round trip {base_rtt_s * 1e3:.1f} ms), "
        f"W_drop {w_drop:.1f} (plus {CODEL_TARGET_S * 1e3:g} ms of queue)"
    )
    full, fast = (
        "CUBIC epoch, W_max = W_drop (RFC 9438, no fast convergence)",
        "CUBIC epoch after fast convergence, W_max = 0.85 W_drop",
    )
    epochs = {
        full: (0.7, True, False, False),
        "CUBIC epoch, W_max = W_drop, whole segments (Linux, ns-3)": (0.7, True, False, True),
        fast: (0.7, True, True, False),
        "Reno epoch (halving)": (0.5, False, False, False),
    }
    out = {}
    for label, (beta, cubic, fc, integer) in epochs.items():
        out[label] = fluid_epoch(bdp, w_drop, beta, cubic, fc, integer)
        length, share = out[label]
        print(f"  {label:<62} {length:4.1f} s, link share {share:.3f}")
    (a, sa), (b, sb) = out[full], out[fast]
    print(
        f"  {'CUBIC epochs alternating with and without fast convergence':<62} "
        f"{(a + b) / 2:4.1f} s, link share {(a * sa + b * sb) / (a + b):.3f}"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=float, default=300.0, help="simulated seconds (300)")
    a = ap.parse_args()
    if a.duration <= STEADY_S + 10:
        ap.error(f"--duration: expected more than {STEADY_S + 10:g} s, got {a.duration:g}")
    print(
        f"| controller | ECN | goodput 10-40 s | goodput {STEADY_S:g}-{a.duration:g} s | "
        "reductions | epoch (s) | fast convergence | window at reduction | "
        "drops per reduction | CE marks (whole run) | delay p50 (ms) | timeouts |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for cc, fast_convergence, ecn in CONFIGS:
        f = run(cc, fast_convergence, ecn, a.duration)
        fc = {None: "", False: "off"}.get(fast_convergence, f"{f['fast_convergence']:.0%}")
        print(
            f"| {cc} | {'on' if ecn else 'off'} | {f['test_window']:.3f} | {f['steady']:.3f} | "
            f"{f['reductions']} | {f['epoch_s']:.2f} | {fc} | {f['window_at_reduction']:.1f} | "
            f"{f['drops_per_reduction']:.1f} | {f['ce_marks']} | {f['delay_p50_ms']:.1f} | "
            f"{f['timeouts']} |",
            flush=True,
        )
    print_fluid()
    return 0


if __name__ == "__main__":
    sys.exit(main())
