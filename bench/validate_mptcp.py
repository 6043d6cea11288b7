"""docs/multipath.md's validation of Multipath TCP: farlink's simulator against the kernel's
Multipath TCP in the emulator, and MLPPP beside both, over bundles sped up so that an emulation
takes a minute instead of half an hour (:func:`farlink.bonding.speed_up`).

Every run is ``farlink compare-bonding``'s (:func:`farlink.bonding.compare_bonding` with
``emulate=True``): each bonding on both engines, seeds 1 to 3. Two checks of issue 32:

- without call drops, iridium-4's four equal members: the simulator's Multipath TCP goodput
  within 15 % of the kernel's, per seed;
- with call drops (the preset's rate, sped up with the rest): the two engines' Multipath TCP
  transfer times within 20 % (the mean over the seeds, and each seed shown), and which bonding
  is the faster on each engine.

Both engines get the same flow (:data:`SETS`): Linux's connection defaults and sender rules
(:func:`farlink.linux_tcp.linux_sets`) with CUBIC, uncoupled subflows (Linux's Multipath TCP
has no coupled congestion control), a 1 MB receive buffer and a 64 KB send buffer; the reasons
are in docs/multipath.md beside the tables.

Each comparison is kept as JSON in the work folder (``--out``); one whose file exists is not run
again (``--fresh`` runs everything), so an interrupted run resumes. ``--resimulate`` keeps the
kept comparisons' kernel side and runs their simulator side again (seconds, not the emulator's
minutes), for a change to farlink's simulator. The tables go into
docs/multipath.md between the validate-mptcp markers (``--no-doc``: printed only).

Run: ``make validate-mptcp`` (root, namespaces, the kernel's Multipath TCP; about 25 minutes).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from statistics import fmean
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "multipath.md"
BEGIN = "<!-- validate-mptcp: begin (written by `make validate-mptcp`: bench/validate_mptcp.py) -->"
END = "<!-- validate-mptcp: end -->"
SPEEDUP = 20.0
SEEDS = 3
GOODPUT_TOLERANCE = 0.15
TRANSFER_TOLERANCE = 0.20
#: The bundles compared with call drops, and their transfer sizes (iridium-8's the preset's).
BUNDLES = {"iridium-4": "1MB", "iridium-2": "0.5MB", "iridium-8": "1.4MB"}
NO_DROPS = "links[0].bundle.call_drop_rate_per_s=0"
#: Call drops expected during a transfer with call drops: at the presets' rate (1/50 min per
#: member) the sped-up transfers, which a window that does not limit makes as fast as the
#: members allow, would meet none in most seeds.
DROPS_PER_TRANSFER = 2
#: The emulator leaves the kernel's first subflow, member 0's, to its own retransmissions
#: through its member's drops (docs/multipath.md); the simulator is told to do the same.
KEEP_FIRST = "flows[0].mptcp.keep_first_subflow=true"
#: The seed of the run with the kernel's autotuned send buffer (iridium-4, call drops).
SEND_BUFFER_SEED = 2


def flow_sets() -> list[str]:
    """The flow both engines run (module notes; docs/multipath.md says why each)."""
    from farlink.linux_tcp import linux_sets

    return [
        *linux_sets(cc="cubic"),
        'flows[0].mptcp.coupling="none"',
        'flows[0].tcp.receive_buffer="1MB"',
        'flows[0].tcp.send_buffer="64KB"',
    ]


def drop_rate_sets(doc: dict[str, Any], size: str) -> list[str]:
    """The call-drop rate per member at which a transfer of ``size`` at the members' summed
    rate meets :data:`DROPS_PER_TRANSFER` drops on average."""
    from farlink.units import parse_bitrate_bps, parse_size_bytes

    bundle = doc["links"][0]["bundle"]
    members = int(bundle["members"])
    transfer_s = parse_size_bytes(size) * 8 / (members * parse_bitrate_bps(bundle["rate"]))
    return [f"links[0].bundle.call_drop_rate_per_s={DROPS_PER_TRANSFER / (members * transfer_s)}"]


def compared(
    name: str, size: str, drops: bool, out: Path, fresh: bool, resimulate: bool = False
) -> dict[str, Any]:
    """compare-bonding of preset ``name`` sped up, on both engines (kept in ``out``); with
    ``resimulate``, a kept comparison's simulator side is run again and kept with its kernel
    side."""
    from farlink.bonding import compare_bonding, faster, speed_up
    from farlink.scenario import load_scenario

    path = out / f"{name}-{'drops' if drops else 'no-drops'}.json"
    doc = speed_up(load_scenario(name), SPEEDUP)
    doc["seed"] = 1
    sets = [*flow_sets(), KEEP_FIRST, *(drop_rate_sets(doc, size) if drops else [NO_DROPS])]
    if path.exists() and not fresh:
        result = json.loads(path.read_text(encoding="utf-8"))
        if not resimulate:
            return result
        print(f"simulating {name} x{SPEEDUP:g} again, the kernel's runs kept", flush=True)
        sim = compare_bonding(doc, size=size, seeds=SEEDS, sets=sets, tcp="cubic")
        for bonding in ("mlppp", "mptcp"):
            result[bonding]["sim"] = sim[bonding]["sim"]
        result["faster"] = faster(result, "sim")
    else:
        label = "with" if drops else "without"
        print(f"running {name} x{SPEEDUP:g}, {label} call drops", flush=True)
        result = compare_bonding(doc, size=size, seeds=SEEDS, sets=sets, emulate=True, tcp="cubic")
    out.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2, allow_nan=False) + "\n", encoding="utf-8")
    return result


def autotuned_run(out: Path, fresh: bool) -> dict[str, Any]:
    """The kernel's Multipath TCP over iridium-4 with call drops at the first seed of
    :data:`SEND_BUFFER_SEED`, its send buffer left to the kernel's autotuning: the flow's
    summary (kept in ``out``)."""
    from farlink.bonding import speed_up
    from farlink.emulate import emulate
    from farlink.scenario import load_scenario

    path = out / "iridium-4-drops-autotuned.json"
    if path.exists() and not fresh:
        return json.loads(path.read_text(encoding="utf-8"))
    doc = speed_up(load_scenario("iridium-4"), SPEEDUP)
    sets = [a for a in flow_sets() if "send_buffer" not in a] + drop_rate_sets(doc, "1MB")
    print("running iridium-4 with call drops, the send buffer autotuned", flush=True)
    result = emulate(
        doc, size="1MB", seed=SEND_BUFFER_SEED, sets=sets, transport="mptcp", tcp="cubic"
    )
    flow = result.summary["flows"][0]
    out.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(flow, indent=2, allow_nan=False) + "\n", encoding="utf-8")
    return flow


def send_buffer_table(bounded: dict[str, Any], autotuned: dict[str, Any]) -> list[str]:
    """Per member: its drops, and the subflows that carried data with each send buffer."""
    (run,) = [r for r in bounded["mptcp"]["emulate"]["runs"] if r["seed"] == SEND_BUFFER_SEED]
    lines = [
        "| send buffer | transfer (s) | "
        + " | ".join(f"member {s['member']}" for s in run["subflows"])
        + " |",
        "|---|---|" + "---|" * len(run["subflows"]),
    ]
    for label, flow in (("64 KB", run), ("autotuned", autotuned)):
        cells = [
            f"{s['established']} ({len(s['down_intervals_s'])} down)" for s in flow["subflows"]
        ]
        lines.append(f"| {label} | {flow['transfer_time_s']:.1f} | " + " | ".join(cells) + " |")
    return lines


def _runs(result: dict[str, Any], bonding: str) -> list[tuple[dict, dict]]:
    """The (simulator, emulator) run pairs of ``bonding``, seed by seed."""
    return list(
        zip(result[bonding]["sim"]["runs"], result[bonding]["emulate"]["runs"], strict=True)
    )


def _pct(a: float, b: float) -> str:
    return f"{100 * (a - b) / b:+.1f} %"


def goodput_table(result: dict[str, Any]) -> tuple[list[str], list[bool]]:
    """Without call drops: each seed's Multipath TCP goodput on both engines (and MLPPP's)."""
    lines = [
        "| seed | MPTCP sim (kbit/s) | MPTCP kernel (kbit/s) | sim vs kernel | within 15 % "
        "| kernel, of the members' summed rate | MLPPP sim (kbit/s) | MLPPP kernel (kbit/s) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    within = []
    mlppp = _runs(result, "mlppp")
    for (sim, emu), (msim, memu) in zip(_runs(result, "mptcp"), mlppp, strict=True):
        ok = emu["verified"] and abs(sim["goodput_bps"] / emu["goodput_bps"] - 1) <= (
            GOODPUT_TOLERANCE
        )
        within.append(bool(ok))
        lines.append(
            f"| {sim['seed']} | {sim['goodput_bps'] / 1e3:.1f} | {emu['goodput_bps'] / 1e3:.1f} "
            f"| {_pct(sim['goodput_bps'], emu['goodput_bps'])} | {'yes' if ok else 'no'} "
            f"| {emu['normalized_goodput']:.3f} | {msim['goodput_bps'] / 1e3:.1f} "
            f"| {memu['goodput_bps'] / 1e3:.1f} |"
        )
    return lines, within


def _subflows(emu: dict[str, Any]) -> str:
    """The kernel's subflows of one run: per member that dropped, the subflows it carried,
    and every member's timeouts."""
    parts = []
    for s in emu["subflows"]:
        k = s["route"].rsplit("member", 1)[-1]
        downs = len(s["down_intervals_s"])
        rto = "?" if s["timeouts"] is None else s["timeouts"]
        down = f" ({downs} down)" if downs else ""
        parts.append(f"{k}: {s['established']}{down}, {rto}")
    return "; ".join(parts)


