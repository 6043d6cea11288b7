"""Sweeps: many scenario × seed runs on a local process pool or a Dask cluster, kept as Parquet.

A sweep is a base scenario, axes (lists of values for ``farlink simulate`` options or ``--set``
paths, whose Cartesian product gives the points), options that apply to every point, a number
of seeds per point and the sweep's own seed. ``docs/sweeps.md`` describes the file format, the
command line and the dataset; this module holds the logic, ``farlink.cli`` only the command.

* Seeds form a tree (NumPy's ``SeedSequence``): a point's parent is
  ``SeedSequence(sweep_seed, spawn_key=<4 words of SHA-256 of the point's parameters>)`` and its
  replications are that parent's ``spawn(seeds)`` children; the core's u64 seed is the child's
  ``generate_state(1, uint64)``. A point's seeds therefore depend on the sweep seed, the point's
  parameters and the replication index only, never on the executor, the order of the axes or
  their values, or the number of workers.
* Each run becomes one Parquet file ``DIR/points/<run_key>.parquet`` (one row), written to a
  temporary name and renamed once complete, as soon as the run finishes. ``DIR/manifest.json``
  holds the sweep's definition. Running the same sweep again computes only the runs whose file
  is missing; a different definition in an existing ``DIR`` is refused unless ``force``.
* A run the core refuses (a scenario error) or that fails otherwise is kept as a row whose
  ``error`` is set; the other runs go on.
* For a single-flow scenario with a ``lossy_link``, every row also carries the prediction of the
  full PFTK model (``model_normalized_goodput``), evaluated for all points in one vectorised call.
"""

from __future__ import annotations

import concurrent.futures as cf
import copy
import datetime as dt
import functools
import hashlib
import itertools
import json
import math
import multiprocessing
import os
import platform
import shutil
import socket
import subprocess
import time
import tomllib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from farlink import units
from farlink.scenario import (
    RECOVERY_NAMES,
    ScenarioError,
    _parse_value,
    _steps,
    apply_overrides,
    check_document,
    load_scenario,
    resolve,
    set_path,
)

__all__ = [
    "DEFAULT_SUMMARY_METRICS",
    "METRICS",
    "MODEL_COLUMN",
    "OPTION_AXES",
    "SCHEMA_VERSION",
    "DaskCluster",
    "Lost",
    "Point",
    "ProcessPool",
    "SeedInfo",
    "Summary",
    "Sweep",
    "SweepAborted",
    "SweepError",
    "SweepReport",
    "Task",
    "connect",
    "load_results",
    "load_sweep",
    "model_normalized_goodput",
    "plan",
    "point_doc",
    "point_seeds",
    "query",
    "run_batch",
    "run_point",
    "run_sweep",
    "run_task",
    "summarize",
    "sweep_from_document",
    "sweep_from_options",
]

SCHEMA_VERSION = 1
"""Version of the dataset (columns and their meaning), in the ``schema_version`` column and the
manifest. Readers refuse a newer version than theirs."""

MANIFEST = "manifest.json"
POINTS = "points"
SUPERSEDED = "superseded"

# A run's budget: most events and most memory in bytes, None for the core's default.
Budget = tuple[int | None, int | None]
OPTION_AXES = ("tcp", "loss", "duration", "size")
"""``farlink simulate`` options that can be an axis or a fixed option (besides ``--set`` paths)."""

DROP_CAUSES = ("queue_overflow", "corruption", "arq_give_up", "call_drop", "reassembly_timeout")
METRICS = (
    "normalized_goodput",
    "goodput_bps",
    "delivered_bytes",
    "transfer_time_s",
    "retransmissions",
    "timeouts",
    *(f"drops_{cause}" for cause in DROP_CAUSES),
    "events",
    "sim_time_s",
    "wall_time_s",
)
"""The summary metrics every row carries (``farlink simulate --json``'s headline, drops flat)."""

DEFAULT_SUMMARY_METRICS = (
    "normalized_goodput",
    "goodput_bps",
    "transfer_time_s",
    "retransmissions",
    "timeouts",
)
MODEL_COLUMN = "model_normalized_goodput"

_INT_METRICS = {
    "delivered_bytes",
    "retransmissions",
    "timeouts",
    "events",
    *(f"drops_{cause}" for cause in DROP_CAUSES),
}
_IDENTITY = ("run_key", "point_id", "replicate")
_PROVENANCE = (
    "error",
    "seed",
    "seed_entropy",
    "seed_spawn_key",
    "farlink_version",
    "core_version",
    "git_revision",
    "host",
    "python_version",
    "schema_version",
    "finished_at",
)
_RESERVED = {*_IDENTITY, *METRICS, MODEL_COLUMN, *_PROVENANCE}
_SWEEP_FIELDS = ("name", "description", "scenario", "seeds", "seed", "metrics", "fixed", "grid")
BATCH_SECONDS = 0.05
"""Runs go to workers in batches of about this much work (0: one run per submission)."""

_U64 = 2**64
_MAX_SEEDS = 1_000_000


class SweepError(ValueError):
    """A sweep definition or directory that cannot be used; the message names the field."""


class SweepAborted(RuntimeError):
    """The executor failed as a whole (a worker pool broke, a scheduler went away).

    Every run finished before the failure is on disk; running the sweep again resumes it.
    """


# --------------------------------------------------------------------------------------------
# Definition


def _canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _sha256(obj: Any) -> str:
    return hashlib.sha256(_canonical(obj).encode()).hexdigest()


@dataclass(frozen=True)
class Point:
    """One combination of axis values (``params``: axis → value, in the axes' order)."""

    params: dict[str, Any]

    @property
    def point_id(self) -> str:
        """16 hex digits of SHA-256 of the parameters (independent of the axes' order)."""
        return _sha256(self.params)[:16]


@dataclass(frozen=True)
class SeedInfo:
    """The core's seed for one replication and where it comes from in the seed tree."""

    seed: int
    entropy: int
    spawn_key: tuple[int, ...]


