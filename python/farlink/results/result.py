"""The result of a run: a summary and columnar traces, the same shape for every engine.

Traces are named tables of equal-length NumPy columns (``time_s`` first), e.g. ``cwnd`` with
``time_s``, ``flow``, ``cwnd_bytes``, ``ssthresh_bytes``. They convert to Arrow tables and Parquet
files that DuckDB, pandas or polars read directly; every file carries the scenario, seed and
versions in its schema metadata so a result found alone still says where it came from.
"""

from __future__ import annotations

import json
import platform
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from farlink.results.schema import write_document

SCHEMA_VERSION = "1"


ENGINE_TRACES: dict[str, set[str]] = {"emulate": {"tcp_info"}}
"""Traces an engine records whatever the scenario's ``trace`` switches say (the emulator samples
the kernel's TCP_INFO of every sender)."""


@dataclass(frozen=True)
class Result:
    """A summary (the result document of docs/results.md) and traces (name → column → array).

    ``pcap`` holds a capture (pcap bytes) per tap, ``pcap_addresses`` its address map (JSON
    text, docs/captures.md); ``names`` the flow, link and node
    names in the order of the ``flow`` and ``link`` columns of the traces. The ``flow`` column
    counts TCP connections: a flow split at relays has one per segment of its route, named
    ``name#k``, and ``names["connections"]`` gives each connection's ``[flow index, k, sender
    node, receiver node]`` (see :meth:`Result.connections_of`).
    """

    summary: dict[str, Any]
    traces: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
    scenario: dict[str, Any] = field(default_factory=dict)
    engine: str = "sim"
    pcap: dict[str, bytes] = field(default_factory=dict)
    pcap_addresses: dict[str, str] = field(default_factory=dict)
    names: dict[str, list[Any]] = field(default_factory=dict)

    def trace(self, name: str) -> dict[str, np.ndarray]:
        """One trace table; :class:`~farlink.results.traces.TraceNotRecorded` (a ``KeyError``) for a
        trace the scenario did not switch on, saying how to switch it on."""
        from farlink.results.traces import TraceNotRecorded, how_to_switch_on

        if name not in self.traces:
            known = ", ".join(sorted(self.traces)) or "none recorded"
            raise KeyError(f"no trace {name!r} in this result (traces: {known})")
        if name not in self.recorded_traces():
            raise TraceNotRecorded(how_to_switch_on(name))
        return self.traces[name]

    def recorded_traces(self) -> list[str]:
        """The traces this run recorded (switched on in its scenario, or always kept by its
        engine: the emulator's ``tcp_info``), sorted."""
        from farlink.results.traces import switched_on

        wanted = switched_on(self.scenario) | ENGINE_TRACES.get(self.engine, set())
        return sorted(wanted & set(self.traces))

    def connections_of(self, flow: int | str) -> list[int]:
        """The trace ``flow`` ids of a scenario flow (by index or name), source first: one id,
        or one per connection of a flow split at relays."""
        flows = self.summary.get("flows", [])
        if isinstance(flow, str):
            index = next((i for i, f in enumerate(flows) if f["name"] == flow), None)
            if index is None:
                raise KeyError(f"no flow {flow!r} in this result")
        else:
            index = flow
        conns = self.names.get("connections")
        if conns is None:
            return [index]
        return [i for i, c in enumerate(conns) if c[0] == index]

    def provenance(self) -> dict[str, str]:
        from farlink import __version__

        return {
            "farlink.schema_version": SCHEMA_VERSION,
            "farlink.version": __version__,
            "farlink.engine": self.engine,
            "farlink.python": platform.python_version(),
            "farlink.scenario": json.dumps(self.scenario, sort_keys=True),
            "farlink.summary": json.dumps(self.summary, sort_keys=True),
        }

    def to_arrow(self, name: str):
        """One trace as a ``pyarrow.Table`` with provenance in its schema metadata."""
        import pyarrow as pa

        table = pa.table(dict(self.trace(name)))
        return table.replace_schema_metadata(self.provenance())

    def to_parquet(self, directory: str | Path) -> list[Path]:
        """Write every recorded trace as ``<directory>/<trace>.parquet`` (none for a trace that
        was not switched on) and the summary as JSON."""
        import pyarrow.parquet as pq

        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        written = []
        for name in self.recorded_traces():
            path = out / f"{name}.parquet"
            pq.write_table(self.to_arrow(name), path)
            written.append(path)
        written.append(write_document(self.summary, out))
        return written


def write_pcaps(result: Result, directory: str | Path) -> list[Path]:
    """Write each tap's capture as ``<directory>/<tap>.pcap`` (the name made safe) and, when the
    result has it, its address map beside it as ``<tap>.addresses.json``."""
    from farlink.sim import address_map_file_name, pcap_file_name

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for tap, data in sorted(result.pcap.items()):
        path = out / pcap_file_name(tap)
        path.write_bytes(data)
        written.append(path)
        if tap in result.pcap_addresses:
            map_path = out / address_map_file_name(tap)
            map_path.write_text(result.pcap_addresses[tap] + "\n")
            written.append(map_path)
    return written


def columns_equal(a: Mapping[str, np.ndarray], b: Mapping[str, np.ndarray]) -> bool:
    """Exact equality of two traces, column by column (NaN equal to NaN)."""
    if a.keys() != b.keys():
        return False
    return all(np.array_equal(a[k], b[k], equal_nan=a[k].dtype.kind == "f") for k in a)
