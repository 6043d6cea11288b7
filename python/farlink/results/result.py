"""The result of a run: a summary and columnar traces, the same shape for every engine.

Traces are named tables of equal-length NumPy columns (``time_s`` first), e.g. ``cwnd`` with
``time_s``, ``flow``, ``cwnd_bytes``, ``ssthresh_bytes``. They convert to Arrow tables and Parquet
files that DuckDB, pandas or polars read directly; every file carries the scenario, seed and
versions in its schema metadata so a result found alone still says where it came from.
"""

from __future__ import annotations

import json
import platform
import queue
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from farlink.results.schema import write_document

TRACE_FILE_SCHEMA_VERSION = "1"
"""Version of a trace file's provenance metadata (``farlink.schema_version`` in each Parquet
file's key-value metadata); the result document has its own (``RESULT_SCHEMA_VERSION``)."""


ENGINE_TRACES: dict[str, set[str]] = {"emulate": {"tcp_info", "goodput", "member_state"}}
"""Traces an engine records whatever the scenario's ``trace`` switches say (the emulator samples
the kernel's TCP_INFO of every sender, notes each receiving application's reads, and keeps a
bundle's member states)."""


@dataclass(frozen=True)
class Result:
    """A summary (the result document of docs/results.md) and traces (name → column → array).

    ``traces`` and ``pcap`` of a run that streamed them to a folder read them back from their
    files when asked (:class:`DiskTraces`, :class:`DiskCaptures`). ``pcap`` holds a capture
    (pcap bytes) per tap, ``pcap_addresses`` its address map (JSON
    text, docs/captures.md); ``names`` the flow, link and node
    names in the order of the ``flow`` and ``link`` columns of the traces. The ``flow`` column
    counts TCP connections: a flow split at relays has one per segment of its route, named
    ``name#k``, and ``names["connections"]`` gives each connection's ``[flow index, k, sender
    node, receiver node]`` (see :meth:`Result.connections_of`).
    """

    summary: dict[str, Any]
    traces: Mapping[str, Mapping[str, np.ndarray]] = field(default_factory=dict)
    scenario: dict[str, Any] = field(default_factory=dict)
    engine: str = "sim"
    pcap: Mapping[str, bytes] = field(default_factory=dict)
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
            "farlink.schema_version": TRACE_FILE_SCHEMA_VERSION,
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
            # A trace streamed to this very file while the run went is there already.
            if not (isinstance(self.traces, DiskTraces) and self.traces.file(name) == path):
                table = self.to_arrow(name)
                pq.write_table(table, path, **parquet_options(table.schema))
            written.append(path)
        written.append(write_document(self.summary, out))
        return written


def parquet_options(schema: Any) -> dict[str, Any]:
    """How farlink writes a trace's Parquet file, streamed or whole: integer columns delta-encoded
    (DELTA_BINARY_PACKED: times, sequence numbers and windows move by small steps, so a trace
    takes about a seventeenth of the plain encoding's bytes and a third of its time to write),
    no dictionaries (they are tried and abandoned on columns of distinct values, most of the
    write time), and statistics on ``time_ns`` only, which is what a reader prunes row groups
    by. Every Parquet reader (pyarrow, DuckDB, polars) reads the encoding."""
    import pyarrow as pa

    integers = [f.name for f in schema if pa.types.is_integer(f.type)]
    return {
        "use_dictionary": False,
        "column_encoding": dict.fromkeys(integers, "DELTA_BINARY_PACKED"),
        "write_statistics": [f.name for f in schema if f.name == "time_ns"],
    }


