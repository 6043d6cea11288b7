"""Read call-drop logs of a bundle of dial-up modems (e.g. Iridium) for fitting the drop rate β.

Seed 000, section 5.3 ("The Development of the Call Drops Probability Density Function") collects
call drops per link into a table of ``(modem, drop time)`` rows (Table 5.2, e.g. ``Kansas,
7/16/2004 13:51``) and fits an exponential distribution to the time between drops of one link;
chapter 7 stores the same information as the KUMICS connection database in XML (Figure 7.4). Both
forms are read here into a :class:`DropLog`, which :func:`farlink.calldrops.fit.fit_drop_log` turns
into a rate with a confidence interval and a goodness-of-fit verdict.

CSV (drop times only)
    A header row naming a modem column and a time column, then one row per call drop. Accepted
    header names (case-insensitive): ``modem`` / ``modem_id`` / ``modem id`` / ``link`` and
    ``time`` / ``drop_time`` / ``drop time`` / ``timestamp``; further columns are ignored. The
    delimiter is a comma, or a tab when the header line has tabs and no comma (as Table 5.2 is
    printed). Blank lines and lines starting with ``#`` are skipped. A time is an ISO 8601
    date-time (``2004-07-16T13:51:00``), a US date-time as in Table 5.2 (``7/16/2004 13:51``,
    optionally with seconds and/or ``AM``/``PM``), or plain seconds (``3120.5``); one file uses
    either date-times or seconds, not both. Date-times without a zone are taken as UTC (only
    differences matter). Times must not go backwards for a modem.

    The intervals are the differences between successive drops of the same modem, pooled over
    all modems (the first drop of each modem only starts its clock). Such an interval *includes*
    the time the modem spent redialling after the earlier drop (states dropped, connecting,
    failed, blocked of the section 7.1 state machine), so the rate fitted to it is a rate per
    wall-clock time and slightly underestimates the rate per up-time when redials are long. The
    observation of each modem ends at a drop: the log is *failure-censored*
    (``censoring="failure"``), and the exposure is the sum of the intervals.

XML (KUMICS connection database, seed 000 Figure 7.4)
    An element ``connection`` holding the modem name, the modem index, ``connection_time`` and
    any number of ``entry`` elements, each with an ``entry_id`` and ``event`` elements made of a
    ``state`` and a ``time``. A file holds either one ``connection`` as its root or a root element
    wrapping several (at any depth). Figure 7.4 prints the first two element names with a space
    (``modem name``, ``modem index``), which is not a legal XML name; they are accepted spelled
    ``modem_name`` / ``modem-name`` / ``modemName`` and ``modem_index`` / ``modem-index`` /
    ``modemIndex``. Namespaces are ignored. Document type declarations (and so entity
    declarations) are rejected.

    States follow the modem state machine of section 7.1 (connecting, connected, dropped,
    failed, blocked; compared case-insensitively). A ``connected`` event starts an up-period
    (a repeated ``connected`` while up is ignored); a ``dropped`` event ends it with a call drop,
    giving one complete interval; any other state while up ends the up-period without a drop
    (the up-time still counts as exposure). A ``dropped`` event while the modem is not up is an
    error (a drop without a known up-time). A modem still up at the end of the log contributes
    its up-time to the end of the log as right-censored exposure. The end of the log is
    ``end_time_s`` if given, else the latest event time among the ``connection`` elements with
    the same ``connection_time`` (one MLPPP connection, "unified for all modems"), else the
    element's own last event. Time spent redialling is therefore not exposure, which is the
    exposure the rate β refers to; the log is *time-censored* (``censoring="time"``).

Malformed input raises :class:`DropLogError` (a :class:`ValueError`) naming the file and the line
(CSV) or the element (XML), and the accepted form.
"""

from __future__ import annotations

import csv
import math
import os
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

__all__ = [
    "CSV_FORM",
    "TIME_FORMS",
    "XML_FORM",
    "DropLog",
    "DropLogError",
    "drop_times_on_clock",
    "parse_csv_log",
    "parse_time",
    "parse_xml_log",
    "read_drop_log",
]

