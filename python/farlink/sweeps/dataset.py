"""A sweep's dataset: one Parquet file per run and the manifest, written and read back.

Each run becomes ``DIR/points/<run_key>.parquet`` (one row), written to a temporary name and
renamed once complete; ``DIR/manifest.json`` holds the sweep's definition. Reading: DuckDB over
the files (:func:`connect`, :func:`query`), a pyarrow table (:func:`load_results`), means and
Student-t intervals across seeds (:func:`summarize`). ``docs/sweeps.md`` gives the columns.
"""

from __future__ import annotations

import functools
import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from farlink.sweeps.sweep import (
    _INT_METRICS,
    DEFAULT_SUMMARY_METRICS,
    MANIFEST,
    METRICS,
    MODEL_COLUMN,
    POINTS,
    SWEEP_SCHEMA_VERSION,
    Sweep,
    SweepError,
)

__all__ = ["Summary", "connect", "load_results", "query", "summarize"]


def _arrow_type(values: Sequence[Any]):
    import pyarrow as pa

    if all(isinstance(v, bool) for v in values):
        return pa.bool_()
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return pa.int64()
    if all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
        return pa.float64()
    if all(isinstance(v, str) for v in values):
        return pa.string()
    return None  # mixed or structured values: stored as JSON text


def _identity_fields() -> list:
    import pyarrow as pa

    return [
        pa.field("run_key", pa.string()),
        pa.field("point_id", pa.string()),
        pa.field("replicate", pa.int32()),
    ]


def _metric_fields() -> list:
    import pyarrow as pa

    return [
        pa.field(metric, pa.int64() if metric in _INT_METRICS else pa.float64())
        for metric in METRICS
    ]


def _provenance_fields() -> list:
    import pyarrow as pa

    return [
        pa.field(MODEL_COLUMN, pa.float64()),
        pa.field("error", pa.string()),
        pa.field("seed", pa.uint64()),
        pa.field("seed_entropy", pa.uint64()),
        pa.field("seed_spawn_key", pa.list_(pa.uint32())),
        pa.field("farlink_version", pa.string()),
        pa.field("core_version", pa.string()),
        pa.field("git_revision", pa.string()),
        pa.field("host", pa.string()),
        pa.field("python_version", pa.string()),
        pa.field("schema_version", pa.int32()),
        pa.field("finished_at", pa.timestamp("ms", tz="UTC")),
    ]


def _schema(sweep: Sweep):
    import pyarrow as pa

    fields = _identity_fields()
    for axis, values in sweep.grid.items():
        fields.append(pa.field(axis, _arrow_type(values) or pa.string()))
    fields += _metric_fields()
    fields += [pa.field(metric, pa.float64()) for metric in sweep.extra_metrics]
    fields += _provenance_fields()
    metadata = {
        "farlink.schema_version": str(SWEEP_SCHEMA_VERSION),
        "farlink.sweep": sweep.name,
        "farlink.axes": json.dumps(sweep.axes),
    }
    return pa.schema(fields, metadata=metadata)


def _json_axes(sweep: Sweep) -> set[str]:
    """Axes whose values are of mixed or structured types, stored as JSON text."""
    return {axis for axis, values in sweep.grid.items() if _arrow_type(values) is None}


