"""What a sweep is: its definition, its points and each run's seed.

A sweep is a base scenario, axes (lists of values for ``farlink simulate`` options or ``--set``
paths, whose Cartesian product gives the points), options that apply to every point, a number
of seeds per point and the sweep's own seed. ``docs/sweeps.md`` describes the file format, the
command line and the dataset; ``farlink.cli.sweeps`` holds only the command. Running a sweep is
:mod:`farlink.sweeps.run`, its dataset :mod:`farlink.sweeps.dataset`, its model column
:mod:`farlink.sweeps.model`.

Seeds form a tree (NumPy's ``SeedSequence``): a point's parent is
``SeedSequence(sweep_seed, spawn_key=<4 words of SHA-256 of the point's parameters>)`` and its
replications are that parent's ``spawn(seeds)`` children; the core's u64 seed is the child's
``generate_state(1, uint64)``. A point's seeds therefore depend on the sweep seed, the point's
parameters and the replication index only, never on the executor, the order of the axes or
their values, or the number of workers.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import math
import tomllib
from collections.abc import Callable, Mapping, Sequence
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
    describe_error,
    load_scenario,
    set_path,
)
from farlink.schedules import inline_files

__all__ = [
    "DEFAULT_SUMMARY_METRICS",
    "DROP_CAUSES",
    "MANIFEST",
    "METRICS",
    "MODEL_COLUMN",
    "OPTION_AXES",
    "POINTS",
    "SUPERSEDED",
    "SWEEP_SCHEMA_VERSION",
    "Budget",
    "Point",
    "SeedInfo",
    "Sweep",
    "SweepAborted",
    "SweepError",
    "is_sweep_file",
    "load_sweep",
    "parse_grid_option",
    "point_doc",
    "point_seeds",
    "sweep_from_document",
    "sweep_from_options",
]

SWEEP_SCHEMA_VERSION = 2
"""Version of the dataset (columns and their meaning), in the ``schema_version`` column and the
manifest. Readers refuse a newer version than theirs. Version 2 added ``drops_aqm`` (packets a
queue discipline's AQM dropped)."""


MANIFEST = "manifest.json"


POINTS = "points"


SUPERSEDED = "superseded"


# A run's budget: most events and most memory in bytes, None for the core's default.
Budget = tuple[int | None, int | None]


OPTION_AXES = ("tcp", "loss", "duration", "size", "profile")
"""``farlink simulate`` options that can be an axis or a fixed option (besides ``--set`` paths)."""


DROP_CAUSES = (
    "queue_overflow",
    "corruption",
    "arq_give_up",
    "call_drop",
    "reassembly_timeout",
    "aqm",
)


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


_U64 = 2**64


_MAX_SEEDS = 1_000_000


class SweepError(ValueError):
    """A sweep definition or directory that cannot be used; the message names the field."""


class SweepAborted(RuntimeError):
    """The executor failed as a whole (a worker pool broke, a scheduler went away).

    Every run finished before the failure is on disk; running the sweep again resumes it.
    """


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
    if axis == "profile":
        from farlink._core import TCP_PROFILES

        if value not in TCP_PROFILES:
            raise SweepError(
                f"{where}: expected a TCP profile ({', '.join(TCP_PROFILES)}), got {value!r}"
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
            # Schedule files and mahimahi traces it names: relative to the sweep file.
            doc = inline_files(copy.deepcopy(dict(value)), base_dir)
            return check_document(doc), "inline"
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
            raise SweepError(describe_error(base, err)) from None
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