@dataclass(frozen=True)
class Sweep:
    """A sweep definition: base scenario, axes, fixed options, seeds.

    ``grid`` maps each axis (an entry of :data:`OPTION_AXES` or a ``--set`` path) to its values;
    ``fixed`` maps options or paths to one value applied to every point; ``metrics`` lists the
    metrics ``results summary`` reports (standard names) and extra columns (paths into the run
    summary such as ``flows[0].min_rtt_s``). ``origins`` says where each axis or fixed option was
    given, for messages only.
    """

    scenario: dict[str, Any]
    source: str
    grid: dict[str, list[Any]]
    fixed: dict[str, Any] = field(default_factory=dict)
    seeds: int = 1
    seed: int = 1
    metrics: tuple[str, ...] = ()
    name: str = "sweep"
    origins: dict[str, str] = field(default_factory=dict, compare=False)

    @property
    def axes(self) -> list[str]:
        return list(self.grid)

    @property
    def extra_metrics(self) -> list[str]:
        """Metrics that are paths into the run summary, each stored as its own column."""
        return [m for m in self.metrics if m not in METRICS]

    def definition(self) -> dict[str, Any]:
        """Everything that determines the results, JSON-ready (the manifest records it)."""
        return {
            "name": self.name,
            "scenario_source": self.source,
            "scenario": self.scenario,
            "fixed": self.fixed,
            "grid": self.grid,
            "seeds": self.seeds,
            "seed": self.seed,
            "metrics": list(self.metrics),
        }

    def fingerprint(self) -> str:
        """Hash of what a single run depends on besides its point and replication index.

        The grid's values and the number of seeds are left out: a run of a sweep extended by
        more values or seeds is the same run, with the same file.
        """
        return _sha256(
            {
                "scenario": self.scenario,
                "fixed": self.fixed,
                "seed": self.seed,
                "metrics": self.extra_metrics,
            }
        )

    def points(self) -> list[Point]:
        """The Cartesian product of the axes, first axis slowest."""
        axes = self.axes
        return [
            Point(dict(zip(axes, combo, strict=True)))
            for combo in itertools.product(*self.grid.values())
        ]


def point_seeds(sweep_seed: int, params: Mapping[str, Any], count: int) -> list[SeedInfo]:
    """The seeds of a point's ``count`` replications, spawned from the sweep seed.

    The point's parent is ``SeedSequence(sweep_seed, spawn_key=words)`` with ``words`` the first
    four 32-bit words of SHA-256 of the parameters (canonical JSON, keys sorted); replication r
    is its r-th ``spawn`` child, spawn key ``words + (r,)``.
    """
    digest = hashlib.sha256(_canonical(dict(params)).encode()).digest()
    words = tuple(int.from_bytes(digest[i : i + 4], "little") for i in range(0, 16, 4))
    parent = np.random.SeedSequence(sweep_seed, spawn_key=words)
    return [
        SeedInfo(
            seed=int(child.generate_state(1, np.uint64)[0]),
            entropy=sweep_seed,
            spawn_key=tuple(int(k) for k in child.spawn_key),
        )
        for child in parent.spawn(count)
    ]


def _field_name(table: str, key: str) -> str:
    return f"{table}.{key}" if key.isidentifier() else f"{table}.{json.dumps(key)}"


def _check_axis(name: Any, where: str) -> str:
    if not isinstance(name, str) or not name.strip():
        raise SweepError(f"{where}: expected an option or a scenario path, got {name!r}")
    if name == "seed":
        raise SweepError(
            f"{where}: the seed is not an axis; give seeds = N replications and the sweep's seed"
        )
    if name in _RESERVED:
        raise SweepError(f"{where}: {name!r} is the name of a result column")
    if name not in OPTION_AXES:
        try:
            _steps(name)
        except ScenarioError:
            raise SweepError(
                f"{where}: {name!r} is neither a simulate option ({', '.join(OPTION_AXES)}) "
                "nor a scenario path like links[1].queue_pkts"
            ) from None
    return name


def _check_loss(value: Any, where: str) -> float:
    if isinstance(value, str):
        try:
            number = float(value.removesuffix("%")) / (100 if value.endswith("%") else 1)
        except ValueError:
            number = math.nan
    elif isinstance(value, int | float) and not isinstance(value, bool):
        number = float(value)
    else:
        number = math.nan
    if not 0 <= number < 1:
        raise SweepError(f"{where}: expected a packet error rate in [0, 1), got {value!r}")
    return number


def _check_quantity(
    value: Any, where: str, parse: Callable[[str], float], unit: str, forms: str
) -> str:
    if isinstance(value, int | float) and not isinstance(value, bool):
        text = f"{value}{unit}"
    elif isinstance(value, str):
        text = value
    else:
        raise SweepError(f"{where}: expected {forms}, got {value!r}")
    try:
        parse(text)
    except units.UnitError as err:
        raise SweepError(f"{where}: {err}") from None
    return text


def _check_value(axis: str, value: Any, where: str) -> Any:
    """A value of an option checked and normalised (duration and size become strings)."""
    if axis == "tcp":
        if not isinstance(value, str) or not value:
            raise SweepError(
                f"{where}: expected a TCP name ({', '.join(RECOVERY_NAMES)} or a congestion "
                f"controller), got {value!r}"
            )
        return value
    if axis == "loss":
        return _check_loss(value, where)
    if axis == "duration":
        return _check_quantity(value, where, units.parse_duration_s, "s", units.DURATION_FORMS)
    if axis == "size":
        return _check_quantity(value, where, units.parse_size_bytes, "", units.SIZE_FORMS)
    try:
        _canonical(value)
    except (TypeError, ValueError):  # a TOML date or time: nothing in a scenario holds one
        raise SweepError(f"{where}: {value!r} is not a value a scenario can hold") from None
    return value


def _check_grid(grid: Any, where: str, origins: dict[str, str]) -> dict[str, list[Any]]:
    if not isinstance(grid, Mapping):
        raise SweepError(f"{where}: expected a table of axis = [values]")
    checked: dict[str, list[Any]] = {}
    for axis, values in grid.items():
        name = _field_name(where, axis) if where == "grid" else f"{where} {axis}"
        _check_axis(axis, name)
        if not isinstance(values, list) or not values:
            raise SweepError(f"{name}: expected a non-empty list of values, got {values!r}")
        normalised = [_check_value(axis, v, f"{name}[{i}]") for i, v in enumerate(values)]
        seen: set[str] = set()
        for i, value in enumerate(normalised):
            key = _canonical(value)
            if key in seen:
                raise SweepError(f"{name}[{i}]: {value!r} appears twice")
            seen.add(key)
        checked[axis] = normalised
        origins[axis] = name
    return checked


