"""farlink's own TCP senders on the wire, against the unmodified Linux receiver (docs/wire.md).

Every farlink congestion controller moves a bulk transfer through the emulator to the kernel's
receiver in its namespace, bytes checked end to end (``verified``), on seed 003's wireless path
at p = 0 and p = 1e-2 and on the four-modem Iridium bundle; the simulator's figure for the same
scenario and controller stands beside each (every controller with the preset's own settings,
as the seeds define them). Writes those tables into docs/wire.md between the ``validate-wire``
markers. Needs CAP_NET_ADMIN and /dev/net/tun.

    make validate-wire                       # 10 MB on stpd-wireless, 100 KB on iridium-4
    make validate-wire WIRE_ARGS="--size 1MB --iridium-size 20KB"
    .venv/bin/python bench/validate_wire.py --only testbed --jobs 4   # seed 003's testbed only

``--only fidelity``: farlink's reno, cubic and bbr beside the kernel's on ``stpd-wireless`` at
p = 1e-2 and p = 0, both senders with Linux's settings (``farlink.linux_tcp.linux_sets``), one
run after the other for each seed of ``--fidelity-seeds``; each row adds what the sender's
``tcp_info`` trace says (retransmissions after the first slow start, RTO backoffs, mean cwnd,
srtt and RTO, window reductions) and farlink's rows the receiver's D-SACK blocks;
``--trace-dir`` keeps every run's trace and flow, and ``--replay`` writes the table again from
them without emulating. Written between the ``validate-wire-fidelity`` markers (also a table
of the full run).

    .venv/bin/python bench/validate_wire.py --only fidelity --trace-dir DIR   # seeds 1 and 2
    .venv/bin/python bench/validate_wire.py --only fidelity --trace-dir DIR --replay

``--only iridium --iridium-results DIR``: every controller's 10 MB through ``iridium-4``, from
the results (``DIR/CC.json``) of ``farlink emulate iridium-4 --tcp CC --sender farlink --size
10MB --duration 5h --json`` runs made outside, all eight at once (each takes close to three
hours at the bundle's 9.6 kbit/s), beside the simulator's; written between the
``validate-wire-iridium`` markers.

``--only testbed``: seed 003 chapter 5's Linux testbed (preset ``stpd-testbed``, 100,000 bytes
over the 38.4 kbps serial line with 250 ms, then 80 ms, and packet errors in both directions),
ST-PD and Reno on farlink's sender to the kernel receiver, beside the simulator's run of the
same case and the thesis's published times; each delay's table is written between its own
``validate-wire-testbed-<delay>`` markers.
"""

from __future__ import annotations

import argparse
import json
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from farlink.emulate import emulate
from farlink.linux_tcp import linux_cc_name, linux_sets
from farlink.outputs import write_between_markers
from farlink.reproduce.stpd_lossy import TESTBED_CASES, testbed_sets
from farlink.reproduce.stpd_traces import time_weighted_mean
from farlink.sim import simulate

CONTROLLERS = ("reno", "vegas", "hybla", "westwood", "cubic", "bic", "stpd", "bbr")
KERNEL_PAIR = ("reno", "cubic", "bbr")
SEGMENT_BYTES = 948  # stpd-wireless: MSS 960 less the 12 bytes of the timestamp option
DOC = Path(__file__).resolve().parents[1] / "docs" / "wire.md"
BEGIN, END = "<!-- validate-wire:begin -->", "<!-- validate-wire:end -->"
TESTBED_DELAYS = ("250ms", "80ms")  # sec. 5.4.2's lossy runs
TESTBED_LINE_BPS = 38_400
TESTBED_VARIANTS = ("stpd", "reno")


def fmt(x: float | None, digits: int = 2) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def one_emulation(preset: str, cc: str, sender: str, loss: float | None, size: str) -> dict:
    r = emulate(preset, tcp=cc, sender=sender, loss=loss, size=size, duration="3600s")
    (f,) = r.summary["flows"]
    return f