TIME_FORMS = (
    "an ISO 8601 date-time (2004-07-16T13:51:00), a US date-time as in seed Table 5.2 "
    "(7/16/2004 13:51, optionally with seconds and AM/PM), or seconds as a plain number (3120.5)"
)
CSV_FORM = (
    "a CSV file with a header naming a modem column and a time column (e.g. 'modem,time'), "
    "then one row per call drop; blank lines and '#' comments are allowed"
)
XML_FORM = (
    "a KUMICS connection database (seed 000 Figure 7.4): <connection> with <modem_name>, "
    "<modem_index>, <connection_time> and <entry> elements of <entry_id> and <event> "
    "(<state>, <time>), either as the root or wrapped in one root element"
)

_MODEM_HEADERS = frozenset({"modem", "modem_id", "modem id", "modemid", "link"})
_TIME_HEADERS = frozenset({"time", "drop_time", "drop time", "droptime", "timestamp"})
_MODEM_NAME_TAGS = ("modem_name", "modem-name", "modemName")
_MODEM_INDEX_TAGS = ("modem_index", "modem-index", "modemIndex")
_US_FORMATS = (
    "%m/%d/%Y %H:%M",
    "%m/%d/%Y %H:%M:%S",
    "%m/%d/%Y %I:%M %p",
    "%m/%d/%Y %I:%M:%S %p",
)


class DropLogError(ValueError):
    """A call-drop log that cannot be read; the message names the file, the place and the form."""


@dataclass(frozen=True, eq=False)
class DropLog:
    """Call drops of a modem bundle, reduced to what the rate fit needs.

    Attributes:
        modems: modem names in order of first appearance.
        intervals_s: complete up-intervals ending in a call drop, all modems pooled, in seconds
            (CSV: time between successive drops of one modem, including its redial time).
        exposure_s: total time exposed to call drops, in seconds (XML and synthetic logs: up-time
            including the right-censored up-time at the end; CSV: the sum of ``intervals_s``).
        drops: call drops inside the exposure (one per complete interval).
        source: the file name, or a description of where the log came from.
        censoring: ``"time"`` when the observation ended at a fixed time (XML, synthetic logs),
            ``"failure"`` when it ended at a drop (CSV); selects the exact confidence interval.
        drop_times_s: per modem, the drop times on the log's clock in seconds (all drops in the
            file, including the first of each modem in a CSV).
        connect_times_s: per modem, the times the modem came up (empty arrays for a CSV).
    """

    modems: tuple[str, ...]
    intervals_s: np.ndarray
    exposure_s: float
    drops: int
    source: str
    censoring: str = "time"
    drop_times_s: Mapping[str, np.ndarray] = field(default_factory=dict)
    connect_times_s: Mapping[str, np.ndarray] = field(default_factory=dict)

    @property
    def n_intervals(self) -> int:
        """Number of complete intervals."""
        return int(self.intervals_s.size)


WALL_CLOCK_FROM_S = 1e8
"""A log time beyond this is POSIX seconds (1973-03-03 on), not seconds from the log's
own start: no log of relative times spans three years."""


def drop_times_on_clock(log: DropLog, start_unix_s: float) -> np.ndarray:
    """Every drop of ``log``, all modems together and sorted, on the clock of a record that
    began at POSIX time ``start_unix_s`` (a capture): a log on the wall clock is shifted by that
    start; a log of relative times is taken as already on the record's clock."""
    times = np.sort(
        np.concatenate([np.zeros(0), *(np.asarray(t, float) for t in log.drop_times_s.values())])
    )
    return times - start_unix_s if times.size and times[0] > WALL_CLOCK_FROM_S else times


# --------------------------------------------------------------------------------------------
# times


def _to_seconds(moment: datetime) -> float:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def _parse_time_kind(text: str) -> tuple[float, str]:
    """Parse one time; return (seconds, kind) with kind "seconds" or "datetime"."""
    s = text.strip()
    if not s:
        raise ValueError("empty time")
    try:
        value = float(s)
    except ValueError:
        pass
    else:
        if not math.isfinite(value):
            raise ValueError(f"time {text!r} is not finite")
        return value, "seconds"
    try:
        return _to_seconds(datetime.fromisoformat(s)), "datetime"
    except ValueError:
        pass
    for fmt in _US_FORMATS:
        try:
            return _to_seconds(datetime.strptime(s, fmt)), "datetime"
        except ValueError:
            continue
    raise ValueError(f"cannot parse time {text!r}")


def parse_time(text: str) -> float:
    """Parse one log time into seconds (see :data:`TIME_FORMS`); raise ValueError if unparseable.

    Date-times become POSIX seconds (zone-less ones taken as UTC), plain numbers are seconds.
    """
    return _parse_time_kind(text)[0]