def _check_fixed(fixed: Any, where: str, origins: dict[str, str]) -> dict[str, Any]:
    if not isinstance(fixed, Mapping):
        raise SweepError(f"{where}: expected a table of option = value")
    checked = {}
    for key, value in fixed.items():
        name = _field_name(where, key)
        _check_axis(key, name)
        checked[key] = _check_value(key, value, name)
        origins[key] = name
    return checked


def _check_metrics(metrics: Any, where: str) -> tuple[str, ...]:
    if not isinstance(metrics, list):
        raise SweepError(f"{where}: expected a list of metric names, got {metrics!r}")
    for i, metric in enumerate(metrics):
        name = f"{where}[{i}]"
        if not isinstance(metric, str):
            raise SweepError(f"{name}: expected a metric name, got {metric!r}")
        if metric in METRICS or metric == MODEL_COLUMN:
            continue
        standard = ", ".join(METRICS)
        if "." not in metric and "[" not in metric:
            raise SweepError(
                f"{name}: unknown metric {metric!r} (standard: {standard}; or a path into the "
                "run summary such as flows[0].min_rtt_s)"
            )
        try:
            _steps(metric)
        except ScenarioError:
            raise SweepError(f"{name}: {metric!r} is not a path like flows[0].min_rtt_s") from None
    return tuple(metrics)