def _encode(schema, row: Mapping[str, Any]) -> bytes:
    """One row as the bytes of a Parquet file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pylist([dict(row)], schema=schema)
    buffer = pa.BufferOutputStream()  # in memory: far cheaper than pyarrow's own file handling
    pq.write_table(table, buffer, compression="none")
    return buffer.getvalue().to_pybytes()


@functools.lru_cache(maxsize=8)
def _schema_from(serialized: bytes):
    import pyarrow as pa

    return pa.ipc.read_schema(pa.py_buffer(serialized))


def _store(points_dir: Path, run_key: str, data: bytes) -> Path:
    """Write ``<run_key>.parquet`` complete or not at all (a temporary file, then a rename)."""
    final = points_dir / f"{run_key}.parquet"
    temporary = points_dir / f".{run_key}.{os.getpid()}.tmp"
    with open(temporary, "wb") as file:
        file.write(data)
    os.replace(temporary, final)
    return final


def _read_manifest(out: Path) -> dict[str, Any] | None:
    path = out / MANIFEST
    if not path.exists():
        return None
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise SweepError(f"{path}: cannot read the manifest ({err})") from None
    version = manifest.get("schema_version")
    if not isinstance(version, int) or version > SWEEP_SCHEMA_VERSION:
        raise SweepError(
            f"{path}: schema version {version!r}; this farlink reads up to {SWEEP_SCHEMA_VERSION}"
        )
    return manifest


def _write_json(path: Path, obj: Any) -> None:
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(json.dumps(obj, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(temporary, path)


def _existing(points_dir: Path) -> set[str]:
    return {path.stem for path in points_dir.glob("*.parquet")}


def _failures(out: Path, keys: Iterable[str] | None = None) -> list[dict[str, Any]]:
    """Rows of ``out`` whose ``error`` is set (all of them, or those among ``keys``)."""
    if not any((out / POINTS).glob("*.parquet")):
        return []
    con = connect(out)
    rows = con.execute(
        "SELECT * EXCLUDE (finished_at) FROM results WHERE error IS NOT NULL "
        "ORDER BY point_id, replicate"
    )
    names = [d[0] for d in rows.description]
    found = [dict(zip(names, values, strict=True)) for values in rows.fetchall()]
    wanted = None if keys is None else set(keys)
    return [row for row in found if wanted is None or row["run_key"] in wanted]


def connect(out: str | Path):
    """A DuckDB connection with a view ``results`` over the sweep's Parquet files."""
    import duckdb

    out = Path(out)
    manifest = _read_manifest(out)
    if manifest is None:
        raise SweepError(f"{out}: no {MANIFEST}: not a sweep directory")
    files = list((out / POINTS).glob("*.parquet"))
    if not files:
        raise SweepError(f"{out}: no results yet ({POINTS}/ is empty)")
    pattern = str(out.resolve() / POINTS / "*.parquet").replace("'", "''")
    con = duckdb.connect()
    con.execute(
        f"CREATE VIEW stored AS SELECT * FROM read_parquet('{pattern}', union_by_name = true)"
    )
    # Files of one dataset may come from different versions of this schema: union_by_name
    # gives nulls where some files lack a column, and a standard column that no file has (one
    # added after the dataset was written) is added here as nulls, so every reader of this
    # version finds every column it knows.
    present = {d[0] for d in con.execute("SELECT * FROM stored LIMIT 0").description}
    missing = [
        f"CAST(NULL AS {_SQL_TYPES[str(f.type)]}) AS {_quote(f.name)}"
        for f in [*_identity_fields(), *_metric_fields(), *_provenance_fields()]
        if f.name not in present
    ]
    con.execute(f"CREATE VIEW results AS SELECT {', '.join(['*', *missing])} FROM stored")
    return con


# DuckDB's names of the Arrow types of the standard columns.
_SQL_TYPES = {
    "string": "VARCHAR",
    "int32": "INTEGER",
    "int64": "BIGINT",
    "uint64": "UBIGINT",
    "double": "DOUBLE",
    "list<item: uint32>": "UINTEGER[]",
    "timestamp[ms, tz=UTC]": "TIMESTAMPTZ",
}


def query(out: str | Path, sql: str) -> tuple[list[str], list[tuple]]:
    """Run SQL over the view ``results``; column names and rows."""
    import duckdb

    con = connect(out)
    try:
        cursor = con.execute(sql)
    except duckdb.Error as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise SweepError(f"SQL: {first}") from None
    if cursor.description is None:
        return [], []
    return [d[0] for d in cursor.description], cursor.fetchall()


def load_results(out: str | Path):
    """The whole dataset as a ``pyarrow.Table`` (one row per point × seed), in grid order."""
    out = Path(out)
    con = connect(out)
    axes = list((_read_manifest(out) or {}).get("axes", []))
    order = ", ".join([*(_quote(a) for a in axes), "point_id", "replicate"])
    return con.sql(f"SELECT * FROM results ORDER BY {order}").to_arrow_table()


