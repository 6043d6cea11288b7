"""Where a sweep's runs execute: a local process pool or a Dask cluster, behind one interface."""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from farlink.sweeps.sweep import SweepAborted, SweepError

__all__ = ["DaskCluster", "Lost", "ProcessPool"]


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
        context.set_forkserver_preload(["farlink.sweeps.run"])
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