def _check_int(value: Any, where: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value < high:
        raise SweepError(f"{where}: expected an integer in [{low}, {high}), got {value!r}")
    return value


def _resolve_scenario(value: Any, base_dir: Path, where: str) -> tuple[dict[str, Any], str]:
    if isinstance(value, Mapping):
        try:
            return check_document(copy.deepcopy(dict(value))), "inline"
        except ScenarioError as err:
            raise SweepError(f"{where}.{err}") from None
    if not isinstance(value, str) or not value:
        raise SweepError(
            f"{where}: expected a preset name, a scenario file or an inline [scenario] table"
        )
    candidate = base_dir / value
    target = candidate if candidate.exists() or value.endswith(".toml") else value
    try:
        return check_document(load_scenario(target)), str(target)
    except ScenarioError as err:
        raise SweepError(f"{where}: {err}") from None


def sweep_from_document(
    doc: Mapping[str, Any], *, base_dir: Path = Path("."), where: str = "sweep"
) -> Sweep:
    """A :class:`Sweep` from a parsed sweep file (``docs/sweeps.md``); errors name the field.

    ``base_dir`` is where a relative ``scenario`` path is looked up (the sweep file's folder).
    """
    for key in doc:
        if key not in _SWEEP_FIELDS:
            raise SweepError(f"{where}: unknown field {key!r} (fields: {', '.join(_SWEEP_FIELDS)})")
    if "scenario" not in doc:
        raise SweepError(
            f"{where}: scenario: missing (a preset name, a scenario file or a [scenario] table)"
        )
    try:
        return _build_sweep(doc, base_dir)
    except SweepError as err:
        raise SweepError(f"{where}: {err}") from None


def _build_sweep(doc: Mapping[str, Any], base_dir: Path) -> Sweep:
    scenario, source = _resolve_scenario(doc["scenario"], base_dir, "scenario")
    origins: dict[str, str] = {}
    grid = _check_grid(doc.get("grid", {}), "grid", origins)
    fixed = _check_fixed(doc.get("fixed", {}), "fixed", origins)
    for key in fixed:
        if key in grid:
            raise SweepError(f"{_field_name('fixed', key)}: also an axis under [grid]")
    name = doc.get("name", scenario.get("name") or "sweep")
    if not isinstance(name, str) or not name or "/" in name:
        raise SweepError(f"name: expected a name without '/', got {name!r}")
    if not isinstance(doc.get("description", ""), str):
        raise SweepError("description: expected a string")
    sweep = Sweep(
        scenario=scenario,
        source=source,
        grid=grid,
        fixed=fixed,
        seeds=_check_int(doc.get("seeds", 1), "seeds", 1, _MAX_SEEDS + 1),
        seed=_check_int(doc.get("seed", 1), "seed", 0, _U64),
        metrics=_check_metrics(doc.get("metrics", []), "metrics"),
        name=name,
        origins=origins,
    )
    _check_columns(sweep)
    return sweep


def _check_columns(sweep: Sweep) -> None:
    for metric in sweep.extra_metrics:
        if metric in sweep.grid:
            raise SweepError(f"metrics: {metric!r} is also an axis")


def load_sweep(path: str | Path) -> Sweep:
    """Read a sweep file (TOML, ``docs/sweeps.md``)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise SweepError(f"{path}: cannot read the sweep file ({err.strerror})") from None
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise SweepError(f"{path}: {err}") from None
    return sweep_from_document(doc, base_dir=path.parent, where=str(path))


def is_sweep_file(path: str | Path) -> bool:
    """Whether ``path`` is a TOML file that defines a sweep rather than a scenario."""
    path = Path(path)
    if not path.is_file():
        return False
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return False
    return "links" not in doc and ("grid" in doc or "scenario" in doc)


def _split_values(text: str) -> list[str]:
    """Split ``v1,v2,...`` at commas outside brackets, braces and quotes."""
    parts, depth, quote, current = [], 0, "", []
    for char in text:
        if quote:
            quote = "" if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
            continue
        current.append(char)
    parts.append("".join(current).strip())
    return parts


def parse_grid_option(text: str) -> tuple[str, list[Any]]:
    """``AXIS=v1,v2,...`` from the command line; each value is read as a TOML value or text."""
    axis, sep, values = text.partition("=")
    axis = axis.strip()
    if not sep or not axis or not values.strip():
        raise SweepError(f"--grid {text!r}: expected AXIS=v1,v2,... (e.g. loss=0.001,0.01)")
    parsed = []
    for part in _split_values(values):
        if not part:
            raise SweepError(f"--grid {axis}: an empty value in {values!r}")
        parsed.append(_parse_value(part))
    return axis, parsed


def sweep_from_options(
    base: str,
    *,
    grid: Sequence[str] = (),
    fixed: Mapping[str, Any] | None = None,
    sets: Sequence[str] = (),
    seeds: int | None = None,
    seed: int | None = None,
    metrics: Sequence[str] = (),
) -> Sweep:
    """The sweep of ``farlink sweep BASE --grid AXIS=v1,... [options]``.

    ``base`` is a sweep file (the options then add axes, fixed options and metrics to it and
    may replace its seeds and seed) or a scenario file or preset. ``fixed`` holds plain options
    (``tcp``, ``loss``, ``duration``, ``size``) and ``sets`` ``path=value`` assignments, applied
    to every point.
    """
    if is_sweep_file(base):
        start = load_sweep(base)
    else:
        try:
            scenario = check_document(load_scenario(base))
        except ScenarioError as err:
            raise SweepError(f"BASE: {err}") from None
        start = Sweep(scenario=scenario, source=base, grid={}, name=_default_name(scenario, base))
    origins = dict(start.origins)
    axes = dict(start.grid)
    for text in grid:
        axis, values = parse_grid_option(text)
        if axis in axes or axis in start.fixed:
            kind = "an axis" if axis in axes else "a fixed option"
            raise SweepError(f"--grid {axis}: already {kind} ({origins.get(axis, base)})")
        axes.update(_check_grid({axis: values}, "--grid", origins))
    extra = {k: v for k, v in (fixed or {}).items() if v is not None}
    for assignment in sets:
        path, sep, value = assignment.partition("=")
        if not sep or not path.strip():
            raise SweepError(f"--set {assignment!r}: expected path=value")
        extra[path.strip()] = _parse_value(value.strip())
    fixed_all = dict(start.fixed)
    for key, value in extra.items():
        where = f"--{key}" if key in OPTION_AXES else f"--set {key}"
        _check_axis(key, where)
        if key in axes:
            raise SweepError(f"{where}: {key!r} is an axis of the sweep ({origins[key]})")
        fixed_all[key] = _check_value(key, value, where)
        origins[key] = where
    sweep = Sweep(
        scenario=start.scenario,
        source=start.source,
        grid=axes,
        fixed=fixed_all,
        seeds=start.seeds if seeds is None else _check_int(seeds, "--seeds", 1, _MAX_SEEDS + 1),
        seed=start.seed if seed is None else _check_int(seed, "--seed", 0, _U64),
        metrics=start.metrics + _check_metrics(list(metrics), "--metric"),
        name=start.name,
        origins=origins,
    )
    _check_columns(sweep)
    return sweep


def _default_name(scenario: Mapping[str, Any], base: str) -> str:
    name = scenario.get("name")
    return str(name) if isinstance(name, str) and name else Path(base).stem or "sweep"


def _strip_option(message: str) -> str:
    """``--set links[9].x: no list element`` → ``no list element`` (the caller names the field)."""
    if message.startswith("--"):
        _, sep, rest = message.partition(": ")
        return rest if sep else message
    return message


def point_doc(sweep: Sweep, params: Mapping[str, Any], seed: int | None = None) -> dict[str, Any]:
    """The scenario document of one point: fixed options, then the point's values, then the seed.

    Options apply in ``farlink simulate``'s order (tcp, loss, duration, size), ``--set`` paths
    after them in the order given (fixed ones first). Traces and captures are switched off: a
    sweep keeps summaries only, and they are the same either way.
    """
    values = {**sweep.fixed, **params}
    options = {axis: values[axis] for axis in OPTION_AXES if axis in values}
    try:
        doc = apply_overrides(sweep.scenario, **options)  # one copy of the document
    except ScenarioError:
        for axis, value in options.items():  # find the option to blame
            _edit(sweep, axis, apply_overrides, sweep.scenario, **{axis: value})
        raise
    for path, value in values.items():
        if path not in OPTION_AXES:
            _edit(sweep, path, set_path, doc, path, copy.deepcopy(value))
    doc["trace"] = {}
    doc["pcap"] = []
    if seed is not None:
        doc["seed"] = seed
    return doc


def _edit(sweep: Sweep, axis: str, edit: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
    """Apply one edit; a refusal becomes a :class:`SweepError` naming where ``axis`` was given."""
    try:
        edit(*args, **kwargs)
    except ScenarioError as err:
        where = sweep.origins.get(axis, axis)
        raise SweepError(f"{where}: {_strip_option(str(err))}") from None


# --------------------------------------------------------------------------------------------
# The closed-form engine beside the simulation


@dataclass(frozen=True)
class PftkInputs:
    """What the full PFTK model needs for one point, read from its scenario document."""

    p: float
    rtt_s: float
    t0_s: float
    b: float
    wmax_pkts: float
    payload_bytes: float
    wire_bytes: float
    bottleneck_bps: float


def pftk_inputs(doc: Mapping[str, Any]) -> PftkInputs | None:
    """The model's inputs for a single-flow scenario with a ``lossy_link``, else None.

    Every input is read from the core's resolved scenario (:func:`farlink.scenario.resolve`),
    never derived here: p is the lossy link direction's ``packet_loss_rate`` (the mean rate of
    its loss model per packet), the RTT the flow's ``base_rtt_s`` (propagation both ways, one
    full-sized data packet on every data hop and its ACK on every ACK hop), T0 the flow's
    ``min_rto_s``, b 2 with delayed ACKs and 1 without, W_max the receive buffer in segments of
    payload (``payload_bytes``: the MSS less the timestamps option), and the bottleneck the
    smallest rate on the data path. The model applies to plain links only: a route through a
    bundle (call drops, ARQ) or a radio hop gives None, and so does a scenario the core refuses
    (its run will say why).
    """
    flows = doc.get("flows") or []
    if len(flows) != 1 or not doc.get("lossy_link"):
        return None
    try:
        resolved = resolve(dict(doc))
    except ValueError:  # the core's ScenarioError
        return None
    return pftk_inputs_resolved(resolved)


def pftk_inputs_resolved(resolved: Mapping[str, Any]) -> PftkInputs | None:
    """:func:`pftk_inputs` of a scenario already resolved by the core."""
    lossy = resolved.get("lossy_link")
    if len(resolved["flows"]) != 1 or lossy is None:
        return None
    flow = resolved["flows"][0]
    links = resolved["links"]
    if any(links[hop["index"]]["link_type"] != "link" for hop in flow["route"]["data"]):
        return None
    tcp = flow["tcp"]
    return PftkInputs(
        p=links[lossy["index"]][lossy["direction"]]["packet_loss_rate"],
        rtt_s=flow["base_rtt_s"],
        t0_s=tcp["min_rto_s"],
        b=2.0 if tcp["delayed_ack"] else 1.0,
        wmax_pkts=tcp["receive_buffer_bytes"] / tcp["payload_bytes"],
        payload_bytes=tcp["payload_bytes"],
        wire_bytes=tcp["data_packet_bytes"],
        bottleneck_bps=flow["bottleneck_bps"],
    )


def model_normalized_goodput(docs: Sequence[Mapping[str, Any]]) -> np.ndarray:
    """The full PFTK model's normalised goodput for each scenario; NaN where it does not apply.

    For every point in ONE vectorised call of :func:`farlink.models.pftk_full_throughput`:
    B = PFTK(p, RTT, T0, b, W_max) segments/s (B = W_max/RTT when p = 0), and

        model_normalized_goodput = min(B s, C s / (s + h)) / C

    with s the payload bytes per segment, h the header bytes (s + h = MSS + 40 on the wire)
    and C the bottleneck rate in bytes/s: the simulator's ``normalized_goodput`` (payload
    bit/s over the bottleneck's bit rate), capped at the payload share of a full link.
    """
    from farlink.models import pftk_full_throughput

    inputs = [pftk_inputs(doc) for doc in docs]
    usable = [i for i, x in enumerate(inputs) if x is not None and 0 <= x.p < 1]
    out = np.full(len(docs), np.nan)
    if not usable:
        return out
    cols = {
        name: np.array([getattr(inputs[i], name) for i in usable], dtype=np.float64)
        for name in PftkInputs.__dataclass_fields__
    }
    lossless = cols["p"] <= 0
    rate = pftk_full_throughput(
        np.where(lossless, 0.5, cols["p"]),
        cols["rtt_s"],
        cols["t0_s"],
        cols["b"],
        cols["wmax_pkts"],
    )
    rate = np.where(lossless, cols["wmax_pkts"] / cols["rtt_s"], rate)
    capacity = cols["bottleneck_bps"] / 8
    goodput = np.minimum(
        rate * cols["payload_bytes"], capacity * cols["payload_bytes"] / cols["wire_bytes"]
    )
    out[usable] = goodput / capacity
    return out


# --------------------------------------------------------------------------------------------
# One run (on a worker)


@functools.cache
def _git_revision() -> str | None:
    """``git rev-parse HEAD`` of the repository farlink is imported from, or None."""
    try:
        done = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    revision = done.stdout.strip()
    return revision if done.returncode == 0 and revision else None


@functools.cache
def _worker_provenance() -> dict[str, Any]:
    from farlink import __version__

    return {
        "farlink_version": __version__,
        "git_revision": _git_revision(),
        "host": socket.gethostname(),
        "python_version": platform.python_version(),
    }


def _lookup(summary: Any, path: str) -> float | None:
    # Result documents before schema 2 nested the aggregate; a sweep file written then still
    # names `aggregate.<figure>`, now at the top level.
    path = path.removeprefix("aggregate.")
    node = summary
    for step in _steps(path):
        if isinstance(step, int) and isinstance(node, list) and -len(node) <= step < len(node):
            node = node[step]
        elif isinstance(node, dict) and str(step) in node:
            node = node[str(step)]
        else:
            return None
    if isinstance(node, bool):
        return float(node)
    return float(node) if isinstance(node, int | float) else None


def run_point(
    scenario_json: str, extra_metrics: Sequence[str] = (), budget: Budget = (None, None)
) -> dict[str, Any]:
    """Run one scenario on the core; the metrics and provenance of its row, or its error.

    ``budget`` is the run budget, (events, memory bytes), None for the core's default; a run
    refused on it fails with ``BudgetError``. The run records no trace (docs/traces.md). Never
    raises for a run that fails: the row's ``error`` holds ``"<kind>: <message>"``.
    """
    from farlink import _core
    from farlink.result_schema import sim_document
    from farlink.results import Result
    from farlink.sim import headline
    from farlink.traces import TRACE_NAMES

    row: dict[str, Any] = {"error": None, "core_version": None, **_worker_provenance()}
    # A row is made of the summary: the run records no trace, whatever the scenario switches
    # on (traces only observe, so the summary is the same), and its memory stays bounded. The
    # trace table stays for the core to validate.
    started = time.perf_counter()
    try:
        doc = json.loads(scenario_json)
        if isinstance(doc, dict) and isinstance(doc.get("trace"), dict):
            doc["trace"] = {**doc["trace"], "all": False, **dict.fromkeys(TRACE_NAMES, False)}
            scenario_json = json.dumps(doc)
        raw = _core.run_scenario(scenario_json, max_events=budget[0], max_memory_bytes=budget[1])
    except ScenarioError as err:
        return {**row, "error": f"ScenarioError: {err}"}
    except Exception as err:  # the run fails, the sweep goes on; the row says why
        return {**row, "error": f"{type(err).__name__}: {err}"}
    wall_time_s = time.perf_counter() - started
    summary = sim_document(json.loads(raw["summary"]), scenario=None, wall_time_s=wall_time_s)
    top = headline(Result(summary=summary))
    drops = top.pop("drops")
    row.update(top)
    row.update({f"drops_{cause}": drops.get(cause, 0) for cause in DROP_CAUSES})
    row.update({path: _lookup(summary, path) for path in extra_metrics})
    row["core_version"] = summary.get("core_version")
    return row


# --------------------------------------------------------------------------------------------
# Executors


def _refill(pending: dict, calls: Iterator, submit: Callable, window: int) -> list:
    """Submit calls until ``window`` are pending; the new futures."""
    new = []
    while len(pending) < window:
        item = next(calls, None)
        if item is None:
            break
        key, args = item
        future = submit(args)
        pending[future] = key
        new.append(future)
    return new


class ProcessPool:
    """The default executor: a local pool of worker processes, one per core unless told.

    Workers start from a fork server that has imported farlink already, so a pool starts in a
    fraction of a second and no worker inherits the caller's threads.
    """

    def __init__(self, workers: int | None = None):
        self.workers = workers or os.cpu_count() or 1

    def describe(self) -> str:
        return f"process pool, {self.workers} worker{'s' * (self.workers != 1)}"

    def run(self, fn: Callable, calls: Iterator[tuple[Any, tuple]]) -> Iterator[tuple[Any, Any]]:
        """Call ``fn(*args)`` for each (key, args), yielding (key, result) as each returns."""
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(["farlink.sweep"])
        pool = cf.ProcessPoolExecutor(self.workers, mp_context=context)

        def submit(args: tuple) -> cf.Future:
            return pool.submit(fn, *args)

        pending: dict[cf.Future, Any] = {}
        try:
            _refill(pending, calls, submit, 2 * self.workers)
            while pending:
                done, _ = cf.wait(pending, return_when=cf.FIRST_COMPLETED)
                for future in done:
                    key = pending.pop(future)
                    try:
                        row = future.result()
                    except cf.process.BrokenProcessPool as err:
                        raise SweepAborted(f"a worker process died ({err})") from None
                    yield key, row
                _refill(pending, calls, submit, 2 * self.workers)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)


class DaskCluster:
    """Runs the sweep on Dask: a client given, a scheduler's address, or a new LocalCluster.

    ``DaskCluster(local_workers=4)`` starts a ``distributed.LocalCluster`` of four
    single-threaded workers (processes unless ``processes=False``) for the sweep and closes it
    afterwards; ``DaskCluster(address="tcp://host:8786")`` joins a running scheduler (on SLURM,
    see ``docs/sweeps.md``). Workers need farlink installed; results come back to this process,
    which alone writes the Parquet files, so no shared file system is needed.
    """

    def __init__(
        self,
        *,
        address: str | None = None,
        local_workers: int | None = None,
        client: Any = None,
        processes: bool = True,
    ):
        self.address = address
        self.local_workers = local_workers
        self.client = client
        self.processes = processes

    def describe(self) -> str:
        if self.client is not None:
            return "Dask client"
        if self.address is not None:
            return f"Dask scheduler {self.address}"
        return f"Dask LocalCluster, {self.local_workers or 1} workers"

    def _connect(self) -> tuple[Any, Any]:
        from distributed import Client, LocalCluster

        if self.client is not None:
            return self.client, None
        if self.address is not None:
            where = {"address": self.address}
            if Path(self.address).is_file():  # a scheduler file, as `dask scheduler` writes
                where = {"scheduler_file": self.address}
            try:
                return Client(**where, timeout="30s"), None
            except (OSError, TimeoutError) as err:
                raise SweepError(
                    f"--dask: cannot reach the scheduler {self.address}: {err}"
                ) from None
        options = {"host": "127.0.0.1"} if self.processes else {}
        cluster = LocalCluster(
            n_workers=self.local_workers or 1,
            threads_per_worker=1,
            processes=self.processes,
            dashboard_address=None,
            **options,
        )
        return Client(cluster), cluster

    def run(self, fn: Callable, calls: Iterator[tuple[Any, tuple]]) -> Iterator[tuple[Any, Any]]:
        """Call ``fn(*args)`` for each (key, args), yielding (key, result) as each returns.

        A call that killed the workers it was given to yields a :class:`Lost` instead.
        """
        from distributed import as_completed

        client, cluster = self._connect()

        def submit(args: tuple) -> Any:
            return client.submit(fn, *args, pure=False)

        try:
            window = 2 * max(1, sum(client.nthreads().values()))
            pending: dict[Any, Any] = {}
            flow = as_completed(_refill(pending, calls, submit, window))
            for future in flow:
                key = pending.pop(future)
                row = _dask_outcome(future)
                future.release()
                for new in _refill(pending, calls, submit, window):
                    flow.add(new)
                yield key, row
        finally:
            if client is not self.client:
                client.close()
            if cluster is not None:
                cluster.close()


@dataclass(frozen=True)
class Lost:
    """A call that an executor could not complete, and why."""

    error: str


def _dask_outcome(future: Any) -> Any:
    from distributed import KilledWorker

    try:
        return future.result()
    except KilledWorker as err:  # this call took down the workers it was given to; record it
        return Lost(f"KilledWorker: {err}")
    except Exception as err:
        raise SweepAborted(f"the Dask cluster failed: {type(err).__name__}: {err}") from None


# --------------------------------------------------------------------------------------------
# Planning, running, writing


@dataclass(frozen=True)
class Task:
    """One run: a point's parameters, its replication index and seed, and its file's key."""

    run_key: str
    point_id: str
    replicate: int
    params: dict[str, Any]
    seed: SeedInfo
    model: float | None


def plan(sweep: Sweep) -> list[Task]:
    """Every run of the sweep, points in grid order, replications in index order.

    Builds each point's scenario document once (so a path or option that cannot be applied is
    a :class:`SweepError` before anything runs) and evaluates the closed-form model for all
    points in one call.
    """
    points = sweep.points()
    model = model_normalized_goodput([point_doc(sweep, point.params) for point in points])
    fingerprint = sweep.fingerprint()
    tasks = []
    for point, value in zip(points, model, strict=True):
        for replicate, seed in enumerate(point_seeds(sweep.seed, point.params, sweep.seeds)):
            tasks.append(
                Task(
                    run_key=_sha256([fingerprint, point.params, replicate])[:24],
                    point_id=point.point_id,
                    replicate=replicate,
                    params=point.params,
                    seed=seed,
                    model=None if np.isnan(value) else float(value),
                )
            )
    return tasks


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
        "farlink.schema_version": str(SCHEMA_VERSION),
        "farlink.sweep": sweep.name,
        "farlink.axes": json.dumps(sweep.axes),
    }
    return pa.schema(fields, metadata=metadata)


def _json_axes(sweep: Sweep) -> set[str]:
    """Axes whose values are of mixed or structured types, stored as JSON text."""
    return {axis for axis, values in sweep.grid.items() if _arrow_type(values) is None}


def _identity(sweep: Sweep, json_axes: set[str], task: Task) -> dict[str, Any]:
    """The columns of a run's row that the driver knows before it runs."""
    row: dict[str, Any] = {"run_key": task.run_key, "point_id": task.point_id}
    row["replicate"] = task.replicate
    for axis in sweep.axes:
        value = task.params[axis]
        row[axis] = _canonical(value) if axis in json_axes else value
    row[MODEL_COLUMN] = task.model
    row["seed"] = task.seed.seed
    row["seed_entropy"] = task.seed.entropy
    row["seed_spawn_key"] = list(task.seed.spawn_key)
    return row


