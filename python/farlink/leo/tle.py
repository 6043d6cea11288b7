"""Satellites from TLE files through ``sgp4`` (Vallado's SGP4), and TLEs made from elements.

A TLE's mean motion is Kozai's, which SGP4 turns into Brouwer's before it uses it
(Hoots and Roehrich, Spacetrack Report No. 3); :func:`kozai_mean_motion` inverts that step so
that a TLE written from a Walker satellite's elements (:func:`format_tle`) has the same mean
semi-major axis, and so the same orbit, as the built-in propagator (``orbits.py``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
from sgp4.api import WGS72, Satrec, SatrecArray

from farlink.leo.orbits import (
    J2,
    MU_KM3_S2,
    RE_KM,
    Elements,
    Shell,
    julian_day,
    propagate_eci_m,
)

__all__ = ["TleSet", "format_tle", "kozai_mean_motion", "read_tles", "sgp4_gap_km"]

_XKE_PER_MIN = 60.0 / math.sqrt(RE_KM**3 / MU_KM3_S2)  # sqrt(mu) in Earth radii and minutes


def _brouwer_from_kozai(n_kozai_per_min: float, inclination_rad: float) -> float:
    """SGP4's first step: Brouwer's mean motion from a TLE's (Kozai's), e = 0."""
    ak = (_XKE_PER_MIN / n_kozai_per_min) ** (2 / 3)
    d1 = 0.75 * J2 * (3 * math.cos(inclination_rad) ** 2 - 1)
    delta = d1 / ak**2
    adel = ak * (1 - delta**2 - delta * (1 / 3 + 134 * delta**2 / 81))
    return n_kozai_per_min / (1 + d1 / adel**2)


def kozai_mean_motion(n_brouwer_rad_s: float, inclination_rad: float) -> float:
    """The TLE (Kozai) mean motion, rad/min, whose Brouwer mean motion is ``n_brouwer_rad_s``."""
    target = n_brouwer_rad_s * 60.0
    n_kozai = target
    for _ in range(20):  # a contraction: the correction is O(J2), 1e-3 of the value
        n_kozai *= target / _brouwer_from_kozai(n_kozai, inclination_rad)
    return n_kozai


def _checksum(line: str) -> int:
    return sum(int(c) if c.isdigit() else (1 if c == "-" else 0) for c in line) % 10


def format_tle(el: Elements, index: int, epoch: datetime, satnum: int) -> tuple[str, str, str]:
    """Name line and the two TLE lines of satellite ``index``: its mean elements, e = 1e-7 (a TLE
    holds seven digits; its perigee is then the node), zero drag, at ``epoch`` (UTC)."""
    epoch = epoch.astimezone(UTC)
    start = datetime(epoch.year, 1, 1, tzinfo=UTC)
    doy = 1 + (epoch - start) / timedelta(days=1)
    inc = el.inclination_rad[index]
    n_rev_day = kozai_mean_motion(el.mean_motion_rad_s[index], inc) * 1440 / (2 * math.pi)
    line1 = (
        f"1 {satnum:05d}U 00000A   {epoch.year % 100:02d}{doy:012.8f}  .00000000  00000-0 "
        f" 00000-0 0  999"
    )
    line2 = (
        f"2 {satnum:05d} {math.degrees(inc):8.4f} {math.degrees(el.raan_rad[index]):8.4f} 0000001"
        f" {0.0:8.4f} {math.degrees(el.arg_latitude_rad[index]):8.4f} {n_rev_day:11.8f}    0"
    )
    return el.ids[index], line1 + str(_checksum(line1)), line2 + str(_checksum(line2))


@dataclass
class TleSet:
    """Satellites read from TLE text: ids and SGP4 records."""

    ids: list[str]
    records: list[Satrec]

    def latest_epoch(self) -> datetime:
        jd = max(r.jdsatepoch + r.jdsatepochF for r in self.records)
        return datetime(2000, 1, 1, 12, tzinfo=UTC) + timedelta(days=jd - 2451545.0)

    def eci_m(self, epoch: datetime, t_s: np.ndarray) -> np.ndarray:
        """TEME positions, metres, shape (times, satellites, 3); a satellite SGP4 cannot
        propagate at a time (decayed, error code) is put at the Earth's centre: never visible."""
        jd0, fr0 = julian_day(epoch)
        t = np.asarray(t_s, dtype=float)
        err, pos_km, _vel = SatrecArray(self.records).sgp4(np.full(t.shape, jd0), fr0 + t / 86400)
        pos = np.where((err == 0)[..., None], pos_km * 1000.0, 0.0)
        return np.transpose(pos, (1, 0, 2))


def read_tles(path: Path) -> TleSet:
    """Read a TLE file (two-line or three-line sets); a bad set raises ValueError naming its
    line number."""
    try:
        lines = [ln.rstrip() for ln in path.read_text(encoding="utf-8").splitlines()]
    except (OSError, UnicodeDecodeError) as err:
        raise ValueError(f"{path}: cannot read ({err})") from None
    ids, records, name = [], [], None
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        if line.startswith("1 ") and i + 1 < len(lines) and lines[i + 1].startswith("2 "):
            try:
                rec = Satrec.twoline2rv(line, lines[i + 1], WGS72)
            except (ValueError, IndexError) as err:
                raise ValueError(f"{path}:{i + 1}: not a TLE ({err})") from None
            if rec.error:
                raise ValueError(f"{path}:{i + 1}: SGP4 refuses this TLE (error {rec.error})")
            ids.append(name or f"{rec.satnum:05d}")
            records.append(rec)
            name = None
            i += 2
        elif line.startswith(("1 ", "2 ")):
            raise ValueError(f"{path}:{i + 1}: a TLE line without its pair")
        else:
            name = line.strip()[:24]
            i += 1
    if not records:
        raise ValueError(f"{path}: no TLE found (two lines starting '1 ' and '2 ')")
    return TleSet(ids, records)


def sgp4_gap_km(
    shell: Shell, epoch: datetime, indices: list[int], duration_s: float = 600.0
) -> dict[str, float]:
    """Per satellite of ``shell``: the largest distance (km), over ``duration_s`` every 5 s,
    between the built-in propagator and ``sgp4`` on the TLE text :func:`format_tle` writes for
    that satellite (docs/leo.md, "Checked against sgp4")."""
    el = shell.elements()
    t = np.arange(0.0, duration_s + 1e-9, 5.0)
    ours_km = propagate_eci_m(el, t) / 1000.0
    gaps = {}
    for i in indices:
        _name, line1, line2 = format_tle(el, i, epoch, i + 1)
        sat = Satrec.twoline2rv(line1, line2, WGS72)
        err, theirs_km, _v = sat.sgp4_array(
            np.full(t.shape, sat.jdsatepoch), sat.jdsatepochF + t / 86400
        )
        if err.any():
            raise ValueError(f"sgp4 error {int(err.max())} on {el.ids[i]}")
        gaps[el.ids[i]] = float(np.linalg.norm(ours_km[:, i] - theirs_km, axis=1).max())
    return gaps
