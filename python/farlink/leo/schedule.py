"""A link schedule from orbital geometry: who serves the terminal, the path's delay, up or down.

The model and its assumptions are docs/leo.md's. In short: satellites' positions every ``step_s``
(and at slot boundaries); the serving satellite chosen by a policy; one-way delay = path length /
c + processing; an outage of ``outage_s`` after each hand-off; capacity drawn once per serving
period (a slot, or a satellite's stay) from a seeded distribution.
"""

from __future__ import annotations

import io
import itertools
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import shortest_path

from farlink.leo.orbits import (
    Shell,
    ecef_of_places,
    eci_to_ecef,
    elevation_rad,
    gmst_rad,
    propagate_eci_m,
)
from farlink.leo.presets import Place
from farlink.leo.tle import TleSet

__all__ = ["COLUMNS", "Capacity", "LeoConfig", "Schedule", "build_schedule"]

C_M_S = 299_792_458.0
COLUMNS = ("at_s", "delay_s", "rate_bps", "up", "satellite")
POLICIES = ("slots", "highest", "sticky")
NO_SATELLITE = "-"


@dataclass(frozen=True)
class Capacity:
    """Capacity of a serving period: ``constant`` (a), ``uniform`` on [a, b], or ``lognormal``
    with median a and log-standard-deviation b; bit/s."""

    kind: str = "constant"
    a: float = 100e6
    b: float = 0.0

    def __post_init__(self) -> None:
        if self.kind not in ("constant", "uniform", "lognormal"):
            raise ValueError(f"capacity kind must be constant, uniform or lognormal: {self.kind}")
        if not self.a > 0:
            raise ValueError("capacity must be above zero")
        if self.kind == "uniform" and not self.b >= self.a:
            raise ValueError("uniform capacity: the upper bound must not be below the lower")
        if self.kind == "lognormal" and not self.b >= 0:
            raise ValueError("lognormal capacity: sigma must not be negative")

    def draw(self, rng: np.random.Generator, count: int) -> np.ndarray:
        if self.kind == "uniform":
            return rng.uniform(self.a, self.b, count)
        if self.kind == "lognormal":
            return self.a * np.exp(self.b * rng.standard_normal(count))
        return np.full(count, self.a)


@dataclass(frozen=True)
class LeoConfig:
    epoch: datetime
    terminal: Place
    ground: Place
    duration_s: float
    shell: Shell | None = None
    tles: TleSet | None = None
    min_elevation_deg: float = 25.0
    policy: str = "slots"
    slot_s: float = 15.0
    step_s: float = 1.0
    path: str = "bent-pipe"
    outage_s: float = 0.0
    processing_s: float = 0.0
    capacity: Capacity = field(default_factory=Capacity)
    seed: int = 1


@dataclass
class Schedule:
    rows: list[tuple[float, float, int, int, str]]
    summary: dict

    def to_csv(self) -> str:
        out = io.StringIO()
        out.write(",".join(COLUMNS) + "\n")
        for at, delay, rate, up, sat in self.rows:
            out.write(f"{at:.3f},{delay:.9f},{rate},{up},{sat}\n")
        return out.getvalue()


def _check(cfg: LeoConfig) -> None:
    if cfg.policy not in POLICIES:
        raise ValueError(f"policy must be one of {', '.join(POLICIES)}, got {cfg.policy!r}")
    if cfg.path not in ("bent-pipe", "isl"):
        raise ValueError(f"path must be bent-pipe or isl, got {cfg.path!r}")
    if cfg.path == "isl" and cfg.shell is None:
        raise ValueError("the isl path needs a Walker shell (its +Grid links), not TLEs")
    if not (cfg.duration_s > 0 and cfg.step_s > 0 and cfg.slot_s > 0):
        raise ValueError("duration, step and slot must be above zero")
    if cfg.outage_s < 0 or cfg.processing_s < 0:
        raise ValueError("outage and processing delay must not be negative")
    if not -90 < cfg.min_elevation_deg < 90:
        raise ValueError("minimum elevation must be in (-90, 90) degrees")
    samples = (cfg.duration_s / cfg.step_s + 1) * _count(cfg)
    if samples > MAX_SAMPLE_SATELLITES:
        raise ValueError(
            f"{cfg.duration_s / cfg.step_s + 1:.0f} delay samples of {_count(cfg)} satellites "
            f"is over {MAX_SAMPLE_SATELLITES:,} positions: use a longer --step or a shorter "
            "--duration"
        )