def one_simulation(
    preset: str, cc: str, loss: float | None, size: str, duration: str = "3600s"
) -> dict:
    r = simulate(preset, loss=loss, size=size, duration=duration, sets=[f"flows[0].tcp.cc={cc}"])
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


def write(lines: list[str], markers: tuple[str, str] = (BEGIN, END)) -> None:
    """Puts the tables so far between the markers of docs/wire.md (after every row, so a long
    run that is stopped keeps what it measured)."""
    write_between_markers(DOC, *markers, "\n".join(lines))


IRIDIUM_BEGIN = "<!-- validate-wire-iridium:begin -->"
IRIDIUM_END = "<!-- validate-wire-iridium:end -->"


def iridium_table(results: Path, size: str, controllers: list[str], write_doc: bool) -> None:
    """Every controller through iridium-4 from runs made outside this script, each ``farlink
    emulate iridium-4 --tcp CC --sender farlink --size SIZE --json`` into ``results/CC.json``
    (at the bundle's 9.6 kbit/s a 10 MB transfer takes close to three hours, so the eight run at
    once and this writes their table), beside the simulator's run of the same size. A run that
    is missing, or was stopped before its last byte, says so."""
    out = [f"### farlink's controllers: iridium-4, {size}", "", HEADER]
    for cc in controllers:
        path = results / f"{cc}.json"
        text = path.read_text() if path.exists() else ""
        if not text.strip():
            out.append(f"| {cc} | farlink | - | - | - | - | - | - | - | no result in {path} |")
            continue
        run = json.loads(text)
        (f,) = run["flows"]
        if run.get("interrupted"):
            f = {**f, "error": f"stopped at {f['delivered_bytes']:,} bytes"}
        out.append(row(cc, f, one_simulation("iridium-4", cc, None, size, duration="5h")))
        print(out[-1], flush=True)
    if write_doc:
        write(out, (IRIDIUM_BEGIN, IRIDIUM_END))


FIDELITY_BEGIN = "<!-- validate-wire-fidelity:begin -->"
FIDELITY_END = "<!-- validate-wire-fidelity:end -->"
FIDELITY_PRESET = "stpd-wireless"
FIDELITY_LOSSES = (0.01, 0.0)
FIDELITY_SENDERS = ("kernel", "farlink")
# The first slow start (BBR: Startup) and its overflow of the 30-packet queue are over by then
# in every run (traces: the initial burst of retransmissions ends by about 3 s); what follows
# is the steady state, where at p = 1e-2 the random losses dominate.
STARTUP_END_S = 5.0
BACKOFF_SEEN = 1.6
FIDELITY_HEADER = (
    "| controller | p | seed | sender | verified | transfer s | normalized goodput "
    "| retransmissions | timeouts | goodput vs kernel | retransmissions vs kernel "
    "| D-SACK blocks | retransmissions from 5 s | RTO backoffs seen at s | mean cwnd segments "
    "| mean srtt ms | mean rto ms | window reductions | error |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
)


def fidelity_emulation(cc: str, sender: str, loss: float, seed: int, size: str):
    """One run of the fidelity table: both senders with Linux's settings
    (``farlink.linux_tcp``), so that farlink's sender is compared with the kernel's as Linux
    configures it, not with the preset's RFC defaults."""
    return emulate(
        FIDELITY_PRESET,
        # The kernel's module by its name, farlink's sender the model of it (cubic-linux).
        tcp=cc if sender == "kernel" else linux_cc_name(cc),
        sender=sender,
        loss=loss,
        seed=seed,
        size=size,
        sets=linux_sets(0, cc),
        duration="3600s",
    )


