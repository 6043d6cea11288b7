"""Write event logs of the link manager's schema: a writer, and synthetic bundles for tests.

The daemon (crates/farlink-linkmgr) is the log's real writer; this module writes the same schema
(docs/linkmgr.md, "The event log") so that the readers can be tested and shown without a daemon:
:class:`LogWriter` appends events one transaction each, as the daemon does, and
:func:`synthetic_log` draws a whole run of a bundle with the state machine of seed 000 Figure 7.2
(connecting, connected, dropped, failed, blocked): Poisson call drops at rate β per connected
member, dials that take a while and sometimes fail, a wait ``T_d`` after a drop and ``T_f`` after
a failed dial, blocking after ``max_attempts`` failed dials in a row, the primary chosen by the
fewest drops, signal samples and byte counters. It is a test fixture, not a model of Iridium:
its parameters are arguments, and nothing here is fitted to a published figure.
"""

from __future__ import annotations

import heapq
import json
import os
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from farlink.linkmgr.eventlog import EVENT_LOG_SCHEMA_VERSION

__all__ = ["SCHEMA_SQL", "LogWriter", "SyntheticBundle", "synthetic_log"]

SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY, t_unix_s REAL NOT NULL, t_daemon_s REAL NOT NULL, modem INTEGER,
    kind TEXT NOT NULL, state TEXT, value REAL, detail TEXT);
CREATE INDEX IF NOT EXISTS events_kind ON events (kind, modem, id);
CREATE TABLE IF NOT EXISTS snapshots (id INTEGER PRIMARY KEY, t_unix_s REAL NOT NULL,
    json TEXT NOT NULL);
"""
"""The schema of docs/linkmgr.md, as this writer creates it."""

START_UNIX_S = 1_089_936_000.0
"""Default start of a synthetic log: 2004-07-16 00:00 UTC, during seed 000's Greenland tests."""


