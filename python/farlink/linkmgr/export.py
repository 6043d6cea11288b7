"""Export an event log as CSV, or as the XML connection database of seed 000 Figure 7.4.

CSV: one row per event in the order of writing, with the log's columns, the time also as an
ISO 8601 UTC date-time, and the member's name beside its number.

XML: Figure 7.4's schema is a ``connection`` element per modem holding ``modem name``, ``modem
index``, ``connection_time`` and ``entry`` elements of an ``entry_id`` and ``event`` elements (a
``state`` and a ``time``). Section 7.3 says what a connection is: the MLPPP connection a primary
link starts, which ends when the bundle disappears; "each connection is stored in the database
separately". The choices where the figure leaves things open:

* The names with a space in the figure (``modem name``, ``modem index``) are not legal XML
  names; they are written ``modem_name`` and ``modem_index`` (what
  :mod:`farlink.calldrops.log` reads).
* One document holds the whole log: a root ``connection_database`` wrapping, per connection, one
  ``connection`` element for each member that logged a state in it.
* A connection ends at the event after which no member is up (having had one up), and at a
  ``daemon`` ``start`` or ``stop`` (which end every up-period, :mod:`farlink.linkmgr.tracker`;
  the members still not idle then get an ``idle`` event at that time). The next one starts with
  the next event. ``connection_time`` is when its first member came up (unified for all its
  modems); a connection in which no member came up has it empty (the figure's
  ``nillable="true"``).
* ``modem_index`` 1 is the connection's first primary (the first ``primary`` event naming a
  member, else the first member up); the others follow in the order they came up, then by
  member number.
* An ``entry`` is one call of the member: a new one starts at each ``connecting`` state;
  ``entry_id`` counts a member's calls over the whole log. A ``state`` event that repeats the
  member's state changes nothing and is left out.
* Times are ISO 8601 UTC with milliseconds (``2004-07-16T13:51:00.250Z``); the document is UTF-8
  (the figure's schema declares UTF-16; both are XML, UTF-8 is what tools expect today).
"""

from __future__ import annotations

import csv
import io
import os
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from farlink.linkmgr.eventlog import Event, EventLog

__all__ = ["CSV_COLUMNS", "events_csv", "iso_time", "write_csv", "xml_database"]

CSV_COLUMNS = (
    "id",
    "t_unix_s",
    "time_utc",
    "t_daemon_s",
    "modem",
    "modem_name",
    "kind",
    "state",
    "value",
    "detail",
)


def iso_time(t_unix_s: float) -> str:
    """ISO 8601 UTC date-time with milliseconds and a ``Z``."""
    moment = datetime.fromtimestamp(t_unix_s, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _cell(value: object) -> object:
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)
    return value


def write_csv(log: EventLog, out: io.TextIOBase) -> int:
    """Write every event of ``log`` as CSV to ``out``; return the number of rows."""
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    rows = 0
    for e in log.iter_events():
        writer.writerow(
            _cell(v)
            for v in (
                e.id,
                e.t_unix_s,
                iso_time(e.t_unix_s),
                e.t_daemon_s,
                e.modem,
                log.modem_name(e.modem),
                e.kind,
                e.state,
                e.value,
                e.detail,
            )
        )
        rows += 1
    return rows


def events_csv(path: str | os.PathLike[str]) -> str:
    """The CSV text of a log (see :func:`write_csv`)."""
    out = io.StringIO()
    with EventLog(path) as log:
        write_csv(log, out)
    return out.getvalue()


# --------------------------------------------------------------------------------------------
# XML connection database


@dataclass
class _Connection:
    """One MLPPP connection: each member's calls (lists of (state, time))."""

    calls: dict[int, list[list[tuple[str, float]]]] = field(default_factory=dict)
    call_ids: dict[int, list[int]] = field(default_factory=dict)
    connection_time_s: float | None = None
    first_primary: int | None = None
    up_order: list[int] = field(default_factory=list)

    def add(self, member: int, state: str, t: float, next_call_id: dict[int, int]) -> None:
        calls = self.calls.setdefault(member, [])
        ids = self.call_ids.setdefault(member, [])
        if not calls or (state == "connecting" and calls[-1]):
            next_call_id[member] = next_call_id.get(member, 0) + 1
            calls.append([])
            ids.append(next_call_id[member])
        calls[-1].append((state, t))
        if state == "connected":
            if self.connection_time_s is None:
                self.connection_time_s = t
            if member not in self.up_order:
                self.up_order.append(member)

    def indices(self) -> dict[int, int]:
        """Member number → modem index (1 = the connection's first primary)."""
        first = self.first_primary
        if first is None and self.up_order:
            first = self.up_order[0]
        order = [first] if first is not None else []
        order += [m for m in self.up_order if m not in order]
        order += [m for m in sorted(self.calls) if m not in order]
        return {m: i for i, m in enumerate(order, start=1)}


class _Splitter:
    """Cut the state events of a log into connections (see the module docstring)."""

    def __init__(self) -> None:
        self.connections: list[_Connection] = []
        self.current = _Connection()
        self.states: dict[int, str] = {}
        self.call_ids: dict[int, int] = {}
        self.last_s: float | None = None

    def feed(self, e: Event) -> None:
        t = e.t_unix_s if self.last_s is None else max(e.t_unix_s, self.last_s)
        self.last_s = t
        if e.kind == "daemon" and e.detail in ("start", "stop"):
            for member, state in sorted(self.states.items()):
                if state != "idle":
                    self._state(member, "idle", t)
            self.close()
        elif e.kind == "primary" and e.modem is not None and self.current.first_primary is None:
            self.current.first_primary = e.modem
        elif (
            e.kind == "state"
            and e.modem is not None
            and e.state not in (None, self.states.get(e.modem))
        ):
            was_up = any(s == "connected" for s in self.states.values())
            self._state(e.modem, e.state, t)
            if was_up and not any(s == "connected" for s in self.states.values()):
                self.close()

    def _state(self, member: int, state: str, t: float) -> None:
        self.states[member] = state
        self.current.add(member, state, t, self.call_ids)

    def close(self) -> None:
        if self.current.calls:
            self.connections.append(self.current)
        self.current = _Connection()


def _sub(parent: ET.Element, tag: str, text: str | None) -> ET.Element:
    element = ET.SubElement(parent, tag)
    element.text = text
    return element


def _connections(events: Iterable[Event]) -> list[_Connection]:
    splitter = _Splitter()
    for e in events:
        splitter.feed(e)
    splitter.close()
    return splitter.connections


def xml_database(path: str | os.PathLike[str]) -> bytes:
    """The log as a KUMICS connection database (UTF-8 XML bytes; see the module docstring)."""
    with EventLog(path) as log:
        connections = _connections(log.iter_events())
        root = ET.Element(
            "connection_database",
            {"source": "farlink link manager event log", "role": log.meta.get("role", "")},
        )
        for conn in connections:
            when = None if conn.connection_time_s is None else iso_time(conn.connection_time_s)
            for member, index in sorted(conn.indices().items(), key=lambda kv: kv[1]):
                element = ET.SubElement(root, "connection")
                _sub(element, "modem_name", log.modem_name(member))
                _sub(element, "modem_index", str(index))
                _sub(element, "connection_time", when)
                for call_id, call in zip(conn.call_ids[member], conn.calls[member], strict=True):
                    entry = ET.SubElement(element, "entry")
                    _sub(entry, "entry_id", str(call_id))
                    for state, t in call:
                        event = ET.SubElement(entry, "event")
                        _sub(event, "state", state)
                        _sub(event, "time", iso_time(t))
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n"