def trace_figures(info: dict, end_s: float) -> dict:
    """What the sender's ``tcp_info`` trace (TCP_INFO every 10 ms for the kernel, the same
    columns from farlink's sender state) says of a run: the time-weighted mean cwnd in
    segments, the mean smoothed RTT and RTO, the retransmissions after the first
    ``STARTUP_END_S`` seconds, the times the RTO was seen backed off (a timeout; the 10 ms
    samples miss one whose backoff an RTT sample undid at once), and the window reductions: how
    often ssthresh changed (Reno and CUBIC set it afresh at each entry into recovery and at
    each timeout, from the window of that moment, so it can rise as well as fall; two
    reductions within one 10 ms sample count once; BBR leaves it alone)."""
    t = np.asarray(info["time_s"], dtype=float)
    if len(t) == 0:
        return {
            "cwnd": None,
            "srtt_ms": None,
            "rto_ms": None,
            "reductions": 0,
            "retransmissions_from_startup_end": 0,
            "backoffs_s": [],
        }
    cwnd = np.asarray(info["cwnd_bytes"], dtype=float) / SEGMENT_BYTES
    ssthresh = np.asarray(info["ssthresh_bytes"], dtype=float)
    rtt = np.asarray(info["rtt_us"], dtype=float)
    rto = np.asarray(info["rto_us"], dtype=float)
    retx = np.asarray(info["retransmissions"])
    startup_end = min(int(np.searchsorted(t, STARTUP_END_S)), len(t) - 1)
    # A timeout doubles the RTO until the next RTT sample (RFC 6298 5.5), so a sample more than
    # half again the previous one is a backoff; one undone within 10 ms is not seen.
    backed_off = rto[1:] > BACKOFF_SEEN * rto[:-1]
    return {
        "cwnd": time_weighted_mean(t, cwnd, float(t[0]), max(end_s, float(t[-1]) + 1e-3)),
        "srtt_ms": float(rtt[rtt > 0].mean()) / 1e3 if (rtt > 0).any() else None,
        "rto_ms": float(np.mean(rto)) / 1e3,
        "reductions": int(np.count_nonzero(np.diff(ssthresh))),
        "retransmissions_from_startup_end": int(retx[-1] - retx[startup_end]),
        "backoffs_s": [float(x) for x in t[1:][backed_off]],
    }


def relative(ours: float | None, kernel: float | None) -> str:
    """``ours`` against the kernel's, as a signed percentage."""
    if ours is None or not kernel:
        return "-"
    return f"{ours / kernel - 1:+.0%}"


def fidelity_row(cc: str, loss: float, seed: int, sender: str, f: dict, tr: dict, kernel) -> str:
    """One sender's run; farlink's row carries its goodput and retransmissions against the
    kernel's run of the same controller, loss and seed (``kernel``, its flow), and the D-SACK
    blocks the kernel receiver sent it (RFC 2883: each reports a segment that arrived twice,
    a retransmission that was not needed; the kernel's sender does not report its own)."""
    vs = kernel is not None and sender == "farlink"
    return (
        f"| {cc} | {loss:g} | {seed} | {sender} | {f['verified']} "
        f"| {fmt(f['transfer_time_s'])} | {fmt(f['normalized_goodput'], 3)} "
        f"| {f['retransmissions']} | {f['timeouts']} "
        f"| {relative(f['normalized_goodput'], kernel['normalized_goodput']) if vs else '-'} "
        f"| {relative(f['retransmissions'], kernel['retransmissions']) if vs else '-'} "
        f"| {f['wire']['dsack_blocks'] if 'wire' in f else '-'} "
        f"| {tr['retransmissions_from_startup_end']} "
        f"| {' '.join(f'{x:.1f}' for x in tr['backoffs_s']) or '-'} "
        f"| {fmt(tr['cwnd'], 1)} | {fmt(tr['srtt_ms'], 0)} | {fmt(tr['rto_ms'], 0)} "
        f"| {tr['reductions']} | {f['error'] or ''} |"
    )


