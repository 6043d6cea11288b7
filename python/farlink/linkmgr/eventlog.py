"""Read-only access to the link manager's event log (docs/linkmgr.md, "The event log").

The daemon writes one SQLite database in WAL mode; this module is its readers' side. It opens
the file read-only (never creating, locking for writing or checkpointing it), checks that it is
an event log of a schema version it knows, and hands out its rows as :class:`Event` values in the
order of writing. Readers may tail a log while the daemon writes it: :meth:`EventLog.events`
takes the last id already seen.

A file that is not SQLite, a corrupt database, or a database without the log's tables raises
:class:`EventLogError` (a :class:`ValueError`) naming the file and what was expected. The JSON
the log stores (the member names, each event's detail) is read within bounds
(:data:`MAX_JSON_BYTES`, :data:`MAX_JSON_DEPTH`, :func:`bounded_json`): a log is data someone
else may have written, and Python's parser recurses once per level of nesting.
"""

from __future__ import annotations

import json
import math
import os
import re
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

__all__ = [
    "EVENT_KINDS",
    "EVENT_LOG_SCHEMA_VERSION",
    "MAX_JSON_BYTES",
    "MAX_JSON_DEPTH",
    "MAX_MEMBERS",
    "SQLITE_MAGIC",
    "STATES",
    "Event",
    "EventLog",
    "EventLogError",
    "bounded_json",
    "check_json_bounds",
    "is_sqlite_file",
]

EVENT_LOG_SCHEMA_VERSION = "1"
"""Version of the link manager's event log (its SQL tables, docs/linkmgr.md); readers refuse
another."""
SQLITE_MAGIC = b"SQLite format 3\x00"
STATES = ("idle", "connecting", "connected", "dropped", "failed", "blocked")
"""Member states of seed 000 Figure 7.2, as the daemon logs them."""
EVENT_KINDS = (
    "daemon",
    "state",
    "dial",
    "dial_result",
    "drop",
    "signal",
    "primary",
    "tx_bytes",
    "rx_bytes",
    "hold",
    "release",
    "error",
)
MAX_MEMBERS = 256
"""Member numbers run from 0 to this minus one (KUMICS bundled 1 to 8 modems); a larger number
in a log is taken for corruption rather than allocated for."""
MAX_JSON_BYTES = 65_536
"""The longest JSON text read from a log (a detail, the member names): the daemon writes a few
hundred bytes at most (256 names of up to 64 bytes fit in 20 kB)."""
MAX_JSON_DEPTH = 32
"""The deepest nesting of arrays and objects read from a log: the daemon writes two levels,
and Python's parser recurses once per level (about 1,000 levels end it)."""
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_JSON_BRACKET = re.compile(r"[\[\]{}]")
_EVENT_COLUMNS = ("id", "t_unix_s", "t_daemon_s", "modem", "kind", "state", "value", "detail")
_EXPECTED = "a farlink link-manager event log (SQLite with tables meta and events, docs/linkmgr.md)"
# SQLite waits this long for a writer's lock before a read gives up (a checkpoint is brief).
_BUSY_TIMEOUT_MS = 2000


class EventLogError(ValueError):
    """An event log that cannot be read; the message names the file and what was expected."""


@dataclass(frozen=True, slots=True)
class Event:
    """One row of the ``events`` table (column meanings in docs/linkmgr.md)."""

    id: int
    t_unix_s: float
    t_daemon_s: float
    modem: int | None
    kind: str
    state: str | None
    value: float | None
    detail: str | None

    def detail_json(self) -> Any:
        """The detail parsed as JSON, or None when it is absent, not JSON or past the bounds
        (:func:`bounded_json`; a log read by :class:`EventLog` refuses such a detail)."""
        if self.detail is None:
            return None
        try:
            return bounded_json(self.detail)
        except ValueError:
            return None


class _TooDeep(ValueError):
    """JSON past :data:`MAX_JSON_BYTES` or :data:`MAX_JSON_DEPTH`."""


def check_json_bounds(text: str) -> None:
    """Raises ``_TooDeep`` (a :class:`ValueError` saying which bound) for a text longer than
    :data:`MAX_JSON_BYTES` or whose arrays and objects nest deeper than
    :data:`MAX_JSON_DEPTH` (brackets inside strings aside), whether or not it is JSON."""
    if len(text) > MAX_JSON_BYTES:
        raise _TooDeep(f"{len(text)} characters long, above the {MAX_JSON_BYTES} read")
    depth = deepest = 0
    for bracket in _JSON_BRACKET.findall(_JSON_STRING.sub("", text)):
        depth += 1 if bracket in "[{" else -1
        deepest = max(deepest, depth)
    if deepest > MAX_JSON_DEPTH:
        raise _TooDeep(f"nested {deepest} levels deep, above the {MAX_JSON_DEPTH} read")


def bounded_json(text: str) -> Any:
    """``text`` parsed as JSON once :func:`check_json_bounds` has let it through (the parser
    never sees a text past them); :class:`ValueError` for either."""
    check_json_bounds(text)
    return json.loads(text)


def _member_number(value: Any) -> int:
    if isinstance(value, float) and not value.is_integer():
        raise ValueError(value)
    number = int(value)
    if not 0 <= number < MAX_MEMBERS:
        raise ValueError(value)
    return number


def is_sqlite_file(path: str | os.PathLike[str]) -> bool:
    """True when the file starts with SQLite's header (false for a file that cannot be read)."""
    try:
        with open(path, "rb") as file:
            return file.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC
    except OSError:
        return False


