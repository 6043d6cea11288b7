"""farlink's own TCP senders on the wire, against the unmodified Linux receiver (docs/wire.md).

Every farlink congestion controller moves a bulk transfer through the emulator to the kernel's
receiver in its namespace, bytes checked end to end (``verified``), on seed 003's wireless path
at p = 0 and p = 1e-2 and on the four-modem Iridium bundle; the simulator's figure for the same
scenario and controller stands beside each. Then farlink's reno, cubic and bbr beside the
kernel's on the wireless path at p = 1e-2. Writes the tables into docs/wire.md between the
``validate-wire`` markers. Needs CAP_NET_ADMIN and /dev/net/tun.

    make validate-wire                       # 10 MB on stpd-wireless, 100 KB on iridium-4
    make validate-wire WIRE_ARGS="--size 1MB --iridium-size 20KB"
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from farlink.emulate import emulate
from farlink.sim import simulate

CONTROLLERS = ("reno", "vegas", "hybla", "westwood", "cubic", "bic", "stpd", "bbr")
KERNEL_PAIR = ("reno", "cubic", "bbr")
DOC = Path(__file__).resolve().parents[1] / "docs" / "wire.md"
BEGIN, END = "<!-- validate-wire:begin -->", "<!-- validate-wire:end -->"


def fmt(x: float | None, digits: int = 2) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def one_emulation(preset: str, cc: str, sender: str, loss: float | None, size: str) -> dict:
    r = emulate(preset, tcp=cc, sender=sender, loss=loss, size=size, duration="3600s")
    (f,) = r.summary["flows"]
    return f


def one_simulation(preset: str, cc: str, loss: float | None, size: str) -> dict:
    r = simulate(preset, loss=loss, size=size, duration="3600s", sets=[f"flows[0].tcp.cc={cc}"])
    (f,) = r.summary["flows"]
    return f


def row(label: str, f: dict, sim: dict | None) -> str:
    return (
        f"| {label} | {f['sender']} | {f['verified']} | {fmt(f['transfer_time_s'])} "
        f"| {fmt(f['normalized_goodput'], 3)} | {f['retransmissions']} | {f['timeouts']} "
        f"| {fmt(sim['transfer_time_s']) if sim else '-'} "
        f"| {sim['retransmissions'] if sim else '-'} | {f['error'] or ''} |"
    )


HEADER = (
    "| controller | sender | verified | transfer s | normalized goodput | retransmissions "
    "| timeouts | simulator transfer s | simulator retransmissions | error |\n"
    "|---|---|---|---|---|---|---|---|---|---|"
)


def write(lines: list[str]) -> None:
    """Puts the tables so far between the markers of docs/wire.md (after every row, so a long
    run that is stopped keeps what it measured)."""
    table = "\n".join(lines)
    text = DOC.read_text(encoding="utf-8")
    new = re.sub(
        re.escape(BEGIN) + ".*?" + re.escape(END),
        lambda _: f"{BEGIN}\n{table}\n{END}",
        text,
        flags=re.S,
    )
    DOC.write_text(new, encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="10MB")
    parser.add_argument("--iridium-size", default="100KB")
    parser.add_argument("--controllers", default=",".join(CONTROLLERS))
    parser.add_argument("--no-write", action="store_true", help="Print only.")
    args = parser.parse_args()
    controllers = [c for c in args.controllers.split(",") if c]
    out: list[str] = []
    paths = [
        ("stpd-wireless", 0.0, args.size),
        ("stpd-wireless", 0.01, args.size),
        ("iridium-4", None, args.iridium_size),
    ]
    for preset, loss, size in paths:
        title = f"{preset}" + ("" if loss is None else f", p = {loss:g}") + f", {size}"
        out += [f"### farlink's controllers: {title}", "", HEADER]
        for cc in controllers:
            f = one_emulation(preset, cc, "farlink", loss, size)
            sim = one_simulation(preset, cc, loss, size)
            line = row(cc, f, sim)
            print(line, flush=True)
            out.append(line)
            if not args.no_write:
                write(out)
        out.append("")
    out += [f"### farlink beside the kernel: stpd-wireless, p = 0.01, {args.size}", "", HEADER]
    for cc in KERNEL_PAIR:
        for sender in ("farlink", "kernel"):
            f = one_emulation("stpd-wireless", cc, sender, 0.01, args.size)
            line = row(cc, f, None)
            print(line, flush=True)
            out.append(line)
            if not args.no_write:
                write(out)
    out.append("")
    if not args.no_write:
        write(out)
        print(f"wrote {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
