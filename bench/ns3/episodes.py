"""Loss-recovery episodes of one run, ns-3's and farlink's side by side: what ssthresh each sets.

For every entry into fast recovery: cwnd just before, FlightSize (highest sequence sent minus the
cumulative ACK), the ssthresh set, and FlightSize - 2 x ssthresh (0 when ssthresh is FlightSize/2;
ns-3's pipe-based rule leaves out the SACKed and lost segments). For ns-3 also how far cwnd
stands above ssthresh once the ACK that ends recovery has been processed (the growth ns-3 credits
to that ACK). Segments of 948 bytes. Run with farlink's environment:

    .venv-ns3/bin/python bench/ns3/stpd_wireless.py --loss 0.01 --variant newreno --trace ns3.csv
    .venv/bin/python bench/ns3/episodes.py --ns3-trace ns3.csv --loss 0.01 --growth per-ack
"""

from __future__ import annotations

import argparse
import csv
import statistics
from pathlib import Path

SEGMENT_BYTES = 948
FAST_RECOVERY = 3  # ns-3 TcpSocketState::CA_RECOVERY


def ns3_episodes(path: Path) -> tuple[list[dict], list[float]]:
    """Fast-recovery entries of an ns-3 `--trace` CSV, and cwnd - ssthresh after each exit."""
    rows = [
        (float(r["time_s"]), r["event"], float(r["value"])) for r in csv.DictReader(path.open())
    ]
    cwnd = ack = high = ssthresh = 0.0
    state = 0
    episodes: list[dict] = []
    exit_credit: list[float] = []
    for i, (t, event, value) in enumerate(rows):
        if event == "cwnd":
            cwnd = value
        elif event == "ack":
            ack = max(ack, value)
        elif event == "high_tx":
            high = value
        elif event == "ssthresh":
            ssthresh = value
        elif event == "state":
            if value == FAST_RECOVERY and state != FAST_RECOVERY:
                # ssthresh once this instant's events are processed (a TracedValue reports
                # only changes: none if it kept its value)
                same = [v for (t2, e2, v) in rows[i:] if t2 == t and e2 == "ssthresh"]
                episodes.append(
                    {
                        "t": t,
                        "cwnd": cwnd,
                        "flight": high - ack,
                        "ssthresh": same[0] if same else ssthresh,
                    }
                )
            if state == FAST_RECOVERY and value == 0:
                # cwnd once every event of this instant (the exit ACK) has been processed
                after = [v for (t2, e2, v) in rows[i:] if t2 == t and e2 == "cwnd"]
                if after:
                    exit_credit.append((after[-1] - ssthresh) / SEGMENT_BYTES)
            state = int(value)
    return episodes, exit_credit


def farlink_episodes(loss: float, growth: str, seed: int) -> list[dict]:
    """Fast-recovery entries of a farlink run with ns-3's TCP settings (bench/validate_ns3.py)."""
    import numpy as np

    from farlink import simulate

    r = simulate(
        "stpd-wireless",
        loss=loss,
        tcp="sack",
        duration="100s",
        seed=seed,
        sets=[
            "flows[0].tcp.sack=true",
            f'flows[0].tcp.growth="{growth}"',
            'flows[0].tcp.cc="reno"',
            "flows[0].tcp.initial_window_segments=10",
            "flows[0].tcp.delayed_ack=true",
            'flows[0].tcp.delayed_ack_timeout="200ms"',
            "flows[0].tcp.timestamps=true",
            'flows[0].tcp.min_rto="1s"',
            "trace={cwnd=true, seq=true, ack=true}",
        ],
    )
    c, s, a = r.trace("cwnd"), r.trace("seq"), r.trace("ack")
    sent_end = np.maximum.accumulate(s["seq"] + s["len_bytes"])
    acked = np.maximum.accumulate(a["ack"])
    episodes = []
    for i in range(1, len(c["time_ns"])):
        t, ss, cw = c["time_ns"][i], c["ssthresh_bytes"][i], c["cwnd_bytes"][i]
        prev_ss, prev_cw = c["ssthresh_bytes"][i - 1], c["cwnd_bytes"][i - 1]
        # a fast retransmit lowers cwnd to the new ssthresh; a timeout to one segment
        if (ss != prev_ss or cw < prev_cw) and cw == ss:
            j = np.searchsorted(s["time_ns"], t, "right") - 1
            k = np.searchsorted(a["time_ns"], t, "right") - 1
            flight = float(sent_end[j]) - (float(acked[k]) if k >= 0 else 0.0)
            episodes.append(
                {"t": t / 1e9, "cwnd": float(prev_cw), "flight": flight, "ssthresh": float(ss)}
            )
    return episodes


def describe(name: str, episodes: list[dict]) -> None:
    def mean(f):
        return statistics.fmean(f(e) / SEGMENT_BYTES for e in episodes)

    print(
        f"{name}: {len(episodes)} fast recoveries; mean in segments: cwnd before "
        f"{mean(lambda e: e['cwnd']):.2f}, FlightSize {mean(lambda e: e['flight']):.2f}, "
        f"ssthresh {mean(lambda e: e['ssthresh']):.2f}, FlightSize - 2 x ssthresh "
        f"{mean(lambda e: e['flight'] - 2 * e['ssthresh']):.2f}, cwnd - 2 x ssthresh "
        f"{mean(lambda e: e['cwnd'] - 2 * e['ssthresh']):.2f}"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ns3-trace", type=Path, help="CSV of stpd_wireless.py --trace")
    ap.add_argument("--loss", type=float, help="also run farlink at this loss rate")
    ap.add_argument("--growth", choices=("per-ack", "byte-counting"), default="per-ack")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    if a.ns3_trace:
        episodes, credit = ns3_episodes(a.ns3_trace)
        describe(f"ns-3 {a.ns3_trace.name}", episodes)
        if credit:
            print(
                f"  after the ACK that ends recovery: cwnd - ssthresh"
                f" = {statistics.fmean(credit):.2f}"
                f" segments on average over {len(credit)} exits"
            )
    if a.loss is not None:
        describe(
            f"farlink {a.growth} p={a.loss:g} seed {a.seed}",
            farlink_episodes(a.loss, a.growth, a.seed),
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
