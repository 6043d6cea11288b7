"""Fit the per-link call-drop rate β of a modem bundle, with an exact interval and a χ² test.

Seed 000, section 5.3 ("The Development of the Call Drops Probability Density Function") finds
that the time between call drops of one Iridium link (the inter-call-drop time difference) is
exponential, i.e. each link drops calls as a Poisson process of rate β, and a bundle of ``n``
independent links as one of rate ``λ = nβ``. Its procedure: histogram the intervals, fit an
exponential, apply the χ² goodness-of-fit test with 15 bins at the 5 % significance level. Table
5.3 reports β = 1/50 min for Kansas–Greenland and β = 1/52 min for Kansas–Kansas
(:data:`BETA_KANSAS_GREENLAND_PER_S`, :data:`BETA_KANSAS_KANSAS_PER_S`).

This module does the same with the textbook statistics made explicit:

* **Rate.** The maximum-likelihood estimate is ``β̂ = d / T`` with ``d`` call drops during an
  exposure of ``T`` seconds of up-time. When the exposure is just the sum of ``n`` complete
  intervals this is ``n / Σt``, the reciprocal of the mean interval. (The seed "adjusted β so that
  the goodness-of-fit is satisfied"; here β̂ is the estimate and the test only judges it.)
* **Exact confidence interval** for a Poisson rate from the χ²/gamma relation, with
  ``a = 1 − confidence``:

  - *time-censored* observation (it ended at a fixed time, not at a drop: XML connection
    databases and synthetic logs, where the final up-time is right-censored):
    ``[χ²(a/2; 2d) / 2T, χ²(1 − a/2; 2d + 2) / 2T]`` (Garwood; lower bound 0 when d = 0);
  - *failure-censored* observation (it ended at a drop, so ``2βT`` is exactly χ² with ``2d``
    degrees of freedom: intervals between drops, CSV logs of drop times):
    ``[χ²(a/2; 2d) / 2T, χ²(1 − a/2; 2d) / 2T]``.

* **Goodness of fit.** Pearson's χ² test on ``k`` bins that are equiprobable under the fitted
  exponential (bin ``i`` spans the quantiles ``(i−1)/k`` to ``i/k`` of ``Exp(β̂)``, so the
  expected count is ``n/k`` in each), with ``k − 1 − 1`` degrees of freedom (one parameter
  estimated). ``k`` starts at 15 (the seed's choice) and is reduced so that ``n/k ≥ 5``; with
  fewer than 3 possible bins the verdict is ``"insufficient data"``. Because β̂ comes from the
  ungrouped data, the statistic lies between χ²(k−2) and χ²(k−1) (Chernoff–Lehmann), so the test
  rejects a true exponential slightly more often than ``alpha``.

:func:`synthetic_drop_log` draws Poisson call-drop logs for tests and documentation, and
:mod:`farlink.calldrops.log` reads real ones.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any, NamedTuple

import numpy as np
from scipy.stats import chi2

from farlink.calldrops.log import DropLog

__all__ = [
    "BETA_KANSAS_GREENLAND_PER_S",
    "BETA_KANSAS_KANSAS_PER_S",
    "VERDICTS",
    "DropFit",
    "GoodnessOfFit",
    "chi2_exponential_test",
    "fit_drop_log",
    "fit_exponential",
    "rate_confidence_interval",
    "synthetic_drop_log",
]

BETA_KANSAS_GREENLAND_PER_S = 1.0 / (50 * 60)
"""Per-link call-drop rate β, Kansas–Greenland, seed 000 Table 5.3 (1 per 50 min)."""
BETA_KANSAS_KANSAS_PER_S = 1.0 / (52 * 60)
"""Per-link call-drop rate β, Kansas–Kansas, seed 000 Table 5.3 (1 per 52 min)."""

NOT_REJECTED = "exponential not rejected"
REJECTED = "exponential rejected"
INSUFFICIENT = "insufficient data"
VERDICTS = (NOT_REJECTED, REJECTED, INSUFFICIENT)

_MIN_EXPECTED = 5
_MIN_BINS = 3
_CENSORINGS = ("time", "failure")


def _json_value(value: Any) -> Any:
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, np.integer):
        return int(value)
    return value


@dataclass(frozen=True)
class DropFit:
    """Result of fitting an exponential inter-drop distribution (see the module docstring).

    Attributes:
        beta_per_s: maximum-likelihood call-drop rate β̂ = drops / exposure, per second.
        ci_low_per_s, ci_high_per_s: exact confidence interval for β, per second.
        confidence: confidence level of the interval.
        n_intervals: complete intervals used by the χ² test.
        drops: call drops in the exposure.
        exposure_s: exposure (up-time) in seconds.
        chi2_stat, chi2_dof, chi2_p_value: Pearson χ² statistic, degrees of freedom and p-value
            (NaN, 0 and NaN when the data are insufficient).
        bins: equiprobable bins used (15 at most, fewer when n/15 < 5).
        alpha: significance level of the χ² test.
        verdict: ``"exponential not rejected"``, ``"exponential rejected"`` or
            ``"insufficient data"``.
        censoring: ``"time"`` or ``"failure"``: which exact interval was used.
    """

    beta_per_s: float
    ci_low_per_s: float
    ci_high_per_s: float
    confidence: float
    n_intervals: int
    drops: int
    exposure_s: float
    chi2_stat: float
    chi2_dof: int
    chi2_p_value: float
    bins: int
    alpha: float
    verdict: str
    censoring: str = "time"

    @property
    def mean_interval_s(self) -> float:
        """Mean up-time between call drops, 1/β̂, in seconds (infinite when β̂ = 0)."""
        return 1.0 / self.beta_per_s if self.beta_per_s > 0 else math.inf

    def to_dict(self) -> dict[str, Any]:
        """The fields and ``mean_interval_s`` as JSON-ready values (None for NaN and inf)."""
        out = {f.name: _json_value(getattr(self, f.name)) for f in fields(self)}
        out["mean_interval_s"] = _json_value(self.mean_interval_s)
        return out


class GoodnessOfFit(NamedTuple):
    """Outcome of :func:`chi2_exponential_test`."""

    stat: float
    dof: int
    p_value: float
    bins: int
    verdict: str


def _check_confidence(confidence: float, name: str = "confidence") -> float:
    confidence = float(confidence)
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"{name} must be strictly between 0 and 1, got {confidence}")
    return confidence


_TOO_SHORT = "an exposure of {exposure:g} s is too short to estimate a rate from"


def rate_confidence_interval(
    drops: Any, exposure_s: Any, confidence: float = 0.95, censoring: str = "time"
) -> tuple[Any, Any]:
    """Exact two-sided confidence interval for a Poisson rate, vectorised over arrays.

    Args:
        drops: number(s) of events ``d`` (integers ≥ 0; ≥ 1 when failure-censored).
        exposure_s: exposure(s) ``T`` in seconds (> 0); broadcast against ``drops``.
        confidence: two-sided level, ``a = 1 − confidence``.
        censoring: ``"time"`` (observation ended at a fixed time): upper bound with ``2d + 2``
            degrees of freedom; ``"failure"`` (ended at the d-th event): ``2d``.

    Returns:
        ``(low, high)`` per second: floats for scalar input, arrays otherwise.
    """
    a = 1.0 - _check_confidence(confidence)
    if censoring not in _CENSORINGS:
        raise ValueError(f"censoring must be 'time' or 'failure', not {censoring!r}")
    d, t = np.broadcast_arrays(np.asarray(drops, dtype=float), np.asarray(exposure_s, dtype=float))
    if np.any(~np.isfinite(d)) or np.any(d < 0) or np.any(d != np.round(d)):
        raise ValueError("drops must be non-negative integers")
    if np.any(~np.isfinite(t)) or np.any(t <= 0):
        raise ValueError("exposure_s must be positive and finite")
    if censoring == "failure" and np.any(d < 1):
        raise ValueError("a failure-censored observation has at least one drop")
    dof_low = np.where(d > 0, 2.0 * d, 1.0)  # placeholder dof where d = 0 (bound is 0 there)
    dof_high = 2.0 * d + 2.0 if censoring == "time" else 2.0 * d
    # An exposure of a few subnormal seconds overflows the division; such a rate is no estimate.
    with np.errstate(over="ignore"):
        low = np.where(d > 0, chi2.ppf(a / 2.0, dof_low) / (2.0 * t), 0.0)
        high = chi2.ppf(1.0 - a / 2.0, dof_high) / (2.0 * t)
    if not np.all(np.isfinite(high)):
        raise ValueError(_TOO_SHORT.format(exposure=float(np.min(t))))
    if low.ndim == 0:
        return float(low), float(high)
    return low, high


def chi2_exponential_test(
    intervals_s: Any, beta_per_s: float, bins: int = 15, alpha: float = 0.05
) -> GoodnessOfFit:
    """Pearson χ² test of ``intervals_s`` against ``Exp(beta_per_s)`` with β estimated.

    Uses ``k = min(bins, n // 5)`` bins equiprobable under the exponential (expected count
    ``n/k ≥ 5`` each) and ``k − 2`` degrees of freedom; ``k < 3`` gives ``"insufficient data"``.
    """
    x = np.asarray(intervals_s, dtype=float).ravel()
    alpha = _check_confidence(alpha, "alpha")
    if int(bins) != bins or bins < _MIN_BINS:
        raise ValueError(f"bins must be an integer >= {_MIN_BINS}, got {bins}")
    n = x.size
    k = min(int(bins), n // _MIN_EXPECTED)
    if k < _MIN_BINS or not beta_per_s > 0:
        return GoodnessOfFit(math.nan, 0, math.nan, max(k, 0), INSUFFICIENT)
    inner_edges = -np.log1p(-np.arange(1, k) / k) / beta_per_s
    observed = np.bincount(np.searchsorted(inner_edges, x, side="right"), minlength=k)
    expected = n / k
    stat = float(np.sum((observed - expected) ** 2) / expected)
    dof = k - 2
    p_value = float(chi2.sf(stat, dof))
    return GoodnessOfFit(stat, dof, p_value, k, REJECTED if p_value < alpha else NOT_REJECTED)


def fit_exponential(
    intervals_s: Any,
    exposure_s: float | None = None,
    drops: int | None = None,
    confidence: float = 0.95,
    bins: int = 15,
    alpha: float = 0.05,
    *,
    censoring: str | None = None,
) -> DropFit:
    """Fit the call-drop rate β to complete up-intervals (seed 000 section 5.3).

    Args:
        intervals_s: complete intervals, each ending in a call drop, in seconds (≥ 0).
        exposure_s: total up-time exposed to drops, including any right-censored up-time at the
            end of the log (≥ the sum of the intervals). Default: the sum of the intervals.
        drops: call drops in the exposure (≥ the number of intervals). Default: the number of
            intervals. Only meaningful together with ``exposure_s``.
        confidence: level of the exact confidence interval for β.
        bins: at most this many equiprobable bins for the χ² test (the seed used 15).
        alpha: significance level of the χ² test (the seed used 5 %).
        censoring: ``"time"`` or ``"failure"`` (see :func:`rate_confidence_interval`). Default:
            ``"failure"`` when ``exposure_s`` is omitted (the observation is the intervals, each
            ending at a drop), ``"time"`` when it is given (the observation ran to the end of
            the log). Use :func:`fit_drop_log` to take it from a
            :class:`~farlink.calldrops.log.DropLog`.

    Raises:
        ValueError: negative or non-finite intervals, inconsistent ``drops``/``exposure_s``, or
            no exposure at all.
    """
    x = np.asarray(intervals_s, dtype=float).ravel()
    if np.any(~np.isfinite(x)) or np.any(x < 0):
        raise ValueError("intervals_s must be finite and non-negative")
    n = int(x.size)
    total = float(x.sum())
    if exposure_s is None:
        if drops is not None and drops != n:
            raise ValueError("drops other than the number of intervals needs exposure_s")
        exposure, d = total, n
        censoring = censoring or "failure"
    else:
        exposure = float(exposure_s)
        d = n if drops is None else drops
        censoring = censoring or "time"
        if not math.isfinite(exposure) or exposure < total * (1.0 - 1e-9):
            raise ValueError(
                f"exposure_s ({exposure}) must be finite and at least the sum of the complete "
                f"intervals ({total})"
            )
    if int(d) != d or d < n:
        raise ValueError(f"drops ({d}) must be an integer >= the number of intervals ({n})")
    d = int(d)
    if not exposure > 0:
        raise ValueError("no exposure: the log has no up-time (no complete interval)")
    beta = d / exposure
    if not math.isfinite(beta):
        raise ValueError(_TOO_SHORT.format(exposure=exposure))
    low, high = rate_confidence_interval(d, exposure, confidence, censoring)
    gof = chi2_exponential_test(x, beta, bins, alpha)
    return DropFit(
        beta_per_s=beta,
        ci_low_per_s=low,
        ci_high_per_s=high,
        confidence=float(confidence),
        n_intervals=n,
        drops=d,
        exposure_s=exposure,
        chi2_stat=gof.stat,
        chi2_dof=gof.dof,
        chi2_p_value=gof.p_value,
        bins=gof.bins,
        alpha=float(alpha),
        verdict=gof.verdict,
        censoring=censoring,
    )


def fit_drop_log(
    log: DropLog, confidence: float = 0.95, bins: int = 15, alpha: float = 0.05
) -> DropFit:
    """:func:`fit_exponential` on a :class:`~farlink.calldrops.log.DropLog`, with its censoring."""
    return fit_exponential(
        log.intervals_s,
        log.exposure_s,
        log.drops,
        confidence,
        bins,
        alpha,
        censoring=log.censoring,
    )


def _modem_names(modems: int | Sequence[str]) -> list[str]:
    if isinstance(modems, (int, np.integer)):
        if modems < 1:
            raise ValueError(f"modems must be >= 1, got {modems}")
        return [f"modem{i}" for i in range(1, int(modems) + 1)]
    names = [str(m) for m in modems]
    if not names or len(set(names)) != len(names):
        raise ValueError("modems must be a positive count or distinct names")
    return names


def synthetic_drop_log(
    beta_per_s: float,
    duration_s: float,
    modems: int | Sequence[str],
    rng: np.random.Generator,
    *,
    redial_s: float = 0.0,
) -> DropLog:
    """Draw a call-drop log in which each modem drops calls as a Poisson process of rate β.

    Every modem comes up at time 0, stays up for an ``Exp(beta_per_s)`` time, drops, spends
    ``redial_s`` seconds redialling (dropped/connecting states), comes up again, and so on until
    ``duration_s``. The log is time-censored: the exposure is the up-time in ``[0, duration_s]``
    including each modem's final, right-censored up-time, and only up-intervals that end in a
    drop before ``duration_s`` are complete.

    Args:
        beta_per_s: call-drop rate per modem while up, per second (> 0).
        duration_s: length of the log in seconds (> 0).
        modems: number of modems (named ``modem1``, ``modem2``, ...) or their names.
        rng: the random generator (e.g. ``numpy.random.default_rng(seed)``).
        redial_s: down time after each drop before the modem is up again (≥ 0).
    """
    if not isinstance(rng, np.random.Generator):
        raise TypeError("rng must be a numpy.random.Generator, e.g. numpy.random.default_rng(1)")
    if not (math.isfinite(beta_per_s) and beta_per_s > 0):
        raise ValueError(f"beta_per_s must be positive and finite, got {beta_per_s}")
    if not (math.isfinite(duration_s) and duration_s > 0):
        raise ValueError(f"duration_s must be positive and finite, got {duration_s}")
    if not (math.isfinite(redial_s) and redial_s >= 0):
        raise ValueError(f"redial_s must be non-negative and finite, got {redial_s}")
    names = _modem_names(modems)
    mean_up = 1.0 / beta_per_s
    cycles = duration_s / (mean_up + redial_s)
    chunk = int(cycles + 6.0 * math.sqrt(cycles) + 16)

    intervals, drop_times, connect_times = [], {}, {}
    censored = 0.0
    for name in names:
        ups = rng.exponential(mean_up, size=chunk)
        while ups.sum() + redial_s * ups.size <= duration_s:
            ups = np.concatenate([ups, rng.exponential(mean_up, size=chunk)])
        starts = np.concatenate([[0.0], np.cumsum(ups + redial_s)[:-1]])
        ends = starts + ups
        m = int(np.searchsorted(ends, duration_s, side="right"))  # complete up-periods
        intervals.append(ups[:m])
        drop_times[name] = ends[:m]
        up_at_end = starts[m] < duration_s
        connect_times[name] = starts[: m + 1] if up_at_end else starts[:m]
        if up_at_end:
            censored += duration_s - starts[m]
    intervals_s = np.concatenate(intervals)
    return DropLog(
        modems=tuple(names),
        intervals_s=intervals_s,
        exposure_s=float(intervals_s.sum() + censored),
        drops=int(intervals_s.size),
        source=(
            f"synthetic Poisson log: beta={beta_per_s:.6g}/s, {len(names)} modems, "
            f"{duration_s:.6g} s, redial {redial_s:.6g} s"
        ),
        censoring="time",
        drop_times_s=drop_times,
        connect_times_s=connect_times,
    )
