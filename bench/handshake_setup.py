"""Simulated connection set-up time beside Cardwell et al.'s E[L_h] (seed 000 section 4.2.1).

    python bench/handshake_setup.py [--seeds 300]

S - G - D with a 2 Mbps GEO hop of 255 ms each way, Bernoulli loss p on both directions of it,
a 1 KB transfer with ``tcp.handshake = true``. Prints, per p, the mean simulated
``handshake.setup_time_s`` over the seeds with its standard error, and
``handshake_latency_s(RTT, T_s = 1 s, p)`` with RTT the lossless set-up time.
``tests/test_handshake.py`` runs the same scenario, ``geo_short``.
"""

from __future__ import annotations

import argparse

import numpy as np

from farlink import simulate
from farlink.models.short import handshake_latency_s

INITIAL_RTO_S = 1.0


def geo_short(p: float, seed: int, handshake: bool = True, pcap: bool = False) -> dict:
    """S - G - D over a 2 Mbps GEO hop (255 ms each way), loss p both ways, 1 KB."""
    loss = {"loss": {"model": "bernoulli", "p": p}}
    doc = {
        "seed": seed,
        "duration": "300s",
        "nodes": ["S", "G", "D"],
        "links": [
            {"name": "S-G", "a": "S", "b": "G", "rate": "10Mbps", "delay": "0.5ms"},
            {"name": "G-D", "a": "G", "b": "D", "rate": "2Mbps", "delay": "255ms",
             "queue_pkts": 100, "fwd": loss, "rev": loss},
        ],
        "flows": [{"name": "f", "from": "S", "to": "D", "tcp": {"handshake": handshake},
                   "app": {"kind": "bulk", "size": "1KB"}}],
    }  # fmt: skip
    if pcap:
        doc["pcap"] = ["G-D"]
    return doc


def setup_s(p: float, seed: int) -> float:
    return simulate(geo_short(p, seed)).summary["flows"][0]["handshake"]["setup_time_s"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=300)
    args = parser.parse_args()
    rtt_s = setup_s(0.0, 1)
    print(f"lossless set-up (RTT): {rtt_s:.4f} s")
    print("p      simulated mean  std error  E[L_h]")
    for p in (0.05, 0.1, 0.2):
        s = np.array([setup_s(p, seed) for seed in range(1, args.seeds + 1)])
        se = s.std(ddof=1) / np.sqrt(len(s))
        model = float(handshake_latency_s(rtt_s, INITIAL_RTO_S, p))
        print(f"{p:<6} {s.mean():.4f} s       {se:.4f}     {model:.4f} s")


if __name__ == "__main__":
    main()