def transfer_table(results: dict[str, dict[str, Any]]) -> tuple[list[str], list[bool]]:
    """With call drops: Multipath TCP's transfer time on both engines, per bundle and seed."""
    lines = [
        "| bundle | seed | call drops sim, kernel | MPTCP sim (s) | MPTCP kernel (s) | sim vs "
        "kernel | within 20 % | kernel subflows per member (drops), timeouts |",
        "|---|---|---|---|---|---|---|---|",
    ]
    within = []
    for name, result in results.items():
        pairs = _runs(result, "mptcp")
        for sim, emu in pairs:
            lines.append(
                f"| `{name}` | {sim['seed']} | {sim['call_drops']}, {emu['call_drops']} "
                f"| {sim['transfer_time_s']:.1f} | {emu['transfer_time_s']:.1f} "
                f"| {_pct(sim['transfer_time_s'], emu['transfer_time_s'])} | "
                f"| {_subflows(emu)} |"
            )
        a = fmean(s["transfer_time_s"] for s, _ in pairs)
        b = fmean(e["transfer_time_s"] for _, e in pairs)
        ok = all(e["verified"] for _, e in pairs) and abs(a / b - 1) <= TRANSFER_TOLERANCE
        within.append(ok)
        lines.append(
            f"| `{name}` | mean | | {a:.1f} | {b:.1f} | {_pct(a, b)} | {'yes' if ok else 'no'} | |"
        )
    return lines, within


