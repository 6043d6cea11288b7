"""Tahoe with and without Limited Transmit on seed 003's wireless path: needless retransmissions.

Tahoe's go-back-N after a fast retransmit re-sends segments still in flight; their copies come
back as duplicate ACKs. This prints, per loss rate, the mean over seeds of retransmissions minus
drops (retransmissions of segments that were not lost, give or take the few drops unrepaired at
the end) and of normalised goodput, with Limited Transmit on and off, using the seed's ns-2-like
TCP (python/farlink/reproduce/stpd.py). docs/validation-notes.md explains the loop this once
showed.

    .venv/bin/python bench/tahoe_limited_transmit.py [--seeds 12]
"""

from __future__ import annotations

import argparse
import statistics

from farlink import simulate
from farlink.reproduce.stpd import NS2_LIKE_TCP

LOSSES = (1e-4, 1e-3, 1e-2)


def cell(loss: float, limited_transmit: bool, seeds: int) -> tuple[float, float]:
    needless, goodput = [], []
    for seed in range(1, seeds + 1):
        agg = simulate(
            "stpd-wireless",
            tcp="tahoe",
            loss=loss,
            seed=seed,
            sets=[
                *NS2_LIKE_TCP,
                f"flows[0].tcp.limited_transmit={str(limited_transmit).lower()}",
                "trace={}",
            ],
        ).summary
        needless.append(agg["retransmissions"] - sum(agg["drops"].values()))
        goodput.append(agg["normalized_goodput"])
    return statistics.fmean(needless), statistics.fmean(goodput)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=12)
    a = ap.parse_args()
    print(f"Tahoe, stpd-wireless, ns-2-like TCP, 100 s, seeds 1..{a.seeds} (means)")
    print(f"{'p':>8} {'limited transmit':>17} {'retx - drops':>13} {'goodput':>8}")
    for loss in LOSSES:
        for lt in (True, False):
            needless, goodput = cell(loss, lt, a.seeds)
            print(f"{loss:>8g} {'on' if lt else 'off':>17} {needless:>13.1f} {goodput:>8.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
