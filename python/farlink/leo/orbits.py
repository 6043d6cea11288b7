"""Satellite positions from mean orbital elements: Walker constellations, propagated.

The orbit model (docs/leo.md, "The orbit model"): circular mean orbits whose elements mean what a
TLE's mean elements mean, so that a Walker satellite and a TLE made from its elements are the
same orbit (tests/test_leo.py checks it against ``sgp4`` within 1 km over 10 minutes).

- Secular drift, first order in J2: the node turns (-1.5 n J2 (Re/a)^2 cos i, about -4.5 degrees a
  day at 550 km, 53 degrees: over a schedule of hours it moves a satellite's ground track by tens
  of kilometres) and the argument of latitude runs slightly faster or slower than n. These are
  the only effects that grow with time at the scale of a link schedule.
- Two bounded corrections, kept only so that the elements are TLE mean elements: J3's long-period
  eccentricity (a "circular" mean orbit is eccentric by about 1e-3, 6 km of radius) and J2's
  short-period terms (a few km). Without them a Walker satellite sits 12-15 km from the same
  elements through SGP4; the link delay moves by under 50 microseconds either way.
- Left out: drag, J4 and above, the Sun and the Moon. Over the minutes to hours of a link schedule
  they move a LEO satellite by metres to a few kilometres (drag over days), under 10 us of delay.

Frames: ECI is the true-equator, mean-equinox frame of SGP4 (TEME); ECEF is ECI turned by the
Greenwich mean sidereal time (IAU 1982, sgp4's ``gstime``, UT1 taken equal to UTC: under 0.9 s,
under 0.5 km on the ground), polar motion ignored. Gravity constants are WGS-72's, the ones TLE
mean elements are defined with; ground places are WGS-84 geodetic.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np
from sgp4.api import jday
from sgp4.propagation import gstime

__all__ = [
    "EARTH_RATE_RAD_S",
    "Elements",
    "Shell",
    "ecef_of_places",
    "eci_to_ecef",
    "elevation_rad",
    "gmst_rad",
    "propagate_eci_m",
]

# WGS-72 (Hoots and Roehrich, Spacetrack Report No. 3, the constants of TLE mean elements)
MU_KM3_S2 = 398600.8
RE_KM = 6378.135
J2 = 0.001082616
J3 = -0.00000253881
EARTH_RATE_RAD_S = 7.292115146706979e-5  # sidereal rotation (sgp4's 1.0027379093 rev/day)
# WGS-84 ellipsoid for ground places
WGS84_A_M = 6378137.0
WGS84_F = 1 / 298.257223563


@dataclass(frozen=True)
class Shell:
    """A Walker constellation: ``planes`` planes of ``per_plane`` satellites at one altitude.

    ``phasing`` is Walker's F: a satellite in plane p+1 is F * 360/(planes * per_plane) degrees of
    argument of latitude ahead of its neighbour in plane p. ``raan_spacing_deg`` is the angle
    between adjacent planes' ascending nodes: 360/planes for a Walker delta (None), less for a
    Walker star (Iridium: 31.6 degrees, so that its six planes span 180 degrees with a 22 degree
    seam between the counter-rotating first and last planes).
    """

    altitude_m: float
    inclination_deg: float
    planes: int
    per_plane: int
    phasing: int
    raan_spacing_deg: float | None = None
    name_prefix: str = "S"

    def __post_init__(self) -> None:
        if not self.altitude_m > 0:
            raise ValueError(f"altitude must be above zero, got {self.altitude_m} m")
        if not 0 <= self.inclination_deg <= 180:
            raise ValueError(f"inclination must be in [0, 180] degrees, got {self.inclination_deg}")
        if self.planes < 1 or self.per_plane < 1:
            raise ValueError("planes and satellites per plane must be at least 1")
        if not 0 <= self.phasing < max(self.planes, 1):
            raise ValueError(f"phasing F must be in [0, planes - 1], got {self.phasing}")

    def elements(self, raan0_deg: float = 0.0) -> Elements:
        """Every satellite's mean elements at the epoch, plane by plane."""
        spacing = 360.0 / self.planes if self.raan_spacing_deg is None else self.raan_spacing_deg
        plane = np.repeat(np.arange(self.planes), self.per_plane)
        slot = np.tile(np.arange(self.per_plane), self.planes)
        total = self.planes * self.per_plane
        raan = np.radians(raan0_deg + plane * spacing)
        u = np.radians(slot * 360.0 / self.per_plane + plane * self.phasing * 360.0 / total)
        ids = [f"{self.name_prefix}{p:02d}-{s:02d}" for p, s in zip(plane, slot, strict=True)]
        return Elements(
            ids=ids,
            semi_major_km=np.full(total, RE_KM + self.altitude_m / 1000.0),
            inclination_rad=np.full(total, math.radians(self.inclination_deg)),
            raan_rad=raan % (2 * math.pi),
            arg_latitude_rad=u % (2 * math.pi),
            plane=plane,
            slot=slot,
        )


