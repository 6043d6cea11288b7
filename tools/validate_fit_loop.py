"""`make validate-fit-loop`: capture a run, fit the capture, simulate the fit, get the run back.

Kernel Reno, CUBIC and BBR through the emulator (``farlink.emulate``, real kernel TCP in network
namespaces) on stpd-wireless at p = 0, 1e-2 and 3e-2, on the GEO path stpd-geo-t1 and on
iridium-4, each end node's TUN captured (``--pcap``: the sender's and the receiver's). Each
capture is fitted as a user would fit it, told the kernel's controller and that the sender was
Linux (``farlink fit --tcp CC --sender linux``), and the fitted scenario simulated for the same
bytes with the same seed. The table (between the markers in docs/captures.md) sets the emulated
transfer time beside the fitted one, the emulator's drops by cause beside the fit's split of
the losses (a full queue's overflows, random loss), and the kernel's timeouts beside those the
capture shows and those of the fitted flow. Every figure is kept as JSON under ``--out``.

Needs root (network namespaces, TUN). The runs are real time: about ten minutes in all.

    make validate-fit-loop                     # every cell, writes docs/captures.md
    .venv/bin/python tools/validate_fit_loop.py --only stpd-wireless --cc cubic --no-write
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

BEGIN, END = "<!-- validate-fit-loop:begin -->", "<!-- validate-fit-loop:end -->"
CONTROLLERS = ("reno", "cubic", "bbr")
TOLERANCE = 0.15  # the criterion: fitted within 15 % of the emulated transfer time
SEED = 1
# The kernel's run is one draw of the path's random loss; one seed of the fitted flow is one
# more. How far chance alone moves a transfer: the fitted flow, and the emulated scenario
# itself in the simulator with Linux's sender, over these seeds.
SEEDS = range(1, 11)


@dataclass(frozen=True)
class Cell:
    """One emulated run: a preset, the loss of its lossy link (None: its own), the bytes."""

    preset: str
    loss: float | None
    size: str
    cc: str

    @property
    def name(self) -> str:
        p = "own" if self.loss is None else f"{self.loss:g}"
        return f"{self.preset}-p{p}-{self.cc}"


PATHS = (
    ("stpd-wireless", 0.0, "1MB"),
    ("stpd-wireless", 1e-2, "1MB"),
    ("stpd-wireless", 3e-2, "1MB"),
    ("stpd-geo-t1", None, "1MB"),  # its own scripted loss: packets 2000 and 2001
    # 4 x 2.4 kbit/s with ARQ and call drops: 60 kB is about a minute.
    ("iridium-4", None, "60KB"),
)


def cells(only: str | None = None, ccs: tuple[str, ...] = CONTROLLERS) -> list[Cell]:
    """The cells whose name contains ``only`` (all without it), for the controllers ``ccs``."""
    out = [Cell(p, loss, size, cc) for cc in ccs for p, loss, size in PATHS]
    return [c for c in out if not only or only in c.name]


def run_cell(cell: Cell, out: Path) -> dict:
    """Emulate ``cell`` with both ends captured, fit each capture, simulate each fit."""
    from farlink.emulate import emulate

    folder = out / cell.name
    folder.mkdir(parents=True, exist_ok=True)
    result = emulate(
        cell.preset,
        tcp=cell.cc,
        sender="kernel",
        loss=cell.loss,
        size=cell.size,
        seed=SEED,
        pcap_dir=folder,
    )
    (flow,) = result.summary["flows"]
    row = {
        "cell": cell.name,
        "preset": cell.preset,
        "loss": cell.loss,
        "size": cell.size,
        "cc": cell.cc,
        "emulated": {
            "transfer_time_s": flow["transfer_time_s"],
            "delivered_bytes": flow["delivered_bytes"],
            "retransmissions": flow["retransmissions"],
            "timeouts": flow["timeouts"],
            "drops": result.summary["drops"],
        },
        "captures": {},
    }
    row["truth_simulated_s"] = truth_simulated(cell)
    ends = {"sender": flow.get("from"), "receiver": flow.get("to")}
    for end, node in ends.items():
        capture = folder / f"{node}.pcap"
        row["captures"][end] = fit_and_simulate(capture, cell, folder / f"fit-{node}.toml")
    (folder / "row.json").write_text(json.dumps(row, indent=1, default=str))
    return row


def truth_simulated(cell: Cell) -> list[float | None]:
    """The emulated scenario itself in the simulator, Linux's sender with the cell's controller
    (farlink.linux_tcp), over :data:`SEEDS`: where the simulator's model of the kernel stands
    apart from any fit, and how far chance moves the transfer."""
    from farlink import simulate
    from farlink.linux_tcp import linux_sets

    times = []
    for seed in SEEDS:
        run = simulate(
            cell.preset,
            loss=cell.loss,
            size=cell.size,
            seed=seed,
            duration="30min",
            sets=linux_sets(0, cell.cc),
        )
        times.append(run.summary["flows"][0]["transfer_time_s"])
    return times


def fit_and_simulate(capture: Path, cell: Cell, scenario: Path) -> dict:
    """``farlink fit CAPTURE --tcp CC --sender linux``, then the fit simulated for the bytes."""
    from farlink import simulate
    from farlink.captures.fit import checked_scenario_toml, fit_path

    try:
        fit = fit_path(capture)
        text = checked_scenario_toml(fit, f"fit-{cell.name}", tcp=cell.cc, profile="linux")
    except ValueError as err:
        return {"capture": str(capture), "refused": str(err)}
    scenario.write_text(text)
    sim = simulate(scenario, size=cell.size, seed=SEED, duration="30min")
    (flow,) = sim.summary["flows"]
    seeds = [
        simulate(scenario, size=cell.size, seed=seed, duration="30min").summary["flows"][0][
            "transfer_time_s"
        ]
        for seed in SEEDS
    ]
    report = fit.to_dict()
    return {
        "capture": str(capture),
        "scenario": str(scenario),
        "tap_location": report["tap_location"],
        "loss_by_cause": report["loss_by_cause"],
        "rate_bps": fit.rate_bps,
        "delay_s": fit.delay_s,
        "timeouts_in_capture": report["timeouts"],
        "warnings": list(fit.warnings),
        "simulated": {
            "transfer_time_s": flow["transfer_time_s"],
            "delivered_bytes": flow["delivered_bytes"],
            "timeouts": flow["timeouts"],
            "drops": sim.summary["drops"],
            "transfer_time_seeds_s": seeds,
        },
    }


def within(fitted: float | None, emulated: float | None) -> bool | None:
    """Whether the fitted transfer time is within :data:`TOLERANCE` of the emulated one."""
    if fitted is None or emulated is None:
        return None
    return abs(fitted / emulated - 1) <= TOLERANCE


def _time(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def _spread(times: list[float | None]) -> tuple[float | None, str]:
    """The mean of ``times`` and "mean (lowest–highest)"; a transfer that never ended makes
    the mean unknown."""
    if not times or any(t is None for t in times):
        done = [t for t in times if t is not None]
        return None, f"– ({len(times) - len(done)} of {len(times)} unfinished)"
    mean = sum(times) / len(times)
    return mean, f"{mean:.2f} ({min(times):.2f}–{max(times):.2f})"


def _ok(value: bool | None) -> str:
    return "n/a" if value is None else "yes" if value else "**no**"


def table(rows: list[dict]) -> str:
    """The Markdown table of docs/captures.md from the rows of :func:`run_cell`."""
    lines = [
        "Generated by `make validate-fit-loop` (tools/validate_fit_loop.py): kernel TCP through "
        "the emulator, seed 1, both end nodes captured (`--pcap`); each capture fitted with "
        "`farlink fit --tcp CC --sender linux` and the fit simulated for the same bytes: seed 1, "
        "and the mean (lowest–highest) of seeds 1–10. *Scenario simulated*: the emulated "
        "scenario itself in the simulator with Linux's sender (farlink.linux_tcp), seeds 1–10, "
        "no fit involved: where the simulator's model of the kernel stands, and how far chance "
        "alone moves the transfer. *Emulated drops*: the emulator's queue overflows / random "
        "losses (corruption, ARQ give-ups, call drops); *fit*: the queue overflows / random "
        "losses the fit found (`loss_by_cause`; before the tap, as at the receiver, a run of "
        "adjacent losses is one), and the fitted link's `p`. *Timeouts*: the kernel's "
        "(TCP_INFO) / those the capture shows / the fitted flow's (seed 1).",
        "",
        "| cell | tap | tap location | emulated s | fitted s | ±15 % | fitted, seeds 1–10 | ±15 % "
        "| scenario simulated, seeds 1–10 | emulated drops | fit overflows / random | fitted p "
        "| timeouts kernel / capture / fitted |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    inside = inside_mean = total = 0
    for row in rows:
        emu = row["emulated"]
        drops = emu["drops"]
        overflow = drops.get("queue_overflow", 0)
        random = sum(v for k, v in drops.items() if k != "queue_overflow")
        _, truth = _spread(row.get("truth_simulated_s", []))
        for end, fitted in row["captures"].items():
            if "refused" in fitted:
                lines.append(
                    f"| {row['cell']} | {end} | – | {_time(emu['transfer_time_s'])} | refused "
                    f"| n/a | – | n/a | {truth} | {overflow} / {random} | {fitted['refused']} "
                    "| – | – |"
                )
                continue
            sim = fitted["simulated"]
            ok = within(sim["transfer_time_s"], emu["transfer_time_s"])
            mean, seeds = _spread(sim["transfer_time_seeds_s"])
            ok_mean = within(mean, emu["transfer_time_s"])
            total += 1
            inside += bool(ok)
            inside_mean += bool(ok_mean)
            cause = fitted["loss_by_cause"]
            lines.append(
                f"| {row['cell']} | {end} | {fitted['tap_location']} "
                f"| {_time(emu['transfer_time_s'])} | {_time(sim['transfer_time_s'])} "
                f"| {_ok(ok)} | {seeds} | {_ok(ok_mean)} | {truth} "
                f"| {overflow} / {random} "
                f"| {cause['queue_overflows']} / {cause['random_losses']} "
                f"| {cause['random_loss_p']:.4f} "
                f"| {emu['timeouts']} / {fitted['timeouts_in_capture']} / {sim['timeouts']} |"
            )
    lines += [
        "",
        f"Fitted within 15 % of the emulated transfer time: {inside} of {total} fits with seed "
        f"1, {inside_mean} of {total} with the mean of seeds 1–10.",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="run the cells whose name contains this")
    parser.add_argument("--cc", action="append", choices=CONTROLLERS, help="controllers to run")
    parser.add_argument("--out", type=Path, default=ROOT / "farlink-out" / "validate-fit-loop")
    parser.add_argument(
        "--reuse", action="store_true", help="read back the rows an earlier run left under --out"
    )
    parser.add_argument("--no-write", action="store_true", help="print, leave docs alone")
    args = parser.parse_args(argv)
    chosen = cells(args.only, tuple(args.cc) if args.cc else CONTROLLERS)
    if not chosen:
        parser.error(f"--only: no cell's name contains {args.only!r}")
    rows = []
    for cell in chosen:
        kept = args.out / cell.name / "row.json"
        if args.reuse and kept.exists():
            rows.append(json.loads(kept.read_text()))
        else:
            rows.append(run_cell(cell, args.out))
        print(f"validate-fit-loop: {cell.name} done", file=sys.stderr, flush=True)
    text = table(rows)
    print(text)
    if not args.no_write and args.only is None and args.cc is None:
        from farlink.outputs import write_between_markers

        write_between_markers(ROOT / "docs" / "captures.md", BEGIN, END, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