def _full_row(
    identity: Mapping[str, Any], outcome: Mapping[str, Any], extra_metrics: Sequence[str]
) -> dict[str, Any]:
    row = dict(identity)
    for name in (*METRICS, *extra_metrics, "error", "core_version"):
        row[name] = outcome.get(name)
    for name in ("farlink_version", "git_revision", "host", "python_version"):
        row[name] = outcome.get(name)
    row["schema_version"] = SCHEMA_VERSION
    row["finished_at"] = dt.datetime.now(dt.UTC)
    return row


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


def run_task(
    scenario_json: str,
    extra_metrics: Sequence[str],
    identity: Mapping[str, Any],
    schema_bytes: bytes,
    budget: Budget = (None, None),
) -> tuple[str | None, bytes]:
    """Run one run on a worker: its error (or None) and its row encoded as a Parquet file.

    The row is encoded here so that the workers share that work; the caller only writes the
    bytes to disk, so no file system need be shared with the workers.
    """
    outcome = run_point(scenario_json, extra_metrics, budget)
    row = _full_row(identity, outcome, extra_metrics)
    return outcome["error"], _encode(_schema_from(schema_bytes), row)


def run_batch(calls: Sequence[tuple]) -> tuple[list[tuple[str | None, bytes]], float]:
    """:func:`run_task` for each call of a batch; the results and the batch's wall time."""
    started = time.perf_counter()
    results = [run_task(*call) for call in calls]
    return results, time.perf_counter() - started


