"""Running a sweep: its runs planned, sent to an executor in batches, stored as they finish.

Running the same sweep again computes only the runs whose file is missing; a different
definition in an existing ``DIR`` is refused unless ``force``. A run the core refuses or that
fails otherwise is kept as a row whose ``error`` is set; the other runs go on.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import math
import shutil
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from farlink.sweeps.dataset import (
    _encode,
    _existing,
    _failures,
    _json_axes,
    _read_manifest,
    _schema,
    _schema_from,
    _store,
    _write_json,
)
from farlink.sweeps.executors import DaskCluster, Lost, ProcessPool
from farlink.sweeps.model import model_normalized_goodput
from farlink.sweeps.point import _git_revision, _worker_provenance, run_point
from farlink.sweeps.sweep import (
    MANIFEST,
    METRICS,
    MODEL_COLUMN,
    POINTS,
    SUPERSEDED,
    SWEEP_SCHEMA_VERSION,
    Budget,
    SeedInfo,
    Sweep,
    SweepError,
    _canonical,
    _sha256,
    point_doc,
    point_seeds,
)

__all__ = ["BATCH_SECONDS", "SweepReport", "Task", "plan", "run_batch", "run_sweep", "run_task"]


BATCH_SECONDS = 0.05
"""Runs go to workers in batches of about this much work (0: one run per submission)."""


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
    row["schema_version"] = SWEEP_SCHEMA_VERSION
    row["finished_at"] = dt.datetime.now(dt.UTC)
    return row


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
        "schema_version": SWEEP_SCHEMA_VERSION,
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