class _Clock:
    """Parse times of one file, insisting that they are all date-times or all plain seconds."""

    def __init__(self) -> None:
        self.kind: str | None = None

    def __call__(self, text: str) -> float:
        try:
            value, kind = _parse_time_kind(text)
        except ValueError as exc:
            raise ValueError(f"{exc}; a time is {TIME_FORMS}") from None
        if self.kind is None:
            self.kind = kind
        elif kind != self.kind:
            raise ValueError(
                f"time {text!r} is {'a plain number' if kind == 'seconds' else 'a date-time'} "
                f"but earlier times in the file are "
                f"{'plain numbers' if self.kind == 'seconds' else 'date-times'}; "
                "use one form throughout"
            )
        return value


# --------------------------------------------------------------------------------------------
# CSV


def _data_lines(text: str) -> Iterable[tuple[int, str]]:
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            yield number, line


def _split(line: str, delimiter: str) -> list[str]:
    return [cell.strip() for cell in next(csv.reader([line], delimiter=delimiter))]


def _find_column(header: list[str], names: frozenset[str]) -> int | None:
    for index, cell in enumerate(header):
        if cell.strip().lower() in names:
            return index
    return None


def parse_csv_log(text: str, source: str = "<csv>") -> DropLog:
    """Parse the text of a CSV call-drop log (see the module docstring); ``source`` names it."""
    lines = iter(_data_lines(text))
    first = next(lines, None)
    if first is None:
        raise DropLogError(f"{source}: no header and no data; expected {CSV_FORM}")
    header_line, header_text = first
    delimiter = "\t" if "\t" in header_text and "," not in header_text else ","
    try:
        header = _split(header_text, delimiter)
    except csv.Error as exc:
        raise DropLogError(
            f"{source}: line {header_line}: bad header ({exc}); expected {CSV_FORM}"
        ) from None
    modem_col = _find_column(header, _MODEM_HEADERS)
    time_col = _find_column(header, _TIME_HEADERS)
    if modem_col is None or time_col is None:
        raise DropLogError(
            f"{source}: line {header_line}: header {header_text.strip()!r} does not name a modem "
            f"column and a time column; expected {CSV_FORM}"
        )

    clock = _Clock()
    times: dict[str, list[float]] = {}
    for number, line in lines:
        try:
            row = _split(line, delimiter)
        except csv.Error as exc:
            raise DropLogError(f"{source}: line {number}: {exc}; expected {CSV_FORM}") from None
        if len(row) <= max(modem_col, time_col):
            raise DropLogError(
                f"{source}: line {number}: expected {len(header)} columns like the header "
                f"{header_text.strip()!r}, got {len(row)}"
            )
        modem = row[modem_col]
        if not modem:
            raise DropLogError(f"{source}: line {number}: empty modem name")
        try:
            t = clock(row[time_col])
        except ValueError as exc:
            raise DropLogError(f"{source}: line {number}: {exc}") from None
        previous = times.setdefault(modem, [])
        if previous and t < previous[-1]:
            raise DropLogError(
                f"{source}: line {number}: time {row[time_col]!r} of modem {modem!r} goes "
                f"backwards (earlier than its previous drop); list each modem's drops in "
                "time order"
            )
        previous.append(t)
    if not times:
        raise DropLogError(f"{source}: header but no data rows; expected {CSV_FORM}")

    drop_times = {modem: np.asarray(ts, dtype=float) for modem, ts in times.items()}
    intervals = np.concatenate([np.diff(ts) for ts in drop_times.values()])
    return DropLog(
        modems=tuple(drop_times),
        intervals_s=intervals,
        exposure_s=float(intervals.sum()),
        drops=int(intervals.size),
        source=source,
        censoring="failure",
        drop_times_s=drop_times,
        connect_times_s={modem: np.empty(0) for modem in drop_times},
    )


# --------------------------------------------------------------------------------------------
# XML


class _DoctypeRejected(Exception):
    pass


class _NoDoctypeBuilder(ET.TreeBuilder):
    def doctype(self, name: str, pubid: str | None, system: str | None) -> None:
        raise _DoctypeRejected(name)


def _local(tag: object) -> str:
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def _child(element: ET.Element, *names: str) -> ET.Element | None:
    for child in element:
        if _local(child.tag) in names:
            return child
    return None