class EventLog:
    """An event log opened read-only; use as a context manager or call :meth:`close`.

    Attributes:
        path: the database file.
        meta: the ``meta`` table as a dict of strings.
        modem_names: member names, index = member number (from ``meta.modems``; members that
            appear only in events are named ``modem<N>``).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._source = str(self.path)
        self._db = self._connect()
        try:
            self._check_schema()
            self.meta = self._read_meta()
            self.modem_names = self._read_modem_names()
        except BaseException:
            self._db.close()
            raise

    # -- opening ---------------------------------------------------------------------------

    def _fail(self, what: str) -> EventLogError:
        return EventLogError(f"{self._source}: {what}; expected {_EXPECTED}")

    def _connect(self) -> sqlite3.Connection:
        try:
            with open(self.path, "rb") as file:
                head = file.read(len(SQLITE_MAGIC))
        except OSError as exc:
            raise EventLogError(
                f"{self._source}: cannot read the file ({exc.strerror or exc})"
            ) from None
        if head != SQLITE_MAGIC:
            raise self._fail("not an SQLite database")
        uri = f"file:{quote(str(self.path.resolve()))}?mode=ro"
        try:
            db = sqlite3.connect(uri, uri=True, timeout=_BUSY_TIMEOUT_MS / 1000)
        except sqlite3.Error as exc:
            raise self._fail(f"cannot open it ({exc})") from None
        db.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
        return db

    def _query(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        try:
            return self._db.execute(sql, args).fetchall()
        except sqlite3.Error as exc:
            raise self._fail(f"cannot read it ({exc})") from None

    def _check_schema(self) -> None:
        rows = self._query("SELECT name FROM sqlite_master WHERE type='table'")
        tables = {row[0] for row in rows}
        missing = [t for t in ("meta", "events") if t not in tables]
        if missing:
            raise self._fail(f"no table {', '.join(missing)}")
        columns = {row[1] for row in self._query("PRAGMA table_info(events)")}
        absent = [c for c in _EVENT_COLUMNS if c not in columns]
        if absent:
            raise self._fail(f"table events lacks column {', '.join(absent)}")

    def _read_meta(self) -> dict[str, str]:
        meta = {str(k): str(v) for k, v in self._query("SELECT key, value FROM meta")}
        version = meta.get("schema_version")
        if version is not None and version != EVENT_LOG_SCHEMA_VERSION:
            raise EventLogError(
                f"{self._source}: event log schema version {version!r}; this farlink reads "
                f"version {EVENT_LOG_SCHEMA_VERSION}"
            )
        return meta

    def _read_modem_names(self) -> list[str]:
        names: list[str] = []
        text = self.meta.get("modems")
        if text is not None:
            try:
                parsed = bounded_json(text)
            except _TooDeep as err:
                raise self._fail(f"meta 'modems' is {err}") from None
            except ValueError:
                raise self._fail("meta 'modems' is not JSON") from None
            if not isinstance(parsed, list) or not all(isinstance(n, str) for n in parsed):
                raise self._fail("meta 'modems' is not a JSON list of names")
            names = list(parsed)
        rows = self._query("SELECT MAX(modem) FROM events WHERE modem IS NOT NULL")
        highest = rows[0][0]
        if isinstance(highest, int) and highest >= MAX_MEMBERS:
            raise self._fail(f"member number {highest} is not below {MAX_MEMBERS}")
        if isinstance(highest, int) and highest >= len(names):
            names += [f"modem{i}" for i in range(len(names), highest + 1)]
        return names

    # -- reading ---------------------------------------------------------------------------

    def events(self, after_id: int = 0, limit: int | None = None) -> list[Event]:
        """Events with an id above ``after_id`` in the order of writing (at most ``limit``)."""
        sql = (
            "SELECT id, t_unix_s, t_daemon_s, modem, kind, state, value, detail FROM events "
            "WHERE id > ? ORDER BY id"
        )
        args: tuple[Any, ...] = (after_id,)
        if limit is not None:
            sql += " LIMIT ?"
            args = (after_id, limit)
        return [self._event(row) for row in self._query(sql, args)]

    def iter_events(self, batch: int = 20_000) -> Iterator[Event]:
        """All events in order, read in batches so that a long log is never held at once."""
        last = 0
        while True:
            rows = self.events(last, batch)
            if not rows:
                return
            yield from rows
            last = rows[-1].id

    def last_id(self) -> int:
        """The id of the last event written (0 for an empty log)."""
        return int(self._query("SELECT COALESCE(MAX(id), 0) FROM events")[0][0])

    def count(self) -> int:
        """Number of events."""
        return int(self._query("SELECT COUNT(*) FROM events")[0][0])

    def _event(self, row: tuple[Any, ...]) -> Event:
        id_, t_unix, t_daemon, modem, kind, state, value, detail = row
        try:
            event = Event(
                id=int(id_),
                t_unix_s=float(t_unix),
                t_daemon_s=float(t_daemon),
                modem=None if modem is None else _member_number(modem),
                kind=str(kind),
                state=None if state is None else str(state),
                value=None if value is None else float(value),
                detail=None if detail is None else str(detail),
            )
        except (TypeError, ValueError):
            raise self._fail(f"event {id_} has a malformed column ({row!r})") from None
        if event.detail is not None:
            try:
                check_json_bounds(event.detail)
            except _TooDeep as err:
                raise self._fail(f"event {id_}'s detail is {err}") from None
        finite = (event.t_unix_s, event.t_daemon_s, 0.0 if event.value is None else event.value)
        if not all(math.isfinite(x) for x in finite):
            raise self._fail(f"event {id_} has a time or value that is not a finite number")
        return event

    def modem_name(self, modem: int | None) -> str:
        """The member's name ('' for the bundle or the daemon)."""
        if modem is None:
            return ""
        if 0 <= modem < len(self.modem_names):
            return self.modem_names[modem]
        return f"modem{modem}"

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> EventLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
