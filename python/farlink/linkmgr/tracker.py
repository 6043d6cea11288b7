"""Fold an event log into the bundle's state: what every reader of the log needs.

:class:`Tracker` takes events one at a time in the order of writing (so the dashboard can tail a
growing log with the same code the offline commands use) and keeps each member's state, signal,
dials and drops, the primary, the uptime accumulators and the byte counters.

Rules (docs/linkmgr.md, "The event log" and "Reading the log"):

* A member is *up* from a ``state`` event ``connected`` to its next ``state`` event. The uptime
  clock runs from the first ``daemon`` event (from the first event of a log that has none) to the
  last event; between two events the bundle's state is the one after the earlier event.
* A ``daemon`` event ``start`` or ``stop`` ends every member's up-period: a stopped daemon holds
  no calls and a fresh start dials from idle. ``resume`` keeps the states the log last showed
  (the daemon restored them from a snapshot).
* A call drop ends an up-period: the ``drop`` event, or a ``state`` event ``dropped`` when the
  writer logged no ``drop`` first; one drop per up-period. Up-periods that end otherwise (a hold,
  a stop, the end of the log) are exposure without a drop, as in seed 000 section 5.3.
* Wall-clock times that step backwards are held at the latest time seen, so no interval is
  negative.
* Byte counters are cumulative since the daemon's ``start``/``resume``; a counter that restarts
  (or goes down) continues from its previous total.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from farlink.calldrops.log import DropLog
from farlink.linkmgr.eventlog import Event

__all__ = ["MAX_THROUGHPUT_POINTS", "MAX_TIMELINE_SEGMENTS", "Member", "Tracker"]

MAX_TIMELINE_SEGMENTS = 2000
"""State segments kept per member for the timeline (the oldest go first)."""
MAX_THROUGHPUT_POINTS = 4000
"""Byte-counter points kept for the throughput graph (thinned by half when reached)."""
_POINT_SPACING_S = 1.0  # the daemon samples counters every second; closer points are merged


@dataclass
class Member:
    """What the log says about one member so far."""

    index: int
    name: str
    state: str = "idle"
    state_since_s: float | None = None
    signal_bars: float | None = None
    reply_s: float | None = None
    handover: bool = False
    dials: int = 0
    dials_connected: int = 0
    drops: int = 0
    up_s: float = 0.0  # connected time of the up-periods already ended (see Tracker.up_s)
    tx_bytes: float = 0.0
    rx_bytes: float = 0.0
    last_error: str | None = None
    held: bool = False
    up_since_s: float | None = None  # start of the current up-period for the drop fit
    intervals_s: list[float] = field(default_factory=list)
    censored_s: float = 0.0
    drop_times_s: list[float] = field(default_factory=list)
    connect_times_s: list[float] = field(default_factory=list)
    segments: list[tuple[float, str]] = field(default_factory=list)

    @property
    def up(self) -> bool:
        return self.state == "connected"


class _Counter:
    """A cumulative counter that survives restarts of the daemon's count."""

    __slots__ = ("base", "last")

    def __init__(self) -> None:
        self.base = 0.0
        self.last = 0.0

    def update(self, value: float) -> float:
        """Take a sample; return how much the total grew."""
        before = self.base + self.last
        if value < self.last:
            self.base += self.last
        self.last = value
        return self.base + self.last - before

    def restart(self) -> None:
        self.base += self.last
        self.last = 0.0

    @property
    def total(self) -> float:
        return self.base + self.last