def _children(element: ET.Element, name: str) -> list[ET.Element]:
    return [child for child in element if _local(child.tag) == name]


def _text(element: ET.Element | None) -> str | None:
    if element is None or element.text is None:
        return None
    text = element.text.strip()
    return text or None


@dataclass
class _Event:
    where: str
    state: str
    time_s: float


@dataclass
class _Connection:
    modem: str
    group: object
    events: list[_Event]


def _read_connection(element: ET.Element, ordinal: int, clock: _Clock, source: str) -> _Connection:
    modem = _text(_child(element, *_MODEM_NAME_TAGS))
    where = f"<connection> #{ordinal}"
    if modem is None:
        raise DropLogError(
            f"{source}: {where}: no modem name (element <modem_name>; the figure's "
            f"'modem name' is not a legal XML name); expected {XML_FORM}"
        )
    where = f"<connection> #{ordinal} (modem {modem!r})"
    index = _text(_child(element, *_MODEM_INDEX_TAGS))
    if index is not None:
        try:
            int(index)
        except ValueError:
            raise DropLogError(
                f"{source}: {where}: <modem_index> {index!r} is not an integer"
            ) from None
    connection_time = _text(_child(element, "connection_time"))
    group: object = connection_time if connection_time is not None else ("element", ordinal)

    events: list[_Event] = []
    for e_ord, entry in enumerate(_children(element, "entry"), start=1):
        entry_id = _text(_child(entry, "entry_id"))
        entry_where = f"{where} <entry> #{e_ord}" + (f" (entry_id {entry_id})" if entry_id else "")
        for v_ord, event in enumerate(_children(entry, "event"), start=1):
            event_where = f"{entry_where} <event> #{v_ord}"
            state = _text(_child(event, "state"))
            time_text = _text(_child(event, "time"))
            if state is None or time_text is None:
                raise DropLogError(
                    f"{source}: {event_where}: an <event> needs a non-empty <state> and <time>; "
                    f"expected {XML_FORM}"
                )
            try:
                t = clock(time_text)
            except ValueError as exc:
                raise DropLogError(f"{source}: {event_where}: {exc}") from None
            if events and t < events[-1].time_s:
                raise DropLogError(
                    f"{source}: {event_where}: time {time_text!r} goes backwards (earlier than "
                    f"the modem's previous event at {events[-1].where}); events must be in "
                    "time order"
                )
            events.append(_Event(event_where, state.lower(), t))
    return _Connection(modem, group, events)


def _parse_xml_root(data: bytes, source: str) -> ET.Element:
    parser = ET.XMLParser(target=_NoDoctypeBuilder())
    try:
        parser.feed(data)
        return parser.close()
    except _DoctypeRejected:
        raise DropLogError(
            f"{source}: document type declarations (<!DOCTYPE ...>) are not accepted; "
            f"expected {XML_FORM}"
        ) from None
    except (LookupError, ValueError) as exc:
        # expat asks Python's codecs for the declared encoding: an unknown name is a
        # LookupError, a codec that cannot serve a parser a ValueError.
        raise DropLogError(
            f"{source}: the XML declaration names an encoding farlink cannot read ({exc}); "
            "save the log as UTF-8 or UTF-16, or name a standard encoding"
        ) from None
    except ET.ParseError as exc:
        line, column = exc.position
        reason = str(exc).rsplit(": line", 1)[0]
        raise DropLogError(
            f"{source}: line {line}, column {column}: malformed XML ({reason}); expected {XML_FORM}"
        ) from None


def _end_of_log(
    connections: list[_Connection], end_time: str | float | None, clock: _Clock, source: str
) -> dict[object, float]:
    """The time each connection's observation ends, keyed by connection group."""
    ends: dict[object, float] = {}
    for conn in connections:
        if conn.events:
            last = conn.events[-1].time_s
            ends[conn.group] = max(ends.get(conn.group, last), last)
    if end_time is None:
        return ends
    if isinstance(end_time, str):
        try:
            end = clock(end_time)
        except ValueError as exc:
            raise DropLogError(f"{source}: end time: {exc}") from None
    else:
        end = float(end_time)
        if not math.isfinite(end):
            raise DropLogError(f"{source}: end time {end_time!r} is not finite")
    latest = max(ends.values(), default=-math.inf)
    if end < latest:
        raise DropLogError(
            f"{source}: end time {end_time!r} is earlier than the last event of the log"
        )
    return dict.fromkeys(ends, end)


