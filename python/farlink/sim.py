"""The ``sim`` engine from Python: ``farlink.simulate(scenario, **overrides) -> Result``.

The simulation runs entirely in the Rust core with the GIL released; this module only prepares the
scenario document and wraps what comes back. Wall time is measured here, since the core reads no
clock.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from farlink import _core
from farlink.docjson import document_json
from farlink.outputs import OutputError, OutputFolder, safe_name
from farlink.results import Result
from farlink.scenario import apply_overrides, load_scenario

__all__ = ["headline", "output_names", "pcap_file_name", "simulate", "write_run"]


def simulate(
    scenario: str | Path | dict[str, Any],
    *,
    tcp: str | None = None,
    loss: float | None = None,
    duration: str | None = None,
    size: str | None = None,
    seed: int | None = None,
    sets: list[str] | tuple[str, ...] = (),
) -> Result:
    """Run a scenario (a preset name, a TOML path or a parsed document) on the packet engine.

    Overrides are those of ``farlink simulate``: ``tcp`` (tahoe, reno, newreno, sack select
    loss recovery; other names the congestion controller), ``loss`` (packet error rate of the
    scenario's ``lossy_link`` in the data direction), ``duration`` and ``size`` in human units,
    ``seed``, and ``sets`` of ``path=value`` applied last. Raises ``farlink.ScenarioError`` (from
    this module or the core, with the field path) for a scenario the core refuses.
    """
    doc = scenario if isinstance(scenario, dict) else load_scenario(scenario)
    doc = apply_overrides(
        doc, tcp=tcp, loss=loss, duration=duration, size=size, seed=seed, sets=sets
    )
    started = time.perf_counter()
    raw = _core.run_scenario(document_json(doc))
    wall_time_s = time.perf_counter() - started
    summary = json.loads(raw["summary"])
    summary["wall_time_s"] = wall_time_s
    return Result(
        summary=summary,
        traces=raw["traces"],
        scenario=doc,
        engine="sim",
        pcap=raw["pcap"],
        names={
            "flows": raw["flows"],
            "connections": [list(c) for c in raw["connections"]],
            "links": raw["links"],
            "nodes": raw["nodes"],
        },
    )


def headline(result: Result) -> dict[str, Any]:
    """The figures ``farlink simulate --json`` prints first, from the aggregate of all flows.

    ``transfer_time_s`` is the time the last bulk transfer delivered its last byte, or None when
    any flow is unfinished or no flow is a bulk transfer.
    """
    s = result.summary
    agg = s["aggregate"]
    times = [f.get("transfer_time_s") for f in s["flows"]]
    finished = bool(times) and all(t is not None for t in times)
    return {
        "goodput_bps": agg["goodput_bps"],
        "normalized_goodput": agg["normalized_goodput"],
        "delivered_bytes": agg["delivered_bytes"],
        "transfer_time_s": max(times) if finished else None,
        "retransmissions": agg["retransmissions"],
        "timeouts": agg["timeouts"],
        "drops": agg["drops"],
        "events": s["events"],
        "sim_time_s": s["sim_time_s"],
        "wall_time_s": s["wall_time_s"],
    }


def output_names(result: Result, *, pcap: bool) -> list[str]:
    """The files :func:`write_run` writes: one Parquet file per trace, the summary, captures."""
    names = [f"{name}.parquet" for name in result.recorded_traces()] + ["summary.json"]
    if pcap:
        names += [pcap_file_name(link) for link in sorted(result.pcap)]
    return names


def pcap_file_name(link: str) -> str:
    """A link's capture file: its name made safe (link names are scenario text)."""
    return f"{safe_name(link, 'link')}.pcap"


def write_run(result: Result, folder: OutputFolder, *, pcap: bool) -> list[Path]:
    """Write a run's traces, summary and (with ``pcap``) captures into ``folder``.

    Every file is claimed before the first is written, so a run refused for one file it may not
    replace writes nothing; traces and captures an earlier run wrote there and this one does not
    are removed, so the folder holds one run; what was written is recorded in the manifest.
    """
    from farlink.results import write_pcaps

    names = output_names(result, pcap=pcap)
    folder.claim(*names)
    folder.remove_stale(names, (".parquet", ".pcap"))
    try:
        written = result.to_parquet(folder.path)
        if pcap:
            written += write_pcaps(result, folder.path)
    except OSError as err:
        raise OutputError(
            f"{folder.option}: cannot write into {folder.path} ({err.strerror or err})"
        ) from None
    folder.record(written)
    return written