class _Batches:
    """Groups calls into batches of about ``target_s`` of work each, so that runs of a few
    milliseconds do not pay a submission each; starts with single runs and adapts to the mean
    time of the runs done so far. A killed sweep loses at most the batches in flight.
    """

    def __init__(self, calls: Iterator[tuple[Task, tuple]], target_s: float = 0.05, most: int = 64):
        self.calls, self.target_s, self.most = calls, target_s, most
        self.size, self.runs, self.seconds = 1, 0, 0.0

    def __iter__(self) -> _Batches:
        return self

    def __next__(self) -> tuple[list[Task], tuple]:
        batch = list(itertools.islice(self.calls, self.size))
        if not batch:
            raise StopIteration
        return [task for task, _ in batch], ([args for _, args in batch],)

    def observe(self, runs: int, seconds: float) -> None:
        self.runs += runs
        self.seconds += seconds
        mean = self.seconds / self.runs
        self.size = max(1, min(self.most, round(self.target_s / mean) if mean > 0 else self.most))


def _store(points_dir: Path, run_key: str, data: bytes) -> Path:
    """Write ``<run_key>.parquet`` complete or not at all (a temporary file, then a rename)."""
    final = points_dir / f"{run_key}.parquet"
    temporary = points_dir / f".{run_key}.{os.getpid()}.tmp"
    with open(temporary, "wb") as file:
        file.write(data)
    os.replace(temporary, final)
    return final


