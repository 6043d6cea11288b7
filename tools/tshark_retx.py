"""farlink's retransmission count beside tshark's, by the filter docs/captures.md names.

For each capture: farlink's ``retransmissions`` (every data segment that starts below the
highest sequence number sent before it, ``farlink analyze``), tshark's data segments of the
same sender flagged ``tcp.analysis.retransmission``, and those flagged
``tcp.analysis.retransmission || tcp.analysis.out_of_order``: Wireshark calls a resend
out-of-order, not a retransmission, when it crosses the tap less than the connection's initial
RTT (3 ms where it does not know it) after the highest segment seen, as a resend at a
sender-side tap usually does.

    .venv/bin/python tools/tshark_retx.py CAPTURE [CAPTURE ...]
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

FILTER = "tcp.analysis.retransmission || tcp.analysis.out_of_order"


def tshark_count(capture: Path, sport: int, flags: str) -> int:
    """Data segments from port ``sport`` matching the display filter ``flags``."""
    done = subprocess.run(
        [
            "tshark",
            "-r",
            str(capture),
            "-Y",
            f"tcp.srcport == {sport} && tcp.len > 0 && ({flags})",
            "-T",
            "fields",
            "-e",
            "frame.number",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return len(done.stdout.split())


def main(argv: list[str]) -> int:
    from farlink.captures.analysis import analyze_capture

    if not argv:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    print(
        "| capture | connection | farlink | tshark retransmission | tshark retransmission "
        "or out_of_order |"
    )
    print("|---|---|---|---|---|")
    for name in argv:
        capture = Path(name)
        _, connections = analyze_capture(capture)
        for conn in connections:
            sport = int(conn.name.split("->")[0].rsplit(":", 1)[1])
            alone = tshark_count(capture, sport, "tcp.analysis.retransmission")
            union = tshark_count(capture, sport, FILTER)
            print(f"| {capture} | {conn.name} | {conn.retransmissions} | {alone} | {union} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
