"""``farlink leo``: link schedules from orbital geometry (docs/leo.md).

A Walker constellation (``orbits.py``) or satellites from TLE files (``tle.py``), a terminal and a
ground station, the serving satellite chosen by a policy, and the path's one-way delay, up/down
state and capacity written as a schedule (``schedule.py``) in the CSV columns the core's link
schedules are to read. Presets with their sources: ``presets.py``.
"""

from farlink.leo.orbits import Shell
from farlink.leo.presets import PRESETS, Place, Preset
from farlink.leo.schedule import COLUMNS, Capacity, LeoConfig, Schedule, build_schedule
from farlink.leo.tle import format_tle, read_tles

__all__ = [
    "COLUMNS",
    "PRESETS",
    "Capacity",
    "LeoConfig",
    "Place",
    "Preset",
    "Schedule",
    "Shell",
    "build_schedule",
    "config_of_preset",
    "format_tle",
    "read_tles",
]


def config_of_preset(name: str, **changes) -> LeoConfig:
    """A preset's configuration, with ``changes`` (LeoConfig fields) applied."""
    from datetime import UTC, datetime

    p = PRESETS[name]
    base = {
        "epoch": datetime(2024, 1, 1, tzinfo=UTC),
        "terminal": p.terminal,
        "ground": p.ground,
        "duration_s": 600.0,
        "shell": p.shell,
        "min_elevation_deg": p.min_elevation_deg,
        "policy": p.policy,
        "slot_s": p.slot_s,
        "path": p.path,
        "capacity": Capacity("constant", p.rate_bps),
    }
    base.update(changes)
    return LeoConfig(**base)