@dataclass
class SweepReport:
    """What a call of :func:`run_sweep` did and what the directory now holds."""

    out: Path
    points: int
    runs: int
    reused: int
    computed: int
    failures: list[dict[str, Any]]
    wall_time_s: float
    executor: str

    @property
    def failed(self) -> int:
        return len(self.failures)


def _read_manifest(out: Path) -> dict[str, Any] | None:
    path = out / MANIFEST
    if not path.exists():
        return None
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise SweepError(f"{path}: cannot read the manifest ({err})") from None
    version = manifest.get("schema_version")
    if not isinstance(version, int) or version > SCHEMA_VERSION:
        raise SweepError(
            f"{path}: schema version {version!r}; this farlink reads up to {SCHEMA_VERSION}"
        )
    return manifest


def _write_json(path: Path, obj: Any) -> None:
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(json.dumps(obj, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(temporary, path)


def _definition_digest(definition: Mapping[str, Any]) -> str:
    """What identifies a sweep: its definition less its name and where the scenario was read."""
    return _sha256({k: v for k, v in definition.items() if k not in ("name", "scenario_source")})


def _differences(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    return [key for key in new if _canonical(old.get(key)) != _canonical(new[key])]


def _prepare_directory(out: Path, sweep: Sweep, tasks: Sequence[Task], force: bool) -> None:
    """Check ``out`` against the sweep; with ``force``, move aside what no longer belongs."""
    manifest = _read_manifest(out)
    definition = sweep.definition()
    digest = _definition_digest(definition)
    if manifest is None and out.exists() and any(out.iterdir()) and not force:
        raise SweepError(
            f"{out}: exists and is not a sweep directory (no {MANIFEST}); choose another --out "
            "or use --force"
        )
    if manifest is not None and manifest.get("definition_sha256") != digest and not force:
        changed = ", ".join(_differences(manifest.get("definition", {}), definition))
        raise SweepError(
            f"{out}: holds a different sweep (changed: {changed or 'definition'}); rerun the "
            "same definition to resume, choose another --out, or use --force to run this one "
            f"here (results that are not part of it move to {SUPERSEDED}/)"
        )
    if force and (manifest is None or manifest.get("definition_sha256") != digest):
        _supersede(out, {task.run_key for task in tasks})
    points_dir = out / POINTS
    points_dir.mkdir(parents=True, exist_ok=True)
    for stale in points_dir.glob(".*.tmp"):  # left by a run that was killed while writing
        stale.unlink(missing_ok=True)
    if manifest is None or manifest.get("definition_sha256") != digest:
        _write_json(out / MANIFEST, _manifest(sweep, digest, len(tasks)))


def _supersede(out: Path, keep: set[str]) -> None:
    """Move the old manifest and the results not in ``keep`` to ``superseded/<time>/``."""
    moving = [path for path in (out / POINTS).glob("*.parquet") if path.stem not in keep]
    manifest = out / MANIFEST
    if not moving and not manifest.exists():
        return
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%fZ")
    target = out / SUPERSEDED / stamp
    (target / POINTS).mkdir(parents=True)
    if manifest.exists():
        shutil.move(manifest, target / MANIFEST)
    for path in sorted(moving):
        shutil.move(path, target / POINTS / path.name)


def _manifest(sweep: Sweep, digest: str, runs: int) -> dict[str, Any]:
    from farlink import __version__

    return {
        "kind": "farlink-sweep",
        "schema_version": SCHEMA_VERSION,
        "name": sweep.name,
        "definition": sweep.definition(),
        "definition_sha256": digest,
        "axes": sweep.axes,
        "metrics": list(sweep.metrics),
        "points": math.prod(len(v) for v in sweep.grid.values()),
        "runs": runs,
        "created_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "farlink_version": __version__,
        "git_revision": _git_revision(),
    }


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


def run_sweep(
    sweep: Sweep,
    out: str | Path,
    *,
    executor: ProcessPool | DaskCluster | None = None,
    force: bool = False,
    retry_failed: bool = False,
    progress: bool = False,
    budget: Budget = (None, None),
) -> SweepReport:
    """Run every run of ``sweep`` that ``out`` does not hold yet, writing each as it finishes.

    ``executor`` defaults to a :class:`ProcessPool` with one worker per core.
    ``retry_failed`` runs again the runs recorded with an error. ``budget`` is every run's
    budget, (events, memory bytes), None for the core's default: a property of the runs, not
    of the sweep's definition, so it does not change which runs are already done. Raises
    :class:`SweepError` for a definition that cannot be planned or a directory that holds
    another sweep (unless ``force``), :class:`SweepAborted` if the executor breaks down.
    """
    started = time.perf_counter()
    out = Path(out)
    executor = executor or ProcessPool()
    tasks = plan(sweep)
    _prepare_directory(out, sweep, tasks, force)
    points_dir = out / POINTS
    done = _existing(points_dir)
    if retry_failed:
        done -= {row["run_key"] for row in _failures(out)}
    todo = [task for task in tasks if task.run_key not in done]
    failures = _execute(sweep, todo, executor, points_dir, _schema(sweep), progress, budget)
    if len(todo) < len(tasks):  # runs kept from before may have failed then
        reused = {task.run_key for task in tasks} - {task.run_key for task in todo}
        failures = _failures(out, reused) + failures
    return SweepReport(
        out=out,
        points=len(tasks) // sweep.seeds,
        runs=len(tasks),
        reused=len(tasks) - len(todo),
        computed=len(todo),
        failures=failures,
        wall_time_s=time.perf_counter() - started,
        executor=executor.describe(),
    )


def _calls(
    sweep: Sweep, todo: Sequence[Task], schema, budget: Budget
) -> Iterator[tuple[Task, tuple]]:
    extra = tuple(sweep.extra_metrics)
    json_axes = _json_axes(sweep)
    schema_bytes = schema.serialize().to_pybytes()
    doc, point_id = None, None
    for task in todo:
        if task.point_id != point_id:  # one document per point, the seed set per replication
            doc, point_id = point_doc(sweep, task.params), task.point_id
        scenario_json = json.dumps({**doc, "seed": task.seed.seed})
        identity = _identity(sweep, json_axes, task)
        yield task, (scenario_json, extra, identity, schema_bytes, budget)


def _execute(
    sweep, todo, executor, points_dir, schema, progress: bool, budget: Budget
) -> list[dict[str, Any]]:
    """Run ``todo``, storing each row as it comes; the identity and error of failed runs."""
    failures: list[dict[str, Any]] = []
    if not todo:
        return failures
    json_axes = _json_axes(sweep)
    batches = _Batches(_calls(sweep, todo, schema, budget), target_s=BATCH_SECONDS)
    with _ProgressBar(progress, sweep.name, len(todo)) as advance:
        for tasks, outcome in executor.run(run_batch, batches):
            if isinstance(outcome, Lost):  # the executor could not run them; the rows say why
                results = [(outcome.error, None)] * len(tasks)
            else:
                results, seconds = outcome
                batches.observe(len(tasks), seconds)
            for task, (error, data) in zip(tasks, results, strict=True):
                if data is None:
                    identity = _identity(sweep, json_axes, task)
                    lost = {"error": error, **_worker_provenance()}
                    data = _encode(schema, _full_row(identity, lost, sweep.extra_metrics))
                _store(points_dir, task.run_key, data)
                if error is not None:
                    failures.append({**_identity(sweep, json_axes, task), "error": error})
            advance(len(tasks))
    return failures


class _ProgressBar:
    """A rich progress bar with ETA on stderr, or nothing."""

    def __init__(self, enabled: bool, name: str, total: int):
        self.enabled, self.name, self.total = enabled, name, total
        self.progress: Any = None

    def __enter__(self) -> Callable[[int], None]:
        if not self.enabled:
            return lambda runs: None
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self.progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("runs"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=Console(stderr=True),
        )
        self.progress.start()
        task = self.progress.add_task(f"sweep {self.name}", total=self.total)
        return lambda runs: self.progress.advance(task, runs)

    def __exit__(self, *exc: object) -> None:
        if self.progress is not None:
            self.progress.stop()


# --------------------------------------------------------------------------------------------
# Reading the results


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