class Tracker:
    """The bundle as seen through its log; feed it events with :meth:`apply`.

    Attributes:
        members: one :class:`Member` per member number.
        primary: the current primary member's number, or None.
        first_s, last_s: the uptime clock's start and the last event's time (None before).
        all_up_s, any_up_s: seconds with every member up and with at least one up.
        primary_drops: call drops of the member that was primary at the time.
        last_id: id of the last event applied.
        events: number of events applied.
    """

    def __init__(self, modem_names: Iterable[str] = ()) -> None:
        self.members: list[Member] = [Member(i, n) for i, n in enumerate(modem_names)]
        self.primary: int | None = None
        self.first_s: float | None = None
        self.last_s: float | None = None
        self.all_up_s = 0.0
        self.any_up_s = 0.0
        self.primary_drops = 0
        self.up_count = 0
        self.last_id = 0
        self.events = 0
        self.daemon_state: str | None = None
        self.errors = 0
        self._counters: dict[tuple[str, int | None], _Counter] = {}
        self._bundle_counted = False
        self._bundle_sums = [0.0, 0.0]  # tx, rx totals of the bundle's own counters
        self._member_sums = [0.0, 0.0]  # and of the members' counters
        self.throughput_points: list[tuple[float, float, float]] = []  # (t, tx, rx) totals

    # -- members ---------------------------------------------------------------------------

    def member(self, index: int) -> Member:
        """The member with this number, created (named ``modem<N>``) if new."""
        while len(self.members) <= index:
            self.members.append(Member(len(self.members), f"modem{len(self.members)}"))
        return self.members[index]

    def rename(self, names: Iterable[str]) -> None:
        """Take member names learnt later (a log's meta table read after its first events)."""
        for index, name in enumerate(names):
            self.member(index).name = name

    # -- folding ---------------------------------------------------------------------------

    def apply_all(self, events: Iterable[Event]) -> None:
        for event in events:
            self.apply(event)

    def apply(self, event: Event) -> None:
        """Fold one event (events must come in the order of writing)."""
        t = event.t_unix_s if self.last_s is None else max(event.t_unix_s, self.last_s)
        self._advance(t)
        self.last_id = event.id
        self.events += 1
        handler = _HANDLERS.get(event.kind)
        if handler is not None:
            handler(self, event, t)

    def _advance(self, t: float) -> None:
        # The daemon writes its 'daemon' event first, so the clock starts at the first event.
        if self.first_s is None:
            self.first_s = t
        elif self.last_s is not None and t > self.last_s and self.up_count:
            dt = t - self.last_s
            self.any_up_s += dt
            if self.up_count == len(self.members):
                self.all_up_s += dt
        self.last_s = t

    def _set_state(self, m: Member, state: str, t: float) -> None:
        if m.up and state != "connected":
            self._end_up_period(m, t, dropped=state == "dropped")
            m.up_s += t - (t if m.state_since_s is None else m.state_since_s)
            self.up_count -= 1
        elif state == "connected" and not m.up:
            self.up_count += 1
        if state == "connected" and m.up_since_s is None:
            m.up_since_s = t
            m.connect_times_s.append(t)
        if state != m.state or not m.segments:
            m.segments.append((t, state))
            if len(m.segments) > MAX_TIMELINE_SEGMENTS:
                del m.segments[: len(m.segments) - MAX_TIMELINE_SEGMENTS]
            m.state_since_s = t
        m.state = state

    def _end_up_period(self, m: Member, t: float, *, dropped: bool) -> None:
        if m.up_since_s is None:
            return
        if dropped:
            m.intervals_s.append(t - m.up_since_s)
            m.drop_times_s.append(t)
            m.drops += 1
            if self.primary == m.index:
                self.primary_drops += 1
        else:
            m.censored_s += t - m.up_since_s
        m.up_since_s = None

    def _on_daemon(self, event: Event, t: float) -> None:
        self.daemon_state = event.detail
        if event.detail in ("start", "stop"):
            for m in self.members:
                self._set_state(m, "idle", t)
            self.primary = None
        if event.detail in ("start", "resume"):
            for counter in self._counters.values():
                counter.restart()

    def _on_state(self, event: Event, t: float) -> None:
        if event.modem is None or event.state is None:
            return
        self._set_state(self.member(event.modem), event.state, t)

    def _on_dial(self, event: Event, t: float) -> None:
        if event.modem is not None:
            self.member(event.modem).dials += 1

    def _on_dial_result(self, event: Event, t: float) -> None:
        if event.modem is not None and event.value == 1:
            self.member(event.modem).dials_connected += 1

    def _on_drop(self, event: Event, t: float) -> None:
        if event.modem is not None:
            self._end_up_period(self.member(event.modem), t, dropped=True)

    def _on_signal(self, event: Event, t: float) -> None:
        if event.modem is None:
            return
        m = self.member(event.modem)
        m.signal_bars = event.value
        detail = event.detail_json()
        if isinstance(detail, dict):
            reply = detail.get("reply_s")
            finite = isinstance(reply, (int, float)) and math.isfinite(reply)
            m.reply_s = float(reply) if finite else None  # JSON allows Infinity; JSON out not
            m.handover = detail.get("handover") is True

    def _on_primary(self, event: Event, t: float) -> None:
        self.primary = event.modem
        if event.modem is not None:
            self.member(event.modem)

    def _on_bytes(self, event: Event, t: float) -> None:
        if event.value is None:
            return
        key = (event.kind, event.modem)
        counter = self._counters.get(key)
        if counter is None:
            counter = self._counters[key] = _Counter()
        grown = counter.update(event.value)
        column = event.kind == "rx_bytes"
        if event.modem is None:
            self._bundle_counted = True
            self._bundle_sums[column] += grown
        else:
            self._member_sums[column] += grown
            m = self.member(event.modem)
            if column:
                m.rx_bytes = counter.total
            else:
                m.tx_bytes = counter.total
        self._add_throughput_point(t)

    def _on_hold(self, event: Event, t: float) -> None:
        if event.modem is not None:
            self.member(event.modem).held = event.kind == "hold"

    def _on_error(self, event: Event, t: float) -> None:
        self.errors += 1
        if event.modem is not None:
            self.member(event.modem).last_error = event.detail

    # -- byte counters ---------------------------------------------------------------------

    def bundle_bytes(self) -> tuple[float, float]:
        """(tx, rx) bytes of the bundle so far: its own counters, else the members' sum."""
        sums = self._bundle_sums if self._bundle_counted else self._member_sums
        return sums[0], sums[1]

    def _add_throughput_point(self, t: float) -> None:
        tx, rx = self.bundle_bytes()
        points = self.throughput_points
        # Replace the last point while it is less than the spacing after the one before it
        # (or at this very time: tx and rx are sampled together); else start a new point.
        if points and (
            t == points[-1][0] or (len(points) >= 2 and t - points[-2][0] < _POINT_SPACING_S)
        ):
            points[-1] = (t, tx, rx)
        else:
            points.append((t, tx, rx))
        if len(points) > MAX_THROUGHPUT_POINTS:
            self.throughput_points = points[::2] if len(points) % 2 else [*points[::2], points[-1]]

    # -- summaries -------------------------------------------------------------------------

    def up_s(self, m: Member) -> float:
        """The member's connected time so far, its current up-period included."""
        if m.up and m.state_since_s is not None and self.last_s is not None:
            return m.up_s + self.last_s - m.state_since_s
        return m.up_s

    @property
    def duration_s(self) -> float:
        """Length of the uptime clock so far."""
        if self.first_s is None or self.last_s is None:
            return 0.0
        return max(0.0, self.last_s - self.first_s)

    def drop_log(self, source: str) -> DropLog:
        """The members' up-periods as a time-censored :class:`~farlink.calldrops.log.DropLog`."""
        end = self.last_s or 0.0
        intervals = [x for m in self.members for x in m.intervals_s]
        censored = sum(m.censored_s for m in self.members)
        censored += sum(end - m.up_since_s for m in self.members if m.up_since_s is not None)
        intervals_s = np.asarray(intervals, dtype=float)
        return DropLog(
            modems=tuple(m.name for m in self.members),
            intervals_s=intervals_s,
            exposure_s=float(intervals_s.sum() + censored),
            drops=int(intervals_s.size),
            source=source,
            censoring="time",
            drop_times_s={m.name: np.asarray(m.drop_times_s, float) for m in self.members},
            connect_times_s={m.name: np.asarray(m.connect_times_s, float) for m in self.members},
        )


_HANDLERS = {
    "daemon": Tracker._on_daemon,
    "state": Tracker._on_state,
    "dial": Tracker._on_dial,
    "dial_result": Tracker._on_dial_result,
    "drop": Tracker._on_drop,
    "signal": Tracker._on_signal,
    "primary": Tracker._on_primary,
    "tx_bytes": Tracker._on_bytes,
    "rx_bytes": Tracker._on_bytes,
    "hold": Tracker._on_hold,
    "release": Tracker._on_hold,
    "error": Tracker._on_error,
}