@dataclass
class Summary:
    """Mean and confidence interval across seeds, per point and metric."""

    axes: list[str]
    metrics: list[str]
    confidence: float
    points: list[dict[str, Any]]
    failures: list[dict[str, Any]]


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def summarize(
    out: str | Path, metrics: Sequence[str] | None = None, confidence: float = 0.95
) -> Summary:
    """Per point: runs, failures, and per metric n, mean and Student-t interval across seeds.

    The interval is mean ± t_{(1+c)/2, n-1} s / √n over the successful runs with a value (none
    with fewer than two). ``metrics`` defaults to the sweep's ``metrics`` or
    :data:`DEFAULT_SUMMARY_METRICS`, plus the model's column when it holds values.
    """
    from scipy import stats

    out = Path(out)
    con = connect(out)
    manifest = _read_manifest(out) or {}
    axes = list(manifest.get("axes", []))
    columns = {d[0] for d in con.execute("SELECT * FROM results LIMIT 0").description}
    chosen = _summary_metrics(con, manifest, metrics, columns)
    if not 0 < confidence < 1:
        raise SweepError(f"confidence: expected a number in (0, 1), got {confidence}")
    select = [f"any_value({_quote(a)}) AS {_quote(a)}" for a in axes]
    select += ["count(*) AS runs", "count(error) AS failed"]
    for i, metric in enumerate(chosen):
        ok = f"FILTER (WHERE error IS NULL AND {_quote(metric)} IS NOT NULL)"
        select += [
            f"count({_quote(metric)}) {ok} AS n{i}",
            f"avg({_quote(metric)}) {ok} AS mean{i}",
            f"stddev_samp({_quote(metric)}) {ok} AS sd{i}",
        ]
    order = ", ".join(_quote(a) for a in axes) or "point_id"
    rows = con.execute(
        f"SELECT {', '.join(select)}, point_id FROM results GROUP BY point_id ORDER BY {order}"
    ).fetchall()
    points = [_summary_point(row, axes, chosen, confidence, stats) for row in rows]
    failures = [
        {
            "params": {a: row.get(a) for a in axes},
            **{k: row[k] for k in ("replicate", "seed", "error")},
        }
        for row in _failures(out)
    ]
    return Summary(axes, chosen, confidence, points, failures)


def _summary_metrics(con, manifest, metrics, columns) -> list[str]:
    if metrics:
        chosen = list(metrics)
    else:
        listed = [m for m in manifest.get("metrics", []) if m in columns]
        chosen = listed or [m for m in DEFAULT_SUMMARY_METRICS if _has_values(con, m)]
        if MODEL_COLUMN not in chosen and _has_values(con, MODEL_COLUMN):
            chosen.append(MODEL_COLUMN)
    for metric in chosen:
        if metric not in columns:
            raise SweepError(
                f"--metric {metric}: no such column (columns: {', '.join(sorted(columns))})"
            )
    return chosen


def _has_values(con, column: str) -> bool:
    found = con.execute(f"SELECT count({_quote(column)}) FROM results").fetchone()
    return bool(found and found[0])


def _summary_point(row, axes, metrics, confidence, stats) -> dict[str, Any]:
    params = dict(zip(axes, row[: len(axes)], strict=True))
    runs, failed = row[len(axes)], row[len(axes) + 1]
    values = row[len(axes) + 2 : -1]
    result: dict[str, Any] = {
        "point_id": row[-1],
        "params": params,
        "runs": runs,
        "failed": failed,
        "metrics": {},
    }
    for i, metric in enumerate(metrics):
        n, mean, sd = values[3 * i : 3 * i + 3]
        half = None
        if n >= 2 and sd is not None:
            half = float(stats.t.ppf((1 + confidence) / 2, n - 1) * sd / math.sqrt(n))
        result["metrics"][metric] = {
            "n": n,
            "mean": mean,
            "half_width": half,
            "ci_low": None if half is None else mean - half,
            "ci_high": None if half is None else mean + half,
        }
    return result