def _sample_times(cfg: LeoConfig) -> np.ndarray:
    times = np.arange(0.0, cfg.duration_s + 1e-9, cfg.step_s)
    if cfg.policy == "slots":
        times = np.union1d(times, np.arange(0.0, cfg.duration_s + 1e-9, cfg.slot_s))
    return np.union1d(times, [cfg.duration_s])


CHUNK_SAMPLES = 256  # positions are computed this many instants at a time, then reduced
MAX_SAMPLE_SATELLITES = 20_000_000  # samples x satellites: about 160 MB per (T, S) array


def _count(cfg: LeoConfig) -> int:
    return len(cfg.tles.ids) if cfg.tles is not None else cfg.shell.planes * cfg.shell.per_plane


def _eci(cfg: LeoConfig, t: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """ECI positions (times, satellites, 3), metres, and the satellites' ids."""
    if cfg.tles is not None:
        return cfg.tles.eci_m(cfg.epoch, t), cfg.tles.ids
    el = cfg.shell.elements()
    return propagate_eci_m(el, t), el.ids


def _geometry(cfg: LeoConfig, t: np.ndarray) -> tuple:
    """Elevation (degrees) and range (m) of every satellite from both ends, (times, satellites)
    each, computed in chunks of time; the ECI positions too when the path needs them (ISL)."""
    ends = [ecef_of_places(p.lat_deg, p.lon_deg, p.alt_m) for p in (cfg.terminal, cfg.ground)]
    parts, keep, ids = [], [], []
    for begin in range(0, len(t), CHUNK_SAMPLES):
        chunk = t[begin : begin + CHUNK_SAMPLES]
        eci, ids = _eci(cfg, chunk)
        ecef = eci_to_ecef(eci, gmst_rad(cfg.epoch, chunk))
        looks = [elevation_rad(ecef, pos[0], up[0]) for pos, up in ends]
        parts.append([(np.degrees(el), rng) for el, rng in looks])
        if cfg.path == "isl":
            keep.append(eci)
    (el_t, rng_t), (el_g, rng_g) = (
        (np.concatenate([p[i][0] for p in parts]), np.concatenate([p[i][1] for p in parts]))
        for i in (0, 1)
    )
    return el_t, rng_t, el_g, rng_g, (np.concatenate(keep) if keep else None), ids


def _highest(elev: np.ndarray, visible: np.ndarray) -> np.ndarray:
    """Per sample, the visible satellite of highest elevation (-1 where none is visible)."""
    masked = np.where(visible, elev, -np.inf)
    best = np.argmax(masked, axis=1)
    return np.where(np.isfinite(masked[np.arange(len(best)), best]), best, -1)


def _slots(t: np.ndarray, elev: np.ndarray, visible: np.ndarray, slot_s: float) -> np.ndarray:
    """Chosen at each slot boundary and held for the slot: the highest satellite at the slot's
    start among those visible at its start and its end (one that stays through the slot); if
    none stays, the highest visible at the start; none visible: none. A satellite that sets
    before the slot ends serves nobody from then on."""
    chosen = np.full(len(t), -1)
    bounds = [*_slot_starts(t, slot_s).tolist(), len(t)]
    for begin, end in itertools.pairwise(bounds):
        last = min(end, len(t) - 1)
        stays = visible[begin] & visible[last]
        pool = stays if stays.any() else visible[begin]
        if pool.any():
            pick = int(np.argmax(np.where(pool, elev[begin], -np.inf)))
            chosen[begin:end] = np.where(visible[begin:end, pick], pick, -1)
    return chosen


def _sticky(elev: np.ndarray, visible: np.ndarray) -> np.ndarray:
    """The serving satellite is kept while it stays visible; when it sets (or at the start),
    the highest visible one takes over."""
    chosen = np.full(len(elev), -1)
    current = -1
    for k in range(len(elev)):
        if current < 0 or not visible[k, current]:
            current = int(np.argmax(np.where(visible[k], elev[k], -np.inf)))
            current = current if visible[k, current] else -1
        chosen[k] = current
    return chosen


def _slot_starts(t: np.ndarray, slot_s: float) -> np.ndarray:
    """Indices of the samples that open a slot (slot boundaries are samples: _sample_times)."""
    index = np.floor((t + 1e-9) / slot_s)
    return np.flatnonzero(np.r_[True, index[1:] != index[:-1]])


def _choose(cfg: LeoConfig, t, elev, visible) -> np.ndarray:
    if cfg.policy == "slots":
        return _slots(t, elev, visible, cfg.slot_s)
    if cfg.policy == "sticky":
        return _sticky(elev, visible)
    return _highest(elev, visible)


def _grid_edges(shell: Shell) -> tuple[np.ndarray, np.ndarray]:
    """+Grid inter-satellite links: fore and aft in the plane, and to the same slot in the
    adjacent planes; a Walker star has no link across its seam (counter-rotating planes)."""
    n, m = shell.planes, shell.per_plane
    idx = np.arange(n * m).reshape(n, m)
    src = [idx.ravel()]
    dst = [np.roll(idx, -1, axis=1).ravel()]
    star = shell.raan_spacing_deg is not None and shell.raan_spacing_deg * n < 359.0
    cross_planes = n - 1 if star else n
    if n > 1:
        src.append(idx[:cross_planes].ravel())
        dst.append(np.roll(idx, -1, axis=0)[:cross_planes].ravel())
    return np.concatenate(src), np.concatenate(dst)


def _isl_length_m(cfg: LeoConfig, eci: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Shortest +Grid path length between satellites a[k] and b[k] at each sample k."""
    src, dst = _grid_edges(cfg.shell)
    count = eci.shape[1]
    out = np.full(len(a), np.nan)
    for k in np.flatnonzero((a >= 0) & (b >= 0)):
        w = np.linalg.norm(eci[k, src] - eci[k, dst], axis=1)
        graph = coo_matrix((w, (src, dst)), shape=(count, count)).tocsr()
        out[k] = shortest_path(graph, directed=False, indices=int(a[k]))[int(b[k])]
    return out


def _path(cfg: LeoConfig, t: np.ndarray) -> tuple:
    """Per sample: one-way delay (s, NaN where down), the serving id, whether served, and each
    end's serving satellite (index, -1 for none)."""
    el_t, rng_t, el_g, rng_g, eci, ids = _geometry(cfg, t)
    see_t, see_g = el_t >= cfg.min_elevation_deg, el_g >= cfg.min_elevation_deg
    rows = np.arange(len(t))
    if cfg.path == "bent-pipe":
        sat_t = _choose(cfg, t, el_t, see_t & see_g)
        sat_g = sat_t
        isl = np.zeros(len(t))
    else:
        sat_t, sat_g = _choose(cfg, t, el_t, see_t), _choose(cfg, t, el_g, see_g)
        isl = _isl_length_m(cfg, eci, sat_t, sat_g)
    served = (sat_t >= 0) & (sat_g >= 0) & np.isfinite(isl)
    length = rng_t[rows, sat_t] + np.nan_to_num(isl) + rng_g[rows, sat_g]
    delay = np.where(served, length / C_M_S + cfg.processing_s, np.nan)
    names = [_name(ids, a, b) for a, b in zip(sat_t, sat_g, strict=True)]
    names = [n if s else NO_SATELLITE for n, s in zip(names, served, strict=True)]
    return delay, names, served, (sat_t, sat_g)


def _name(ids: list[str], a: int, b: int) -> str:
    if a < 0 or b < 0:
        return NO_SATELLITE
    return ids[a] if a == b else f"{ids[a]}>{ids[b]}"


def build_schedule(cfg: LeoConfig) -> Schedule:
    """The schedule's rows and its summary (see the module's docstring)."""
    _check(cfg)
    t = _sample_times(cfg)
    delay, names, served, ends = _path(cfg, t)
    # A hand-off: the serving satellite (either end's) changes between two served samples.
    changed = np.array([False] + [a != b for a, b in itertools.pairwise(names)])
    handoffs = np.flatnonzero(changed & served & np.r_[False, served[:-1]])
    # One capacity draw per serving period: a slot (slots policy) or a satellite's stay.
    opens = changed.copy()
    if cfg.policy == "slots":
        opens[_slot_starts(t, cfg.slot_s)] = True
    opens[0] = False
    period = np.cumsum(opens)
    rng = np.random.default_rng(cfg.seed)
    rates = np.rint(cfg.capacity.draw(rng, int(period[-1]) + 1)).astype(np.int64)
    outage_ends = t[handoffs] + cfg.outage_s
    row_t = np.union1d(t, outage_ends[outage_ends < cfg.duration_s]) if cfg.outage_s else t
    at = np.searchsorted(t, row_t, side="right") - 1  # the sample that holds at each row
    held = _held_delay(delay)
    row_delay = np.interp(row_t, t, held)
    in_outage = _in_outage(row_t, t[handoffs], cfg.outage_s)
    up = served[at] & ~in_outage
    rows = [
        (float(x), float(d), int(rates[period[k]]), int(u), names[k])
        for x, d, k, u in zip(row_t, row_delay, at, up, strict=True)
    ]
    return Schedule(rows, _summary(cfg, t, delay, served, handoffs, row_t, up, ends))


def _held_delay(delay: np.ndarray) -> np.ndarray:
    """Where no satellite serves, the last known delay is held (the first known before any)."""
    good = np.isfinite(delay)
    if not good.any():
        return np.zeros_like(delay)
    idx = np.where(good, np.arange(len(delay)), 0)
    np.maximum.accumulate(idx, out=idx)
    held = delay[idx]
    return np.where(np.isfinite(held), held, delay[np.argmax(good)])


def _in_outage(row_t: np.ndarray, starts: np.ndarray, outage_s: float) -> np.ndarray:
    if outage_s <= 0 or len(starts) == 0:
        return np.zeros(len(row_t), bool)
    k = np.searchsorted(starts, row_t, side="right") - 1
    return (k >= 0) & (row_t < starts[np.maximum(k, 0)] + outage_s)


def _median_gap_s(t: np.ndarray, changes: np.ndarray) -> float | None:
    """Median time between successive hand-offs (None with fewer than two)."""
    return float(np.median(np.diff(t[changes]))) if len(changes) > 1 else None


def _end_changes(sat: np.ndarray) -> np.ndarray:
    """Samples where one end's serving satellite changes from one satellite to another."""
    return np.flatnonzero((sat[1:] != sat[:-1]) & (sat[1:] >= 0) & (sat[:-1] >= 0)) + 1


def _summary(cfg, t, delay, served, handoffs, row_t, up, ends) -> dict:
    rtt = 2 * delay[served & np.isfinite(delay)]
    down_s = float(np.sum(np.diff(np.r_[row_t, cfg.duration_s]) * ~up))
    return {
        "duration_s": cfg.duration_s,
        "rows": len(row_t),
        "rtt_min_s": float(rtt.min()) if len(rtt) else None,
        "rtt_median_s": float(np.median(rtt)) if len(rtt) else None,
        "rtt_max_s": float(rtt.max()) if len(rtt) else None,
        "handoffs": len(handoffs),
        "handoff_interval_median_s": _median_gap_s(t, handoffs),
        # Each end's own hand-offs (one satellite serving both ends: the same as the path's).
        "terminal_handoff_interval_median_s": _median_gap_s(t, _end_changes(ends[0])),
        "ground_handoff_interval_median_s": _median_gap_s(t, _end_changes(ends[1])),
        "outage_s": down_s,
        "policy": cfg.policy,
        "path": cfg.path,
        "min_elevation_deg": cfg.min_elevation_deg,
        "epoch": cfg.epoch.isoformat(),
    }