class TraceStream:
    """Writes a run's trace rows into ``<folder>/<trace>.parquet`` as the core hands them over
    (``_core.run_scenario(..., trace_sink=)``): one Parquet row group per chunk, so that a run
    holds a bounded buffer per trace whatever its length (docs/traces.md, "Long runs").

    The files are written on a thread of their own: the core's callback only queues the chunk's
    columns (the core's vectors, moved into NumPy arrays), at most :attr:`QUEUE_CHUNKS` deep, so
    the engine goes on while the writer makes Arrow tables of them (no copy) and Parquet encodes
    (pyarrow releases the GIL while it writes), and memory stays bounded (a full queue holds the
    engine until the writer catches up).

    ``folder`` is called when the first rows arrive (a run refused by its budget creates
    nothing); ``names`` are the traces the run records, each written even if it got no row.
    :meth:`close` adds the provenance (with the summary, known only at the end) to every file,
    which then reads back as the in-memory path's ``Result.to_parquet`` writes it. An error of
    the writer is raised to the core at its next chunk (which stops the run) or by
    :meth:`traces` and :meth:`close`.
    """

    QUEUE_CHUNKS = 8
    """Chunks waiting for the writer at most (a chunk: up to 2^16 rows of one or more traces)."""

    def __init__(self, folder: Callable[..., Path], names: Iterable[str]):
        self._folder = folder
        self._path: Path | None = None
        self.names = sorted(names)
        self.schemas: dict[str, Any] = {}
        self.writers: dict[str, Any] = {}
        self.files: dict[str, Path] = {}
        self._queue: queue.Queue[dict[str, Any] | None] = queue.Queue(maxsize=self.QUEUE_CHUNKS)
        self._thread: threading.Thread | None = None
        self._failed: BaseException | None = None

    def __call__(self, tables: Mapping[str, Mapping[str, np.ndarray]]) -> None:
        if self._failed is not None:
            raise self._failed
        if self._path is None:
            self._path = self._folder()  # on this thread: the folder's manifest is not shared
        if self._thread is None:
            self._thread = threading.Thread(target=self._write, name="farlink-traces", daemon=True)
            self._thread.start()
        # The columns as they are (the core's vectors, moved): the writer makes the tables.
        self._queue.put({name: tables[name] for name in self.names})

    def _write(self) -> None:
        """The writer thread: each queued chunk into its files, until ``None``; after an error,
        the chunks still queued are dropped (the run is being stopped)."""
        import pyarrow as pa

        while (chunk := self._queue.get()) is not None:
            if self._failed is not None:
                continue
            try:
                for name, columns in chunk.items():
                    table = pa.table(dict(columns))
                    self.schemas.setdefault(name, table.schema)
                    if table.num_rows:
                        self._writer(name).write_table(table)
            except BaseException as err:  # handed to the core's thread, which raises it
                self._failed = err

    def _drain(self) -> None:
        """Waits until every queued chunk is written and the writer thread has ended."""
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()
            self._thread = None

    def _writer(self, name: str):
        import pyarrow.parquet as pq

        if name not in self.writers:
            if self._path is None:
                self._path = self._folder()
            path = self._path / f"{name}.parquet"
            schema = self.schemas[name]
            # The Arrow schema is not stored: Parquet's own types read back the same, and the
            # key-value metadata added at the end is then the schema's metadata, as in a file
            # written whole.
            self.writers[name] = pq.ParquetWriter(
                path, schema, store_schema=False, **parquet_options(schema)
            )
            self.files[name] = path
        return self.writers[name]

    def traces(self, empty: Mapping[str, Mapping[str, np.ndarray]]) -> DiskTraces:
        """The run's traces read back from the files (``empty``: the core's tables, which
        the stream emptied, for the traces not recorded), once every chunk is written."""
        self._drain()
        if self._failed is not None:
            raise self._failed
        return DiskTraces(self.files, empty)

    def close(self, provenance: Mapping[str, str]) -> None:
        """Finish every file (an empty one for a trace without rows) with ``provenance``."""
        self._drain()
        if self._failed is not None:
            raise self._failed
        for name in self.names:
            if name in self.schemas:
                self._writer(name)
        for writer in self.writers.values():
            writer.add_key_value_metadata(dict(provenance))
            writer.close()
        self.writers.clear()

    def abort(self) -> None:
        """Close and delete what was written: the run failed."""
        self._drain()
        for writer in self.writers.values():
            writer.close()
        self.writers.clear()
        for path in self.files.values():
            path.unlink(missing_ok=True)


class DiskTraces(Mapping):
    """A result's traces as a mapping (name → column → array) that reads each streamed trace
    back from its Parquet file when asked (nothing is kept in memory between two asks)."""

    def __init__(self, files: Mapping[str, Path], empty: Mapping[str, Mapping[str, np.ndarray]]):
        self._files = dict(files)
        self._empty = empty

    def file(self, name: str) -> Path | None:
        return self._files.get(name)

    def __getitem__(self, name: str) -> dict[str, np.ndarray]:
        if name not in self._files:
            return dict(self._empty[name])
        import pyarrow.parquet as pq

        table = pq.read_table(self._files[name])
        return {c: table.column(c).to_numpy() for c in table.column_names}

    def __iter__(self) -> Iterator[str]:
        return iter(self._empty)

    def __len__(self) -> int:
        return len(self._empty)


class DiskCaptures(Mapping):
    """A result's captures (tap → pcap bytes) written to files as the run went, read when
    asked."""

    def __init__(self, files: Mapping[str, str | Path]):
        self._files = {tap: Path(path) for tap, path in files.items()}

    def file(self, tap: str) -> Path | None:
        return self._files.get(tap)

    def __getitem__(self, tap: str) -> bytes:
        return self._files[tap].read_bytes()

    def __iter__(self) -> Iterator[str]:
        return iter(self._files)

    def __len__(self) -> int:
        return len(self._files)


def write_pcaps(result: Result, directory: str | Path) -> list[Path]:
    """Write each tap's capture as ``<directory>/<tap>.pcap`` (the name made safe) and, when the
    result has it, its address map beside it as ``<tap>.addresses.json``."""
    from farlink.sim import address_map_file_name, pcap_file_name

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for tap in sorted(result.pcap):
        path = out / pcap_file_name(tap)
        # A capture streamed to this very file while the run went is there already.
        if not (isinstance(result.pcap, DiskCaptures) and result.pcap.file(tap) == path):
            path.write_bytes(result.pcap[tap])
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
