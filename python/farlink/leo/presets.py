"""The presets of ``farlink leo``, every number with its source (docs/leo.md, "Presets")."""

from __future__ import annotations

from dataclasses import dataclass

from farlink.leo.orbits import Shell

__all__ = ["PRESETS", "Place", "Preset"]


@dataclass(frozen=True)
class Place:
    name: str
    lat_deg: float
    lon_deg: float
    alt_m: float


@dataclass(frozen=True)
class Preset:
    shell: Shell
    terminal: Place
    ground: Place
    min_elevation_deg: float
    policy: str  # "slots", "highest" or "sticky" (schedule.POLICIES)
    slot_s: float
    path: str  # "bent-pipe" or "isl"
    rate_bps: float
    source: str


PRESETS = {
    # Starlink's first shell as filed with the FCC (SAT-MOD-20190830-00087, as commonly cited:
    # 1,584 satellites, 72 planes of 22, 550 km, 53 degrees); Walker phasing F is not published:
    # F = 17 is an assumption. Minimum elevation 25 degrees: the same filing. 15 s slots:
    # Tanveer et al. (CoNEXT 2023, "Making Sense of Constellations") and Huston (APNIC blog, 2024).
    "starlink-like": Preset(
        shell=Shell(550e3, 53.0, 72, 22, 17, name_prefix="SL"),
        terminal=Place("Lawrence, Kansas", 38.9717, -95.2353, 300.0),
        ground=Place("gateway 300 km west (assumed)", 38.9717, -98.6900, 450.0),
        min_elevation_deg=25.0,
        policy="slots",
        slot_s=15.0,
        path="bent-pipe",
        rate_bps=100e6,
        source="docs/leo.md#starlink-like",
    ),
    # Iridium (seed 000, Table 2.2: 66 satellites, 6 planes of 11, 780 km, 86.4 degrees, minimum
    # elevation 8.2 degrees, 2.4 kbps a channel): a Walker star, co-rotating planes 31.6 degrees
    # apart and a 22 degree seam (Nissen, SeeSat-L 1998/1999); adjacent planes half a slot apart
    # (F = 3, assumed). Seed 000's link: Summit camp, Greenland, to the University of Kansas, each
    # end on its own satellite (seed 000, sec. 5.3: "two different satellites connect the Kansas and
    # Greenland sites"), joined through Iridium's inter-satellite links.
    "iridium-leo": Preset(
        shell=Shell(780e3, 86.4, 6, 11, 3, raan_spacing_deg=31.6, name_prefix="IR"),
        terminal=Place("Summit camp, Greenland", 72.5796, -38.4592, 3216.0),
        ground=Place("Lawrence, Kansas", 38.9717, -95.2353, 300.0),
        min_elevation_deg=8.2,
        policy="highest",
        slot_s=15.0,
        path="isl",
        rate_bps=2400.0,
        source="docs/leo.md#iridium-leo",
    ),
}