class LogWriter:
    """Append events to an event log in WAL mode, one transaction per event (as the daemon).

    Args:
        path: the database (created with the schema if absent).
        modems: member names, index = member number.
        role: ``air`` or ``ground``.
        started_unix_s: the daemon's start; ``t_daemon_s`` counts from it.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        modems: Sequence[str],
        *,
        role: str = "air",
        started_unix_s: float = START_UNIX_S,
        config: dict | None = None,
    ) -> None:
        self.path = Path(path)
        self.started_unix_s = float(started_unix_s)
        self._db = sqlite3.connect(self.path)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.executescript(SCHEMA_SQL)
        meta = {
            "schema_version": EVENT_LOG_SCHEMA_VERSION,
            "role": role,
            "modems": json.dumps(list(modems)),
            "config": json.dumps(config or {}, sort_keys=True),
            "started_unix_s": repr(self.started_unix_s),
        }
        with self._db:
            self._db.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", meta.items())
        self._batch: list[tuple] | None = None

    def event(
        self,
        t_unix_s: float,
        kind: str,
        modem: int | None = None,
        *,
        state: str | None = None,
        value: float | None = None,
        detail: str | None = None,
    ) -> None:
        """Append one event (committed at once, unless :meth:`begin_batch` collects events)."""
        row = (t_unix_s, t_unix_s - self.started_unix_s, modem, kind, state, value, detail)
        if self._batch is not None:
            self._batch.append(row)
            return
        with self._db:
            self._db.execute(_INSERT, row)

    def begin_batch(self) -> None:
        """Collect events in memory until :meth:`end_batch` writes them in one transaction."""
        self._batch = []

    def end_batch(self) -> None:
        rows, self._batch = self._batch or [], None
        with self._db:
            self._db.executemany(_INSERT, rows)

    def close(self) -> None:
        if self._batch is not None:
            self.end_batch()
        self._db.close()

    def __enter__(self) -> LogWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_INSERT = (
    "INSERT INTO events (t_unix_s, t_daemon_s, modem, kind, state, value, detail) "
    "VALUES (?, ?, ?, ?, ?, ?, ?)"
)


@dataclass(frozen=True)
class SyntheticBundle:
    """Parameters of :func:`synthetic_log` (times in seconds, rates per second).

    Attributes:
        modems: member names.
        duration_s: length of the run.
        beta_per_s: call-drop rate of a connected member.
        dial_s: time from dialling to the dial's result.
        dial_failure: probability that a dial fails.
        dropped_wait_s: ``T_d``, the wait after a drop before redialling (Figure 7.2).
        failed_wait_s: ``T_f``, the wait after a failed dial.
        max_attempts: failed dials in a row before the member is blocked.
        blocked_s: how long a blocked member waits.
        rate_bps: bytes a connected member carries, as bits per second, in each direction.
        signal_every_s, bytes_every_s: sampling periods of signal and byte counters.
        stop: end the log with a ``daemon stop`` event.
    """

    modems: tuple[str, ...] = tuple(f"modem{i}" for i in range(8))
    duration_s: float = 3600.0
    beta_per_s: float = 1.0 / 3000.0
    dial_s: float = 20.0
    dial_failure: float = 0.1
    dropped_wait_s: float = 10.0
    failed_wait_s: float = 30.0
    max_attempts: int = 3
    blocked_s: float = 600.0
    rate_bps: float = 2400.0
    signal_every_s: float = 60.0
    bytes_every_s: float = 10.0
    stop: bool = True


_FAILURES = ("NO CARRIER", "BUSY", "NO ANSWER", "timeout")


class _Run:
    """One synthetic run: a heap of member timers plus periodic samples."""

    def __init__(self, spec: SyntheticBundle, writer: LogWriter, rng: np.random.Generator):
        self.spec, self.w, self.rng = spec, writer, rng
        self.t0 = writer.started_unix_s
        n = len(spec.modems)
        self.state = ["idle"] * n
        self.attempts = [0] * n
        self.drops = [0] * n
        self.primary: int | None = None
        self.tx = [0.0] * n
        self.heap: list[tuple[float, int, str, int]] = []
        self.seq = 0

    def at(self, t: float, what: str, member: int = -1) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (t, self.seq, what, member))

    def set_state(self, t: float, m: int, state: str) -> None:
        self.state[m] = state
        self.w.event(self.t0 + t, "state", m, state=state)

    def dial(self, t: float, m: int) -> None:
        self.set_state(t, m, "connecting")
        self.attempts[m] += 1
        self.w.event(self.t0 + t, "dial", m, value=self.attempts[m])
        self.at(t + self.spec.dial_s, "result", m)

    def result(self, t: float, m: int) -> None:
        spec = self.spec
        if self.rng.random() >= spec.dial_failure:
            self.w.event(self.t0 + t, "dial_result", m, value=1, detail="CONNECT 9600")
            self.set_state(t, m, "connected")
            self.attempts[m] = 0
            if self.primary is None:
                self.set_primary(t, m)
            self.at(t + self.rng.exponential(1.0 / spec.beta_per_s), "drop", m)
            return
        code = _FAILURES[int(self.rng.integers(len(_FAILURES)))]
        self.w.event(self.t0 + t, "dial_result", m, value=0, detail=code)
        if self.attempts[m] >= spec.max_attempts:
            self.set_state(t, m, "blocked")
            self.attempts[m] = 0
            self.at(t + spec.blocked_s, "dial", m)
        else:
            self.set_state(t, m, "failed")
            self.at(t + spec.failed_wait_s, "dial", m)

    def drop(self, t: float, m: int) -> None:
        self.drops[m] += 1
        self.w.event(self.t0 + t, "drop", m, detail="no carrier")
        self.set_state(t, m, "dropped")
        if self.primary == m:
            up = [i for i, s in enumerate(self.state) if s == "connected"]
            self.set_primary(t, min(up, key=lambda i: (self.drops[i], i)) if up else None)
        self.at(t + self.spec.dropped_wait_s, "dial", m)

    def set_primary(self, t: float, m: int | None) -> None:
        self.primary = m
        self.w.event(self.t0 + t, "primary", m)

    def signal(self, t: float) -> None:
        for m in range(len(self.state)):
            bars = int(self.rng.integers(2, 6)) if self.state[m] == "connected" else 0
            handover = bool(self.rng.random() < 0.05)
            reply = round(float(self.rng.uniform(0.2, 0.6)) + (1.5 if handover else 0.0), 3)
            detail = json.dumps({"reply_s": reply, "handover": handover})
            self.w.event(self.t0 + t, "signal", m, value=bars, detail=detail)
        self.at(t + self.spec.signal_every_s, "signal")

    def count_bytes(self, t: float) -> None:
        step = self.spec.rate_bps / 8.0 * self.spec.bytes_every_s
        for m, state in enumerate(self.state):
            if state == "connected":
                self.tx[m] += step
                self.w.event(self.t0 + t, "tx_bytes", m, value=self.tx[m])
                self.w.event(self.t0 + t, "rx_bytes", m, value=self.tx[m] / 4)
        total = sum(self.tx)
        self.w.event(self.t0 + t, "tx_bytes", None, value=total)
        self.w.event(self.t0 + t, "rx_bytes", None, value=total / 4)
        self.at(t + self.spec.bytes_every_s, "bytes")

    def run(self) -> None:
        spec = self.spec
        self.w.event(self.t0, "daemon", detail="start")
        for m in range(len(spec.modems)):
            self.set_state(0.0, m, "idle")
            self.at(2.0 * m, "dial", m)  # members are dialled a little apart, as KUMICS did
        self.at(spec.signal_every_s, "signal")
        self.at(spec.bytes_every_s, "bytes")
        handlers = {"dial": self.dial, "result": self.result, "drop": self.drop}
        while self.heap and self.heap[0][0] <= spec.duration_s:
            t, _, what, m = heapq.heappop(self.heap)
            if what == "signal":
                self.signal(t)
            elif what == "bytes":
                self.count_bytes(t)
            else:
                handlers[what](t, m)
        if spec.stop:
            self.w.event(self.t0 + spec.duration_s, "daemon", detail="stop")


def synthetic_log(
    path: str | os.PathLike[str],
    spec: SyntheticBundle | None = None,
    *,
    seed: int = 1,
    started_unix_s: float = START_UNIX_S,
) -> Path:
    """Write a synthetic run of a bundle to ``path`` (replaced if it exists); return the path.

    The same ``spec`` and ``seed`` give the same events.
    """
    spec = spec or SyntheticBundle()
    file = Path(path)
    for stale in (file, file.with_name(file.name + "-wal"), file.with_name(file.name + "-shm")):
        stale.unlink(missing_ok=True)
    config = {k: v for k, v in spec.__dict__.items() if k != "modems"}
    with LogWriter(file, spec.modems, started_unix_s=started_unix_s, config=config) as writer:
        writer.begin_batch()
        _Run(spec, writer, np.random.default_rng(seed)).run()
    return file