def fidelity_run(
    cc: str,
    sender: str,
    loss: float,
    seed: int,
    size: str,
    trace_dir: Path | None,
    replay: bool,
    reuse: bool = False,
) -> tuple[dict, dict]:
    """One run's flow and ``tcp_info`` trace: emulated now (kept in ``trace_dir`` as
    ``<cc>-p<loss>-seed<seed>-<sender>.npz`` and ``.json`` if given), or with ``replay`` read
    back from there, so the table can be written again from runs already made; with ``reuse``
    read back where kept, else emulated (a change to one sender reruns only its runs, once
    theirs are removed)."""
    name = f"{cc}-p{loss:g}-seed{seed}-{sender}"
    kept = trace_dir is not None and (trace_dir / f"{name}.json").exists()
    if replay or (reuse and kept):
        if trace_dir is None:
            raise ValueError("a replay reads the runs kept in trace_dir")
        with np.load(trace_dir / f"{name}.npz") as kept:
            info = {k: kept[k] for k in kept.files}
        return json.loads((trace_dir / f"{name}.json").read_text()), info
    r = fidelity_emulation(cc, sender, loss, seed, size)
    (f,) = r.summary["flows"]
    info = r.trace("tcp_info")
    if trace_dir is not None:
        np.savez(trace_dir / f"{name}.npz", **{k: np.asarray(v) for k, v in info.items()})
        (trace_dir / f"{name}.json").write_text(json.dumps(f))
    return f, info


def fidelity_table(
    size: str,
    seeds: list[int],
    write_doc: bool,
    trace_dir: Path | None,
    replay: bool = False,
    reuse: bool = False,
) -> None:
    """farlink's reno, cubic and bbr beside the kernel's on ``stpd-wireless`` at each of
    ``FIDELITY_LOSSES``, one run after the other (real time: two at once would share the
    cores), every sender with Linux's settings (see :func:`fidelity_run` for ``trace_dir``,
    ``replay`` and ``reuse``)."""
    out = [f"### farlink beside the kernel, Linux's settings: {FIDELITY_PRESET}, {size}", ""]
    out.append(FIDELITY_HEADER)
    if trace_dir is not None:
        trace_dir.mkdir(parents=True, exist_ok=True)
    for seed in seeds:
        for loss in FIDELITY_LOSSES:
            for cc in KERNEL_PAIR:
                kernel = None
                for sender in FIDELITY_SENDERS:
                    f, info = fidelity_run(cc, sender, loss, seed, size, trace_dir, replay, reuse)
                    end_s = f["transfer_time_s"] or float(np.max(info["time_s"], initial=0.0))
                    line = fidelity_row(
                        cc, loss, seed, sender, f, trace_figures(info, end_s), kernel
                    )
                    kernel = f if sender == "kernel" else kernel
                    print(line, flush=True)
                    out.append(line)
                    if write_doc:
                        write([*out, ""], (FIDELITY_BEGIN, FIDELITY_END))


TESTBED_HEADER = (
    "| controller | PER | errors | seed | verified | transfer s | retransmissions | timeouts "
    "| simulator transfer s | simulator retransmissions | thesis s | error |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|---|"
)


def testbed_runs(delay: str, seeds: list[int]) -> list[tuple]:
    """Every run of the testbed table: for each of the thesis's cases at this delay, ST-PD and
    Reno, with the thesis emulator's LCG errors (its one run) and with Bernoulli errors of each
    seed; a lossless case runs once."""
    runs = []
    for line_bps, case_delay, per, pub_reno, pub_stpd in TESTBED_CASES:
        if line_bps != TESTBED_LINE_BPS or case_delay != delay:
            continue
        for variant in TESTBED_VARIANTS:
            published = pub_stpd if variant == "stpd" else pub_reno
            draws = [("lcg", 1)] + [("bernoulli", k) for k in seeds] if per > 0 else [("-", 1)]
            runs += [(variant, delay, per, loss, seed, published) for loss, seed in draws]
    return runs


def testbed_row(run: tuple) -> str:
    """One run on the wire (farlink's sender, the kernel receiver) beside the simulator's."""
    variant, delay, per, loss, seed, published = run
    sets = testbed_sets(TESTBED_LINE_BPS, delay, per, loss)
    f = emulate(
        "stpd-testbed", tcp=variant, sender="farlink", seed=seed, sets=sets, duration="3600s"
    ).summary["flows"][0]
    (sim,) = simulate(
        "stpd-testbed", tcp=variant, seed=seed, sets=[*sets, "trace={}"], duration="3600s"
    ).summary["flows"]
    bound = "> " if variant == "reno" and published else ""
    return (
        f"| {variant} | {per:g} | {loss} | {seed} | {f['verified']} "
        f"| {fmt(f['transfer_time_s'])} | {f['retransmissions']} | {f['timeouts']} "
        f"| {fmt(sim['transfer_time_s'])} | {sim['retransmissions']} "
        f"| {bound + fmt(published, 0) if published else '-'} | {f['error'] or ''} |"
    )


