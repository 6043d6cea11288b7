"""What the kernel's Multipath TCP did in one of ``make validate-mptcp``'s runs: iridium-4 sped
up 20 times, the validation's flow (bench/validate_mptcp.py), no call drops unless ``--drops``,
with the sender's and the receiver's namespaces read every half second while the run lasts:
their MPTCP and TCP counters (``nstat -az``: the last reading of each is printed) and the
sender's sockets (``ss -tinM``: a few snapshots over the run, each subflow's cwnd, RTT, unacked
segments, ``sndbuf_limited`` and ``notsent``).

Run (root, the kernel's Multipath TCP; a minute or two):
``python bench/mptcp_probe.py --seed 1 [--drops] [--set KEY=VALUE ...] [--snapshots N]``.
The namespaces read are the emulator's made after the probe started (``farlink-*``): run it
alone, not beside another emulation.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import validate_mptcp

#: The counters printed beside the MPTCP ones (each namespace's, where not zero).
TCP_COUNTERS = (
    "TcpRetransSegs",
    "TcpExtTCPTimeouts",
    "TcpExtTCPSpuriousRTOs",
    "TcpExtTCPLossProbes",
    "TcpExtTCPDSACKRecv",
)
INTERVAL_S = 0.5


def _namespaces() -> set[str]:
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False)
    return {line.split()[0] for line in listed.stdout.splitlines() if line.strip()}


def _counters(ns: str) -> dict[str, int] | None:
    out = subprocess.run(
        ["ip", "netns", "exec", ns, "nstat", "-az", "--json"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    try:
        kernel = json.loads(out)["kernel"]
    except (ValueError, KeyError):
        return None
    return {k: v for k, v in kernel.items() if v and (k.startswith("MPTcp") or k in TCP_COUNTERS)}


def watch(before: set[str], stop: threading.Event, counters: dict, snapshots: list) -> None:
    """Reads the run's namespaces until ``stop``: the counters by role, the sender's sockets."""
    t0 = time.monotonic()
    while not stop.is_set():
        for ns in sorted(n for n in _namespaces() - before if n.startswith("farlink-")):
            role = ns.rsplit("-", 1)[-1]
            read = _counters(ns)
            if read is not None:
                counters[role] = read
            if role == "Summit":
                ss = subprocess.run(
                    ["ip", "netns", "exec", ns, "ss", "-tinHM"],
                    capture_output=True,
                    text=True,
                    check=False,
                ).stdout
                if ss.strip():
                    snapshots.append((time.monotonic() - t0, ss))
        time.sleep(INTERVAL_S)


def main(argv: list[str] | None = None) -> int:
    from farlink.bonding import speed_up
    from farlink.emulate import emulate
    from farlink.scenario import load_scenario

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--drops", action="store_true", help="the validation's call drops")
    parser.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--snapshots", type=int, default=4, help="ss snapshots printed")
    args = parser.parse_args(argv)
    doc = speed_up(load_scenario("iridium-4"), validate_mptcp.SPEEDUP)
    drops = validate_mptcp.drop_rate_sets(doc, "1MB") if args.drops else [validate_mptcp.NO_DROPS]
    sets = [*validate_mptcp.flow_sets(), *drops, *args.sets]
    counters: dict[str, dict[str, int]] = {}
    snapshots: list[tuple[float, str]] = []
    stop = threading.Event()
    watcher = threading.Thread(target=watch, args=(_namespaces(), stop, counters, snapshots))
    watcher.start()
    try:
        result = emulate(doc, size="1MB", seed=args.seed, sets=sets, transport="mptcp", tcp="cubic")
    finally:
        stop.set()
        watcher.join()
    f = result.summary["flows"][0]
    print(
        f"seed {args.seed}: transfer {f['transfer_time_s']:.1f} s, "
        f"{f['normalized_goodput']:.3f} of the members' summed rate, verified {f['verified']}"
    )
    for s in f["subflows"]:
        print(
            f"  {s['route']}: {s['established']} subflows, {s['bytes']} bytes, "
            f"{s['retransmissions']} retransmissions, {s['timeouts']} timeouts, "
            f"down {len(s['down_intervals_s'])} times"
        )
    print(json.dumps(counters, indent=1, sort_keys=True))
    step = max(1, len(snapshots) // max(1, args.snapshots))
    for at_s, ss in snapshots[::step]:
        print(f"--- ss -tinM in the sender's namespace, {at_s:.1f} s into the probe")
        print(ss)
    return 0


if __name__ == "__main__":
    sys.exit(main())
