"""Reproductions of the seeds' published tables and figures, each printed beside ours.

A reproduction is a function registered under a stable id (``zaghloul-table-6.1``). It returns
:class:`Findings`: rows of (label, unit, published, ours) in the unit the paper prints, with
``published`` None for points the paper only plots or only bounds, plus notes and any figures it
wrote. ``farlink reproduce --list`` lists the registry; later engines add their entries here.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "PUBLISHED_KINDS",
    "REGISTRY",
    "Entry",
    "Findings",
    "Reproduction",
    "Row",
    "entries",
    "register",
    "run",
]


PUBLISHED_KINDS = {
    "measured": "a measurement in the field or on a testbed",
    "predicted": "the paper's closed-form model",
    "simulated": "the paper's own simulation",
    "none": "no published number: farlink's own study of the seeds' paths, with no counterpart "
    "in them (every row's published is None)",
}
"""What a published number is, named in every row that has one."""


@dataclass(frozen=True)
class Row:
    """One published number (or plotted point) beside ours.

    ``published_kind`` says what the published number is (a key of :data:`PUBLISHED_KINDS`;
    the entry's kind when None); ``seeds`` and ``spread`` (least and greatest value) describe
    the runs whose mean ``ours`` is, for a simulated row.
    """

    label: str
    unit: str
    published: float | None
    ours: float
    tolerance_rel: float | None = None
    published_kind: str | None = None
    seeds: int | None = None
    spread: tuple[float, float] | None = None

    @classmethod
    def over_seeds(
        cls,
        label: str,
        unit: str,
        published: float | None,
        values: Any,
        tolerance_rel: float | None = None,
        published_kind: str | None = None,
    ) -> Row:
        """A row whose ``ours`` is the mean of one value per seed, with their spread."""
        v = np.asarray(values, dtype=float)
        finite = v[np.isfinite(v)]
        spread = (float(finite.min()), float(finite.max())) if finite.size else None
        return cls(
            label, unit, published, float(np.mean(v)), tolerance_rel, published_kind, int(v.size),
            spread,
        )  # fmt: skip

    @property
    def relative_error(self) -> float | None:
        if self.published is None or self.published == 0:
            return None
        return (self.ours - self.published) / self.published

    @property
    def within_tolerance(self) -> bool | None:
        error = self.relative_error
        if self.tolerance_rel is None or error is None:
            return None
        return abs(error) <= self.tolerance_rel

    def to_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "unit": self.unit,
            "published": None if self.published is None else float(self.published),
            "ours": None if math.isnan(self.ours) else self.ours,
            "relative_error": self.relative_error,
            "tolerance_rel": self.tolerance_rel,
            "within_tolerance": self.within_tolerance,
            "published_kind": None if self.published is None else self.published_kind,
            "seeds": self.seeds,
            "seed_spread": None if self.spread is None else list(self.spread),
        }


@dataclass(frozen=True)
class Findings:
    """What a reproduction found: rows, notes on assumptions and disagreements, figures."""

    rows: list[Row]
    notes: list[str] = field(default_factory=list)
    figures: list[Path] = field(default_factory=list)


@dataclass(frozen=True)
class Reproduction(Findings):
    """Findings under the id, title and source of their registry entry."""

    id: str = ""
    title: str = ""
    source: str = ""

    def to_dict(self) -> dict[str, Any]:
        checked = [r.within_tolerance for r in self.rows if r.within_tolerance is not None]
        return {
            "id": self.id,
            "title": self.title,
            "source": self.source,
            "rows": [r.to_dict() for r in self.rows],
            "all_within_tolerance": all(checked) if checked else None,
            "notes": self.notes,
            "figures": [str(f) for f in self.figures],
        }


@dataclass(frozen=True)
class Entry:
    id: str
    title: str
    source: str
    engine: str
    build: Callable[[Path], Findings]
    published: str | None = None


REGISTRY: dict[str, Entry] = {}


def register(
    id: str, *, title: str, source: str, engine: str = "model", published: str | None = None
):
    """Register ``build(out_dir) -> Reproduction`` under ``id``.

    ``published``: what the published numbers of its rows are (:data:`PUBLISHED_KINDS`), unless
    a row says otherwise.
    """
    if published is not None and published not in PUBLISHED_KINDS:
        raise ValueError(f"{id}: published must be one of {', '.join(PUBLISHED_KINDS)}")

    def decorate(build: Callable[[Path], Findings]) -> Callable[[Path], Reproduction]:
        if id in REGISTRY:
            raise ValueError(f"reproduction {id!r} registered twice")
        REGISTRY[id] = Entry(
            id=id, title=title, source=source, engine=engine, build=build, published=published
        )
        return build

    return decorate


def run(id: str, out_dir: Path) -> Reproduction:
    """Run one reproduction, writing its figures and ``<id>.json`` under ``out_dir``."""
    _load_all()
    if id not in REGISTRY:
        known = ", ".join(sorted(REGISTRY))
        raise KeyError(f"unknown reproduction {id!r}; known: {known}")
    out_dir.mkdir(parents=True, exist_ok=True)
    entry = REGISTRY[id]
    found = entry.build(out_dir)
    rows = [
        r if r.published_kind is not None else replace(r, published_kind=entry.published)
        for r in found.rows
    ]
    rep = Reproduction(
        rows=rows,
        notes=found.notes,
        figures=found.figures,
        id=entry.id,
        title=entry.title,
        source=entry.source,
    )
    (out_dir / f"{id}.json").write_text(json.dumps(rep.to_dict(), indent=2) + "\n")
    return rep


def entries() -> list[Entry]:
    _load_all()
    return [REGISTRY[k] for k in sorted(REGISTRY)]


def _load_all() -> None:
    # Importing a module registers its reproductions.
    from farlink.reproduce import (  # noqa: F401
        aqm,
        bai,
        far_links,
        marchese,
        stpd,
        stpd_lossy,
        stpd_wired,
        zaghloul,
    )
