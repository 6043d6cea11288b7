"""Uptime of a bundle from its event log, as seed 001 reports its long tests.

Seed 001 gives, for the 12-hour and 32-hour Greenland tests, the percentage of time with full
capacity (all eight members up: 89 % and 85 %) and with at least one member up (98 % and 96 %),
and the number of call drops of the primary modem. :func:`uptime_report` measures the same from a
log by the rules of :mod:`farlink.linkmgr.tracker`, plus per member its uptime, drops and dials.
A short log still gets a report; its fractions are only as good as its length.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from typing import Any

from farlink.calldrops.log import DropLog
from farlink.linkmgr.eventlog import EventLog
from farlink.linkmgr.tracker import Tracker

__all__ = [
    "MemberUptime",
    "UptimeReport",
    "drop_log_from_event_log",
    "read_tracker",
    "report_from_tracker",
    "uptime_report",
]


@dataclass(frozen=True)
class MemberUptime:
    """One member's figures over the log."""

    modem: str
    uptime_fraction: float
    up_s: float
    drops: int
    dials: int
    dials_connected: int
    state: str


@dataclass(frozen=True)
class UptimeReport:
    """Bundle uptime over a log (fractions of ``duration_s``; 0 for an empty clock)."""

    log: str
    duration_s: float
    events: int
    all_up_fraction: float
    any_up_fraction: float
    all_up_s: float
    any_up_s: float
    drops: int
    primary_drops: int
    dials: int
    members: tuple[MemberUptime, ...]

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["members"] = [asdict(m) for m in self.members]
        return out


def read_tracker(path: str | os.PathLike[str]) -> Tracker:
    """Fold a whole log into a :class:`~farlink.linkmgr.tracker.Tracker`."""
    with EventLog(path) as log:
        tracker = Tracker(log.modem_names)
        tracker.apply_all(log.iter_events())
    return tracker


def _fraction(part: float, whole: float) -> float:
    return part / whole if whole > 0 else 0.0


def report_from_tracker(tracker: Tracker, source: str) -> UptimeReport:
    """The :class:`UptimeReport` of what a tracker has seen so far."""
    duration = tracker.duration_s
    members = tuple(
        MemberUptime(
            modem=m.name,
            uptime_fraction=_fraction(tracker.up_s(m), duration),
            up_s=tracker.up_s(m),
            drops=m.drops,
            dials=m.dials,
            dials_connected=m.dials_connected,
            state=m.state,
        )
        for m in tracker.members
    )
    return UptimeReport(
        log=source,
        duration_s=duration,
        events=tracker.events,
        all_up_fraction=_fraction(tracker.all_up_s, duration),
        any_up_fraction=_fraction(tracker.any_up_s, duration),
        all_up_s=tracker.all_up_s,
        any_up_s=tracker.any_up_s,
        drops=sum(m.drops for m in members),
        primary_drops=tracker.primary_drops,
        dials=sum(m.dials for m in members),
        members=members,
    )


def uptime_report(path: str | os.PathLike[str]) -> UptimeReport:
    """Read a log and measure its uptime (raises EventLogError on a bad file)."""
    return report_from_tracker(read_tracker(path), str(path))


def drop_log_from_event_log(path: str | os.PathLike[str]) -> DropLog:
    """The members' up-periods and call drops of an event log, for :mod:`farlink.calldrops.fit`."""
    return read_tracker(path).drop_log(str(path))