@dataclass(frozen=True)
class Elements:
    """Mean elements of circular orbits at the epoch (one entry per satellite)."""

    ids: list[str]
    semi_major_km: np.ndarray
    inclination_rad: np.ndarray
    raan_rad: np.ndarray
    arg_latitude_rad: np.ndarray
    plane: np.ndarray
    slot: np.ndarray

    @property
    def mean_motion_rad_s(self) -> np.ndarray:
        """Brouwer's mean motion of the mean semi-major axis (Kepler's third law)."""
        return np.sqrt(MU_KM3_S2 / self.semi_major_km**3)


def _secular(el: Elements, t_s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Node and argument of latitude at ``t_s`` (rows) for every satellite (columns): first-order
    J2 secular rates for e = 0 (node: -1.5 n J2 (Re/p)^2 cos i; mean anomaly plus perigee:
    n [1 + 0.75 J2 (Re/p)^2 ((3 cos^2 i - 1) + (5 cos^2 i - 1))])."""
    n = el.mean_motion_rad_s
    k = J2 * (RE_KM / el.semi_major_km) ** 2
    cos_i = np.cos(el.inclination_rad)
    node_rate = -1.5 * n * k * cos_i
    lat_rate = n * (1 + 0.75 * k * ((3 * cos_i**2 - 1) + (5 * cos_i**2 - 1)))
    t = np.asarray(t_s, dtype=float)[:, None]
    return el.raan_rad + node_rate * t, el.arg_latitude_rad + lat_rate * t


def propagate_eci_m(el: Elements, t_s: np.ndarray) -> np.ndarray:
    """Positions in ECI (TEME), metres, shape (times, satellites, 3), ``t_s`` after the epoch."""
    node, u = _secular(el, t_s)
    a = el.semi_major_km / RE_KM  # Earth radii, as the periodic terms are written
    inc = el.inclination_rad
    cos_i, sin_i = np.cos(inc), np.sin(inc)
    # J3 long period: a mean e = 0 orbit has the eccentricity vector (0, ayn) (the frozen value).
    ayn = -0.5 * (J3 / J2) * sin_i / a
    ecc_anomaly = u.copy()
    for _ in range(4):  # Kepler's equation in equinoctial form, e ~ 1e-3: converges at once
        ecc_anomaly = u - ayn * np.cos(ecc_anomaly)
    r_long = a * (1 - ayn * np.sin(ecc_anomaly))
    esine = -ayn * np.cos(ecc_anomaly)
    beta = np.sqrt(1 - ayn**2)
    sin_u = a / r_long * (np.sin(ecc_anomaly) - ayn)
    cos_u = a / r_long * (np.cos(ecc_anomaly) + ayn * esine / (1 + beta))
    lat = np.arctan2(sin_u, cos_u)
    # J2 short period (first order, Brouwer), in radius, latitude argument, node, inclination.
    p = a * (1 - ayn**2)
    h1 = 0.5 * J2 / p
    h2 = h1 / p
    sin2, cos2 = np.sin(2 * lat), np.cos(2 * lat)
    radius = r_long * (1 - 1.5 * h2 * beta * (3 * cos_i**2 - 1)) + 0.5 * h1 * (1 - cos_i**2) * cos2
    lat = lat - 0.25 * h2 * (7 * cos_i**2 - 1) * sin2
    node = node + 1.5 * h2 * cos_i * sin2
    inc = inc + 1.5 * h2 * cos_i * sin_i * cos2
    return _orbit_to_xyz(radius * RE_KM * 1000.0, lat, node, inc)


def _orbit_to_xyz(r_m, lat, node, inc) -> np.ndarray:
    cn, sn, cl, sl, ci, si = (
        np.cos(node),
        np.sin(node),
        np.cos(lat),
        np.sin(lat),
        np.cos(inc),
        np.sin(inc),
    )
    return r_m[..., None] * np.stack([cn * cl - sn * sl * ci, sn * cl + cn * sl * ci, sl * si], -1)


def julian_day(epoch: datetime) -> tuple[float, float]:
    """``epoch`` (made UTC) as sgp4's Julian day: its whole part and its fraction."""
    epoch = epoch.astimezone(UTC)
    return jday(
        epoch.year,
        epoch.month,
        epoch.day,
        epoch.hour,
        epoch.minute,
        epoch.second + epoch.microsecond / 1e6,
    )


def gmst_rad(epoch: datetime, t_s: np.ndarray) -> np.ndarray:
    """Greenwich mean sidereal time ``t_s`` after ``epoch`` (UTC), IAU 1982 (sgp4's gstime)."""
    jd, fr = julian_day(epoch)
    return gstime(jd + fr) + EARTH_RATE_RAD_S * np.asarray(t_s, dtype=float)


def eci_to_ecef(eci_m: np.ndarray, gmst: np.ndarray) -> np.ndarray:
    """Turn ECI positions (times, ..., 3) into the Earth-fixed frame by each time's GMST."""
    c = np.cos(gmst).reshape((-1,) + (1,) * (eci_m.ndim - 2))
    s = np.sin(gmst).reshape(c.shape)
    x, y, z = eci_m[..., 0], eci_m[..., 1], eci_m[..., 2]
    return np.stack([c * x + s * y, -s * x + c * y, z], -1)


def ecef_of_places(lat_deg, lon_deg, alt_m) -> tuple[np.ndarray, np.ndarray]:
    """WGS-84 geodetic places to ECEF metres, and their local up (unit) vectors."""
    lat, lon = np.radians(np.atleast_1d(lat_deg)), np.radians(np.atleast_1d(lon_deg))
    alt = np.atleast_1d(np.asarray(alt_m, dtype=float))
    e2 = WGS84_F * (2 - WGS84_F)
    n = WGS84_A_M / np.sqrt(1 - e2 * np.sin(lat) ** 2)
    up = np.stack([np.cos(lat) * np.cos(lon), np.cos(lat) * np.sin(lon), np.sin(lat)], -1)
    pos = np.stack(
        [
            (n + alt) * np.cos(lat) * np.cos(lon),
            (n + alt) * np.cos(lat) * np.sin(lon),
            (n * (1 - e2) + alt) * np.sin(lat),
        ],
        -1,
    )
    return pos, up


def elevation_rad(sat_ecef_m: np.ndarray, place_m: np.ndarray, up: np.ndarray) -> tuple:
    """Elevation above the place's horizon (geodetic) and slant range (m) of each satellite."""
    rho = sat_ecef_m - place_m
    rng = np.linalg.norm(rho, axis=-1)
    return np.arcsin(np.clip((rho @ up) / rng, -1.0, 1.0)), rng