def testbed_markers(delay: str) -> tuple[str, str]:
    """Each delay's table has markers of its own, so a run of one delay keeps the other's."""
    return (
        f"<!-- validate-wire-testbed-{delay}:begin -->",
        f"<!-- validate-wire-testbed-{delay}:end -->",
    )


def testbed_table(delay: str, seeds: list[int], jobs: int, write_doc: bool) -> None:
    """Seed 003's testbed on the wire at one delay; ``jobs`` emulations at once (each in its
    own namespaces), the rows in the order of ``testbed_runs``."""
    runs = testbed_runs(delay, seeds)
    title = f"### seed 003's testbed: stpd-testbed, 38.4 kbps, {delay}, 100000B"
    out = [title, "", TESTBED_HEADER]
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        for line in pool.map(testbed_row, runs):
            print(line, flush=True)
            out.append(line)
            if write_doc:
                write([*out, ""], testbed_markers(delay))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="10MB")
    parser.add_argument("--iridium-size", default="100KB")
    parser.add_argument("--controllers", default=",".join(CONTROLLERS))
    parser.add_argument("--no-write", action="store_true", help="Print only.")
    parser.add_argument(
        "--only",
        choices=("fidelity", "testbed", "iridium"),
        help="Run only this table (or tables).",
    )
    parser.add_argument(
        "--iridium-results",
        type=Path,
        help="With --only iridium: the directory of the CC.json results to tabulate.",
    )
    parser.add_argument(
        "--fidelity-seeds",
        default="1,2",
        help="Seeds of the fidelity table (farlink beside Linux).",
    )
    parser.add_argument(
        "--trace-dir", type=Path, help="Keep each fidelity run's tcp_info trace here (.npz)."
    )
    parser.add_argument(
        "--replay",
        action="store_true",
        help="Write the fidelity table from the runs kept in --trace-dir, emulating nothing.",
    )
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="Read back the fidelity runs kept in --trace-dir where present; emulate the rest.",
    )
    parser.add_argument(
        "--testbed-delays", default=",".join(TESTBED_DELAYS), help="Of 80ms, 250ms (sec. 5.4)."
    )
    parser.add_argument("--testbed-seeds", default="1,2,3", help="Bernoulli seeds.")
    parser.add_argument("--jobs", type=int, default=1, help="Testbed emulations at once.")
    args = parser.parse_args()
    seeds = [int(k) for k in args.testbed_seeds.split(",") if k]
    delays = [d for d in args.testbed_delays.split(",") if d]
    fidelity_seeds = [int(k) for k in args.fidelity_seeds.split(",") if k]
    if args.only == "iridium":
        if args.iridium_results is None:
            parser.error("--only iridium tabulates --iridium-results DIR")
        controllers = [c for c in args.controllers.split(",") if c]
        iridium_table(args.iridium_results, args.size, controllers, not args.no_write)
        return 0
    if args.only == "testbed":
        for delay in delays:
            testbed_table(delay, seeds, args.jobs, not args.no_write)
        return 0
    if (args.replay or args.reuse) and (args.trace_dir is None or args.only != "fidelity"):
        parser.error("--replay and --reuse read the fidelity runs (--only fidelity) in --trace-dir")
    if args.only == "fidelity":
        fidelity_table(
            args.size, fidelity_seeds, not args.no_write, args.trace_dir, args.replay, args.reuse
        )
        return 0
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
    out.append("")
    if not args.no_write:
        write(out)
    fidelity_table(args.size, fidelity_seeds, not args.no_write, args.trace_dir)
    for delay in delays:
        testbed_table(delay, seeds, args.jobs, not args.no_write)
    if not args.no_write:
        print(f"wrote {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