def parse_xml_log(
    data: bytes | str, source: str = "<xml>", *, end_time: str | float | None = None
) -> DropLog:
    """Parse a KUMICS XML connection database (see the module docstring).

    Args:
        data: the document (bytes honour the encoding declaration, e.g. ``utf-16``).
        source: a name for messages and :attr:`DropLog.source`.
        end_time: when the observation ended (a time in the file's form, or seconds on the log's
            clock); default: each MLPPP connection's last event.
    """
    root = _parse_xml_root(data, source)
    if _local(root.tag) == "connection":
        elements = [root]
    else:
        elements = [el for el in root.iter() if _local(el.tag) == "connection"]
    if not elements:
        raise DropLogError(
            f"{source}: root <{_local(root.tag)}> holds no <connection> element; "
            f"expected {XML_FORM}"
        )
    clock = _Clock()
    connections = [
        _read_connection(el, ordinal, clock, source) for ordinal, el in enumerate(elements, 1)
    ]
    ends = _end_of_log(connections, end_time, clock, source)

    intervals: list[float] = []
    censored = 0.0
    drop_times: dict[str, list[float]] = {}
    connect_times: dict[str, list[float]] = {}
    for conn in connections:
        drops = drop_times.setdefault(conn.modem, [])
        connects = connect_times.setdefault(conn.modem, [])
        up_since: float | None = None
        for event in conn.events:
            if event.state == "connected":
                if up_since is None:
                    up_since = event.time_s
                    connects.append(event.time_s)
            elif event.state == "dropped":
                if up_since is None:
                    raise DropLogError(
                        f"{source}: {event.where}: state 'dropped' while the modem is not up "
                        "(no 'connected' event since its last drop or since the connection "
                        "started); a drop needs a preceding 'connected' event"
                    )
                intervals.append(event.time_s - up_since)
                drops.append(event.time_s)
                up_since = None
            elif up_since is not None:
                censored += event.time_s - up_since
                up_since = None
        if up_since is not None:
            censored += ends[conn.group] - up_since

    intervals_s = np.asarray(intervals, dtype=float)
    return DropLog(
        modems=tuple(drop_times),
        intervals_s=intervals_s,
        exposure_s=float(intervals_s.sum() + censored),
        drops=int(intervals_s.size),
        source=source,
        censoring="time",
        drop_times_s={m: np.asarray(ts, dtype=float) for m, ts in drop_times.items()},
        connect_times_s={m: np.asarray(ts, dtype=float) for m, ts in connect_times.items()},
    )


# --------------------------------------------------------------------------------------------
# files


_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


def _looks_like_xml(path: Path, data: bytes) -> bool:
    suffix = path.suffix.lower()
    if suffix == ".xml":
        return True
    if suffix in {".csv", ".tsv", ".txt"}:
        return False
    if data.startswith(_UTF16_BOMS):
        return True
    return data.removeprefix(b"\xef\xbb\xbf").lstrip().startswith(b"<")


def read_drop_log(
    path: str | os.PathLike[str],
    *,
    format: str | None = None,
    end_time: str | float | None = None,
) -> DropLog:
    """Read a call-drop log from a CSV or KUMICS XML file (see the module docstring).

    Args:
        path: the file.
        format: ``"csv"`` or ``"xml"``; default: ``.xml`` files and files starting with ``<``
            are XML, others CSV.
        end_time: XML only: when the observation ended (see :func:`parse_xml_log`).

    Raises:
        DropLogError: the file cannot be read or is not a valid log; the message says where.
    """
    if format not in (None, "csv", "xml"):
        raise ValueError(f"format must be 'csv', 'xml' or None, not {format!r}")
    file = Path(path)
    source = str(file)
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise DropLogError(f"{source}: cannot read the file ({exc.strerror or exc})") from None
    kind = format or ("xml" if _looks_like_xml(file, data) else "csv")
    if kind == "xml":
        return parse_xml_log(data, source, end_time=end_time)
    if end_time is not None:
        raise ValueError("end_time applies to XML connection databases only")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DropLogError(
            f"{source}: byte {exc.start} is not UTF-8 text; expected {CSV_FORM}"
        ) from None
    return parse_csv_log(text, source)
