"""The ``sim`` engine from Python: ``farlink.simulate(scenario, **overrides) -> Result``.

The simulation runs entirely in the Rust core with the GIL released; this module only prepares the
scenario document and wraps what comes back. Wall time is measured here, since the core reads no
clock.

Every run is held to a budget (``docs/scenarios.md``, "Run budget"): the core estimates its events
and memory first and refuses one over the budget (``farlink._core.BudgetError``), and stops one that
outgrows it while running, or is interrupted (Ctrl-C), keeping what it has: the result's
``summary["partial"]`` then says why and when.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from farlink import _core
from farlink.outputs import OutputError, OutputFolder, safe_name
from farlink.results.result import Result
from farlink.results.schema import sim_document, write_document
from farlink.scenario import apply_overrides, load_scenario, to_core_json

__all__ = [
    "HEADLINE_FIELDS",
    "ProgressLine",
    "address_map_file_name",
    "estimate",
    "flow_rows",
    "headline",
    "interval_rows",
    "output_names",
    "pcap_file_name",
    "simulate",
    "write_run",
]

ProgressCallback = Callable[[float, float, int], None]


def simulate(
    scenario: str | Path | dict[str, Any],
    *,
    tcp: str | None = None,
    loss: float | None = None,
    duration: str | None = None,
    size: str | None = None,
    seed: int | None = None,
    sets: list[str] | tuple[str, ...] = (),
    profile: str | None = None,
    transport: str | None = None,
    budget_events: int | None = None,
    budget_memory_bytes: int | None = None,
    budget_disk_bytes: int | None = None,
    progress: ProgressCallback | None = None,
    trace_dir: str | Path | Callable[..., Path] | None = None,
    stream_pcap: bool = False,
) -> Result:
    """Run a scenario (a preset name, a TOML path or a parsed document) on the packet engine.

    Overrides are those of ``farlink simulate``: ``tcp`` (tahoe, reno, newreno, sack, rack select
    loss recovery; other names the congestion controller), ``loss`` (packet error rate of the
    scenario's ``lossy_link`` in the data direction), ``duration`` and ``size`` in human units,
    ``seed``, ``profile`` (every flow's TCP profile, ``"rfc"`` or ``"linux"``), ``transport``
    (every flow's: ``"tcp"``, or ``"mptcp"`` for one subflow per bundle member), and ``sets`` of
    ``path=value`` applied last. Raises ``farlink.ScenarioError``
    (``err.path`` names the field at fault) for a scenario that cannot be read or that the core
    refuses.

    ``budget_events`` and ``budget_memory_bytes`` replace the default run budget (10**9 events,
    2 GiB); ``farlink._core.BudgetError`` is raised for a run whose estimate is over it.
    ``progress(simulated_s, duration_s, events)`` is called about every 0.1 s of a long run.

    With ``trace_dir`` (a folder, or a function giving one when the first rows are written, called
    with the names of files about to be written there, which it may claim) the
    traces stream into ``<trace_dir>/<trace>.parquet`` as the run records them, in bounded
    memory, and the result reads them back from there (docs/traces.md, "Long runs"); the
    budget then counts their rows as disk, ``budget_disk_bytes`` (default 16 GiB). With
    ``stream_pcap`` too, the captures of the scenario's ``pcap`` taps are written there as
    :func:`pcap_file_name` gives, as the run goes (docs/captures.md).
    """
    from farlink.results.result import DiskCaptures, TraceStream
    from farlink.results.traces import switched_on

    doc = scenario if isinstance(scenario, dict) else load_scenario(scenario)
    doc = apply_overrides(
        doc,
        tcp=tcp,
        loss=loss,
        duration=duration,
        size=size,
        seed=seed,
        sets=sets,
        profile=profile,
        transport=transport,
    )
    stream = None
    capture_files = None
    core_json = to_core_json(doc)
    if trace_dir is not None:
        folder = trace_dir if callable(trace_dir) else _made(Path(trace_dir))
        stream = TraceStream(folder, switched_on(doc))
        if stream_pcap and doc.get("pcap"):
            # The spools are made as the first packets are captured: the folder must be
            # there, unless the core will refuse the run (then nothing is made).
            cost = _core.estimate_scenario(core_json, streamed=True, stream_pcap=True)
            if (
                cost["events"] <= (budget_events or cost["default_max_events"])
                and cost["memory_bytes"]
                <= (budget_memory_bytes or cost["default_max_memory_bytes"])
                and cost["disk_bytes"] <= (budget_disk_bytes or cost["default_max_disk_bytes"])
            ):

                def capture_files(tap: str) -> str:
                    names = (pcap_file_name(tap), address_map_file_name(tap))
                    return str(folder(*names) / names[0])

    started = time.perf_counter()
    try:
        raw = _core.run_scenario(
            core_json,
            max_events=budget_events,
            max_memory_bytes=budget_memory_bytes,
            max_disk_bytes=budget_disk_bytes,
            progress=progress,
            trace_sink=stream,
            capture_files=capture_files,
        )
        wall_time_s = time.perf_counter() - started  # the engine's: traces may still be writing
        # Waits for the trace writer to finish what was queued (and raises its error).
        traces = raw["traces"] if stream is None else stream.traces(raw["traces"])
    except BaseException:
        if stream is not None:
            stream.abort()
        raise
    name = doc.get("name") or (Path(scenario).stem if isinstance(scenario, str | Path) else None)
    result = Result(
        summary=sim_document(json.loads(raw["summary"]), scenario=name, wall_time_s=wall_time_s),
        traces=traces,
        scenario=doc,
        engine="sim",
        pcap=DiskCaptures(raw["pcap_files"]) if raw["pcap_files"] else raw["pcap"],
        pcap_addresses=raw["pcap_addresses"],
        names={
            "flows": raw["flows"],
            "connections": [list(c) for c in raw["connections"]],
            "links": raw["links"],
            "nodes": raw["nodes"],
        },
    )
    if stream is not None:
        try:
            stream.close(result.provenance())
        except BaseException:
            stream.abort()
            raise
    return result


def _made(folder: Path) -> Callable[..., Path]:
    """A function that creates ``folder`` (when the first rows are written) and gives it."""

    def make(*names: str) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    return make


def estimate(
    scenario: str | Path | dict[str, Any],
    *,
    tcp: str | None = None,
    loss: float | None = None,
    duration: str | None = None,
    size: str | None = None,
    seed: int | None = None,
    sets: list[str] | tuple[str, ...] = (),
    profile: str | None = None,
    transport: str | None = None,
    streamed: bool = False,
    stream_pcap: bool = False,
) -> dict[str, Any]:
    """What :func:`simulate` with the same arguments would cost, from the core's estimate,
    without running it: ``events``, ``trace_rows``, ``memory_bytes``, ``disk_bytes`` and the
    default budget; ``streamed`` for a run given a ``trace_dir`` (its rows count as disk), and
    ``stream_pcap`` for one streaming its captures too."""
    doc = scenario if isinstance(scenario, dict) else load_scenario(scenario)
    doc = apply_overrides(
        doc,
        tcp=tcp,
        loss=loss,
        duration=duration,
        size=size,
        seed=seed,
        sets=sets,
        profile=profile,
        transport=transport,
    )
    return dict(
        _core.estimate_scenario(to_core_json(doc), streamed=streamed, stream_pcap=stream_pcap)
    )


HEADLINE_FIELDS = (
    "goodput_bps",
    "normalized_goodput",
    "delivered_bytes",
    "transfer_time_s",
    "retransmissions",
    "timeouts",
    "drops",
    "events",
    "sim_time_s",
    "wall_time_s",
)
"""The figures ``farlink simulate`` prints as its table (``--json`` prints the whole result),
and every sweep row carries."""


def headline(result: Result) -> dict[str, Any]:
    """The figures of a result's document that ``farlink simulate`` shows first."""
    return {key: result.summary.get(key) for key in HEADLINE_FIELDS}


class ProgressLine:
    """A one-line progress report for a terminal: simulated time of the duration and events/s,
    rewritten in place (``\\r``) and erased by :meth:`close`. Pass it as ``progress``."""

    def __init__(self, stream: TextIO):
        self.stream = stream
        self.started = time.perf_counter()
        self.width = 0

    def __call__(self, simulated_s: float, duration_s: float, events: int) -> None:
        elapsed = max(time.perf_counter() - self.started, 1e-9)
        share = simulated_s / duration_s if duration_s > 0 else 0.0
        line = (
            f"farlink: simulated {simulated_s:.6g} s of {duration_s:.6g} s ({share:.0%}), "
            f"{events / elapsed / 1e6:.1f} M events/s (Ctrl-C stops and keeps the result)"
        )
        self.width = max(self.width, len(line))
        self.stream.write("\r" + line.ljust(self.width))
        self.stream.flush()

    def close(self) -> None:
        if self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()


#: How a flow summary's ``limited_by`` cause reads in a table.
LIMIT_WORDS = {
    "application": "application",
    "receive_window": "receive window",
    "send_buffer": "send buffer",
    "congestion_window": "congestion window",
    "link": "link",
}


def flow_rows(result: Result) -> list[dict[str, Any]]:
    """One row per flow, as ``farlink simulate`` prints them (iperf3's habit): goodput,
    retransmissions, timeouts, and what limited the sender most of the time with its share of
    the time counted (``limited_by`` and ``limited_s`` of the flow summary)."""
    rows = []
    for f in result.summary["flows"]:
        # A UDP flow or a short-flow class has no sender state to say what limited it.
        limited = f.get("limited_s") or {}
        total = sum(v for v in limited.values() if v is not None)
        cause = f.get("limited_by")
        rows.append(
            {
                "flow": f["name"],
                "goodput_bps": f["goodput_bps"],
                "retransmissions": f["retransmissions"],
                "timeouts": f["timeouts"],
                "limited_by": LIMIT_WORDS.get(cause, cause) if cause else None,
                "limited_share": limited[cause] / total if cause and total > 0 else None,
            }
        )
    return rows


def traffic_rows(result: Result) -> tuple[list[tuple[Any, ...]], ...]:
    """The competing-traffic figures as ``farlink simulate`` prints them (docs/traffic.md):
    per UDP flow its goodput, loss rate, one-way delay and jitter (p50, p99); per short-flow
    class its connections arrived and finished, completion times (p50, p90, p99) and slowdown
    (p50, p99); per request/response flow its exchanges begun and completed and response times
    (p50, p90, p99). Empty lists for a run without them."""
    udp, short, exchanges = [], [], []

    def p(stats: dict[str, float] | None, key: str) -> float | None:
        return None if stats is None else stats[key]

    for f in result.summary["flows"]:
        if "loss_rate" in f:
            owd, jit = f["one_way_delay_s"], f["jitter_s"]
            udp.append(
                (
                    f["name"],
                    f["goodput_bps"],
                    f["loss_rate"],
                    *(p(owd, "p50"), p(owd, "p99"), p(jit, "p50"), p(jit, "p99")),
                )
            )
        if "fct_s" in f:
            fct, slow = f["fct_s"], f["slowdown"]
            short.append(
                (
                    f["name"],
                    f["flows_arrived"],
                    f["flows_finished"],
                    *(p(fct, "p50"), p(fct, "p90"), p(fct, "p99")),
                    *(p(slow, "p50"), p(slow, "p99")),
                )
            )
        if "response_time_s" in f:
            rt = f["response_time_s"]
            exchanges.append(
                (
                    f["name"],
                    f["exchanges"],
                    f["exchanges_completed"],
                    *(p(rt, "p50"), p(rt, "p90"), p(rt, "p99")),
                )
            )
    return udp, short, exchanges


def interval_rows(result: Result) -> list[dict[str, Any]]:
    """Per flow and per interval of the scenario's ``trace.goodput_interval``: the goodput in
    the interval and the congestion window at its end (of the source's connection for a flow
    split at relays), from the ``goodput`` and ``cwnd`` traces, which must be on. Intervals
    start at the flow's start; the last one ends with the run."""
    goodput = result.trace("goodput")
    cwnd = result.trace("cwnd")
    rows = []
    for index, f in enumerate(result.summary["flows"]):
        conns = result.connections_of(index)
        if not conns or f["app"] in ("flows_poisson", "request_response"):
            continue  # a UDP flow has no connection; the others, several (docs/traffic.md)
        # A Multipath TCP flow's goodput is its connection level's, under its own id (the
        # first); a split flow's, its last connection's.
        at_dest = goodput["flow"] == (conns[0] if f.get("subflows") else conns[-1])
        times_ns = goodput["time_ns"][at_dest]
        delivered = goodput["delivered_bytes"][at_dest]
        of_source = cwnd["flow"] == conns[0]
        cwnd_times = cwnd["time_ns"][of_source]
        cwnd_bytes = cwnd["cwnd_bytes"][of_source]
        start_ns = round(f["start_s"] * 1e9)
        previous_ns, previous_bytes = start_ns, 0
        # The grid ends at the last multiple of the interval; a run that ended between two
        # (every flow finished) gets a last, shorter interval up to its end, as iperf3 does.
        end_ns = round(result.summary["sim_time_s"] * 1e9)
        samples = [*zip(times_ns.tolist(), delivered.tolist(), strict=True)]
        if not samples or samples[-1][0] < end_ns:
            samples.append((end_ns, f["delivered_bytes"]))
        for t_ns, d in samples:
            if t_ns <= previous_ns:
                continue
            k = int(np.searchsorted(cwnd_times, t_ns, side="right")) - 1
            rows.append(
                {
                    "flow": f["name"],
                    "start_s": previous_ns / 1e9,
                    "end_s": t_ns / 1e9,
                    "goodput_bps": (d - previous_bytes) * 8e9 / (t_ns - previous_ns),
                    "cwnd_bytes": int(cwnd_bytes[k]) if k >= 0 else None,
                }
            )
            previous_ns, previous_bytes = t_ns, d
    rows.sort(key=lambda r: r["end_s"])  # stable: flows in scenario order within an instant
    return rows


def output_names(result: Result, *, pcap: bool, traces: bool = True) -> list[str]:
    """The files :func:`write_run` writes: one Parquet file per trace, the summary, captures."""
    names = [f"{name}.parquet" for name in result.recorded_traces()] if traces else []
    names.append("summary.json")
    if pcap:
        for tap in sorted(result.pcap):
            names.append(pcap_file_name(tap))
            if tap in result.pcap_addresses:
                names.append(address_map_file_name(tap))
    return names


def pcap_file_name(tap: str) -> str:
    """A tap's capture file: its name made safe (tap names are scenario text)."""
    return f"{safe_name(tap, 'link')}.pcap"


def address_map_file_name(tap: str) -> str:
    """The address map written beside a tap's capture (docs/captures.md)."""
    return f"{safe_name(tap, 'link')}.addresses.json"


def write_run(
    result: Result, folder: OutputFolder, *, pcap: bool, traces: bool = True
) -> list[Path]:
    """Write a run's traces (unless ``traces`` is false), summary and (with ``pcap``) captures
    into ``folder``.

    Every file is claimed before the first is written, so a run refused for one file it may not
    replace writes nothing; traces and captures an earlier run wrote there and this one does not
    are removed, so the folder holds one run; what was written is recorded in the manifest.
    """
    from farlink.results.result import write_pcaps

    names = output_names(result, pcap=pcap, traces=traces)
    folder.claim(*names)
    folder.remove_stale(names, (".parquet", ".pcap"))
    try:
        written = (
            result.to_parquet(folder.path)
            if traces
            else [write_document(result.summary, folder.path)]
        )
        if pcap:
            written += write_pcaps(result, folder.path)
    except OSError as err:
        raise OutputError(
            f"{folder.option}: cannot write into {folder.path} ({err.strerror or err})"
        ) from None
    folder.record(written)
    return written