def _faster(f: dict[str, Any] | None) -> str:
    if f is None:
        return "not every run finished"
    return f"{f['bonding']}, by {f['by_s']:.1f} s ({100 * f['by_fraction']:.1f} %)"


def bonding_table(results: dict[str, dict[str, Any]]) -> list[str]:
    """Which bonding is faster, on each engine, per bundle (means over the seeds)."""
    lines = [
        "| bundle | MLPPP sim (s) | MPTCP sim (s) | faster, sim | MLPPP kernel (s) "
        "| MPTCP kernel (s) | faster, kernel | stall after a drop sim, MLPPP / MPTCP (s) "
        "| stall after a drop kernel, MLPPP / MPTCP (s) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, r in results.items():
        mean = {(b, e): r[b][e]["mean"] for b in ("mlppp", "mptcp") for e in ("sim", "emulate")}
        lines.append(
            f"| `{name}` | {mean[('mlppp', 'sim')]['transfer_time_s']:.1f} "
            f"| {mean[('mptcp', 'sim')]['transfer_time_s']:.1f} | {_faster(r['faster'])} "
            f"| {mean[('mlppp', 'emulate')]['transfer_time_s']:.1f} "
            f"| {mean[('mptcp', 'emulate')]['transfer_time_s']:.1f} "
            f"| {_faster(r['faster_emulate'])} | {_stalls(mean, 'sim')} "
            f"| {_stalls(mean, 'emulate')} |"
        )
    return lines


def _stalls(mean: dict[tuple[str, str], dict[str, Any]], engine: str) -> str:
    """The mean stall after a drop of MLPPP and of Multipath TCP on ``engine``; ``-`` where
    no run met a drop (or, on the emulator, a comparison kept from before it recorded its
    reads)."""
    stall = [mean[(b, engine)]["stall_after_drop_s"] for b in ("mlppp", "mptcp")]
    return " / ".join("-" if s is None else f"{s:.1f}" for s in stall)


def write_doc(text: str) -> None:
    """Puts ``text`` between the markers of docs/multipath.md."""
    doc = DOC.read_text(encoding="utf-8")
    start, end = doc.index(BEGIN) + len(BEGIN), doc.index(END)
    DOC.write_text(doc[:start] + "\n" + text + "\n" + doc[end:], encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "farlink-out" / "validate-mptcp")
    parser.add_argument("--fresh", action="store_true", help="run every comparison again")
    parser.add_argument(
        "--resimulate",
        action="store_true",
        help="run the simulator side of the kept comparisons again, keeping their kernel side",
    )
    parser.add_argument("--no-doc", action="store_true", help="print the tables only")
    parser.add_argument(
        "--bundles", nargs="*", default=list(BUNDLES), help="the bundles run with call drops"
    )
    args = parser.parse_args(argv)
    unknown = [b for b in args.bundles if b not in BUNDLES]
    if unknown:
        print(f"validate_mptcp: --bundles: not one of {', '.join(BUNDLES)}: {unknown[0]}")
        return 2
    again = args.resimulate
    calm = compared("iridium-4", "1MB", False, args.out, args.fresh, again)
    stormy = {b: compared(b, BUNDLES[b], True, args.out, args.fresh, again) for b in args.bundles}
    autotuned = autotuned_run(args.out, args.fresh) if "iridium-4" in stormy else None
    goodput, goodput_ok = goodput_table(calm)
    transfer, transfer_ok = transfer_table(stormy)
    text = "\n".join(
        [
            f"Without call drops (`iridium-4` {SPEEDUP:g} times faster, 1 MB, seeds 1 to 3):",
            "",
            *goodput,
            "",
            f"With call drops (each bundle {SPEEDUP:g} times faster, its call drops too; "
            "per member of the kernel's runs: the subflows that carried data, how many times "
            "the member was down, and the subflows' retransmission timeouts):",
            "",
            *transfer,
            "",
            "Which bonding is the faster, on each engine (means over seeds 1 to 3, with call "
            "drops), and the longest time the receiving application got nothing after a "
            "drop (the mean over the drops of the three seeds; both engines' read from the "
            "bytes delivered on a 1 s grid):",
            "",
            *bonding_table(stormy),
        ]
    )
    if autotuned is not None:
        text += "\n".join(
            [
                "",
                "",
                f"The kernel's subflows per member of `iridium-4` at seed {SEND_BUFFER_SEED}, "
                "with call drops (those that carried data; how many times the member was "
                "down), by send buffer:",
                "",
                *send_buffer_table(stormy["iridium-4"], autotuned),
            ]
        )
    print(text)
    print(
        f"goodput within {GOODPUT_TOLERANCE:.0%}: {sum(goodput_ok)} of {len(goodput_ok)} seeds; "
        f"transfer time within {TRANSFER_TOLERANCE:.0%}: {sum(transfer_ok)} of "
        f"{len(transfer_ok)} bundles"
    )
    if not args.no_doc:
        write_doc(text)
        print(f"wrote {DOC.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
