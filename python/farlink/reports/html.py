"""``farlink report DIR``: a self-contained HTML report of a sweep directory.

The page holds, for each metric and each axis, the mean across seeds with its Student-t
confidence band (the other axes' combinations as separate curves; the closed-form model's
``model_normalized_goodput`` dashed beside ``normalized_goodput`` where the point's controller is
one the model describes), a table of the per-point means
and intervals, the sweep's definition and provenance, and the failed runs. Figures are PNG
embedded as base64, with no external script or style sheet, so the file stands alone.
"""

from __future__ import annotations

import base64
import datetime as dt
import io
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from farlink.models.pftk import MODELLED_CONTROLLERS
from farlink.sweeps import dataset
from farlink.sweeps import sweep as sw

__all__ = ["ReportError", "fmt", "plotted_metrics", "write_report"]

TRACE_METRICS = ("normalized_goodput", "retransmissions", "timeouts")


class ReportError(ValueError):
    """A run asked for with ``--trace`` that the sweep does not hold or cannot re-run."""


TEMPLATE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>farlink sweep report: {name}</title>
<style>
body {{ font-family: sans-serif; max-width: 1100px; margin: 2em auto; color: #222; }}
table {{ border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.85em; }}
th, td {{ border: 1px solid #ccc; padding: 0.2em 0.5em; text-align: right; }}
th {{ background: #f2f2f2; }}
pre {{ background: #f7f7f7; padding: 0.7em; overflow-x: auto; font-size: 0.85em; }}
figure {{ display: inline-block; margin: 0.5em; }}
.text {{ text-align: left; }}
.notes {{ background: #fff8e1; padding: 0.5em 0.5em 0.5em 2em; }}
</style></head>
<body>
<h1>Sweep {name}</h1>
<p>{description}</p>
<p>Directory <code>{directory}</code>: {points} points, {runs} runs, {failed} failed.
Means across seeds with {level} Student-t confidence intervals.
Written by <code>farlink report</code> at {now}.</p>
<h2>Figures</h2>
{notes}
{figures}
<h2>Means and intervals per point</h2>
{table}
<h2>Failed runs</h2>
{failures}
{traces}
<h2>Definition</h2>
<pre>{definition}</pre>
<h2>Provenance</h2>
{provenance}
</body></html>
"""


def fmt(value: Any) -> str:
    """A number as the report prints it (4 significant digits), anything else as text."""
    if value is None:
        return "–"
    if isinstance(value, float):
        return "nan" if math.isnan(value) else f"{value:.4g}"
    return str(value)


def plotted_metrics(summary: dataset.Summary) -> list[str]:
    """The metrics that get figures: all but the model's column, which is overlaid instead."""
    return [m for m in summary.metrics if m != sw.MODEL_COLUMN]


def _table(header: list[str], rows: list[list[Any]], left: int = 0) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join(
        "<tr>"
        + "".join(
            f"<td{' class=text' if i >= len(row) - left else ''}>{escape(fmt(v))}</td>"
            for i, v in enumerate(row)
        )
        + "</tr>"
        for row in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>"


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


# Fewer runs than this per point make a Student-t band too wide to read (t_{0.975, n-1} is
# 12.7 for two runs, 4.3 for three, 3.2 for four, 2.8 for five): the page says so.
MIN_RUNS_FOR_BAND = 5

# Metrics no run can take below zero; normalised goodputs (of the run or the model) cannot
# exceed one, the whole bottleneck.
_NON_NEGATIVE = {*sw.METRICS, sw.MODEL_COLUMN}
_AT_MOST_ONE = {"normalized_goodput", sw.MODEL_COLUMN}


@dataclass
class _Context:
    """What the figures of one report share: each point's controller and the notes to print."""

    controllers: dict[str, str | None]
    notes: list[str] = field(default_factory=list)

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)


def _sweep_of(manifest: dict[str, Any]) -> sw.Sweep:
    d = manifest["definition"]
    return sw.Sweep(
        scenario=d["scenario"], source=d["scenario_source"], grid=d["grid"], fixed=d["fixed"],
        seeds=d["seeds"], seed=d["seed"], metrics=tuple(d["metrics"]), name=d["name"],
    )  # fmt: skip


def point_controllers(summary: dataset.Summary, manifest: dict[str, Any]) -> dict[str, str | None]:
    """Each point's congestion controller (point_id → ``tcp.cc`` of its single flow).

    None where the point has no single flow or its scenario cannot be rebuilt: the closed-form
    model describes one bulk flow of a known controller, or nothing.
    """
    try:
        sweep = _sweep_of(manifest)
    except (KeyError, TypeError):
        return {p["point_id"]: None for p in summary.points}
    out: dict[str, str | None] = {}
    for point in summary.points:
        try:
            flows = sw.point_doc(sweep, point["params"]).get("flows") or []
        except (sw.SweepError, KeyError, TypeError, ValueError):
            flows = []
        tcp = (flows[0].get("tcp") or {}) if len(flows) == 1 else None
        out[point["point_id"]] = None if tcp is None else str(tcp.get("cc") or "reno")
    return out


def _model_applies(context: _Context, point: dict[str, Any]) -> bool:
    return context.controllers.get(point["point_id"]) in MODELLED_CONTROLLERS


def _bounds(summary: dataset.Summary, metric: str, point: dict[str, Any]) -> tuple[float, float]:
    """The range a run's value of ``metric`` can take at ``point``, as far as it is known."""
    low = 0.0 if metric in _NON_NEGATIVE else -math.inf
    high = 1.0 if metric in _AT_MOST_ONE else math.inf
    if metric == "goodput_bps" and "normalized_goodput" in summary.metrics:
        # Every run of a point has the same bottleneck, so goodput over normalised goodput,
        # mean over mean, is that bottleneck's rate.
        mean = point["metrics"]["goodput_bps"]["mean"]
        share = point["metrics"]["normalized_goodput"]["mean"]
        if mean is not None and share:
            high = mean / share
    return low, high


def _range_text(metric: str) -> str:
    if metric in _AT_MOST_ONE:
        return "[0, 1]"
    if metric == "goodput_bps":
        return "0 to the bottleneck's rate"
    return "0 and above"


def _band(
    summary, metric, points, context, where
) -> tuple[list[float], list[float], list[float], int]:
    """Mean, low and high of a curve's points, the band clipped to what a run can reach, and
    how many points were clipped."""
    mean, low, high = [], [], []
    clipped = 0
    for point in points:
        stat = point["metrics"][metric]
        m = math.nan if stat["mean"] is None else float(stat["mean"])
        lo = m if stat["ci_low"] is None else float(stat["ci_low"])
        hi = m if stat["ci_high"] is None else float(stat["ci_high"])
        floor, ceiling = _bounds(summary, metric, point)
        if lo < floor or hi > ceiling:
            clipped += 1
        mean.append(m)
        low.append(max(lo, floor))
        high.append(min(hi, ceiling))
        n = stat["n"] or 0
        if n < 2:
            context.note(f"{where}: one run at some points, so no band there.")
        elif n < MIN_RUNS_FOR_BAND:
            context.note(
                f"Bands from {n} runs per point are too wide to read (Student t with {n - 1} "
                f"degree{'s' if n > 2 else ''} of freedom); run {MIN_RUNS_FOR_BAND} or more "
                "seeds (--seeds) for a usable band."
            )
    return mean, low, high, clipped


def _figure(summary: dataset.Summary, metric: str, axis: str, context: _Context) -> str:
    """One metric against one axis, a curve per combination of the other axes; base64 PNG.

    A numeric axis gets lines and shaded bands; a categorical one (a controller, a recovery)
    gets points with error bars, side by side, since nothing lies between its values.
    """
    values = list(dict.fromkeys(p["params"][axis] for p in summary.points))
    numeric = all(_is_number(v) for v in values)
    position = {v: (v if numeric else i) for i, v in enumerate(values)}
    others = [a for a in summary.axes if a != axis]
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for point in summary.points:
        groups.setdefault(tuple(point["params"][a] for a in others), []).append(point)
    overlay = metric == "normalized_goodput" and sw.MODEL_COLUMN in summary.metrics
    where = f"{metric} against {axis}"
    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=100)
    skipped: set[str] = set()
    clipped_points = 0
    for g, (key, points) in enumerate(groups.items()):
        points.sort(key=lambda p: position[p["params"][axis]])
        label = ", ".join(f"{a}={v}" for a, v in zip(others, key, strict=True)) or metric
        x = np.array([position[p["params"][axis]] for p in points], dtype=float)
        if not numeric:
            x = x + (g - (len(groups) - 1) / 2) * min(0.6 / len(groups), 0.15)
        *band, clipped = _band(summary, metric, points, context, where)
        mean, low, high = (np.array(c) for c in band)
        clipped_points += clipped
        if numeric:
            (line,) = ax.plot(x, mean, "o-", label=label, linewidth=1.6)
            ax.fill_between(x, low, high, color=line.get_color(), alpha=0.2, linewidth=0)
            color = line.get_color()
        else:
            bars = ax.errorbar(x, mean, yerr=[mean - low, high - mean], fmt="o", capsize=3,
                               label=label)  # fmt: skip
            color = bars.lines[0].get_color()
        if overlay:
            model = np.array([
                p["metrics"][sw.MODEL_COLUMN]["mean"] if _model_applies(context, p) else None
                for p in points
            ], dtype=float)  # fmt: skip
            skipped |= {
                str(context.controllers.get(p["point_id"]))
                for p in points
                if not _model_applies(context, p)
            }
            if np.isfinite(model).any():
                name = "PFTK model (Reno only)"
                ax.plot(x, model, "--" if numeric else "x", color=color, markersize=8,
                        label=f"{name}, {label}" if others else name)  # fmt: skip
    if overlay and skipped:
        context.note(
            "The PFTK model describes Reno's loss-driven AIMD only; it is not drawn for "
            f"points running {', '.join(sorted(skipped))}."
        )
    if numeric and all(v > 0 for v in values) and max(values) / min(values) >= 50:
        ax.set_xscale("log")
    if not numeric:
        ax.set_xticks(range(len(values)), [str(v) for v in values])
        ax.set_xlim(-0.5, len(values) - 0.5)
    ax.set_xlabel(axis)
    ax.set_ylabel(metric)
    ax.set_title(f"{metric} against {axis} ({summary.confidence:.0%} CI across seeds)", fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    runs = [p["metrics"][metric]["n"] or 0 for p in summary.points]
    caption = []
    if clipped_points:
        s = "s" if clipped_points > 1 else ""
        caption.append(f"band clipped to {_range_text(metric)} at {clipped_points} point{s}")
        context.note(
            f"{where}: the band is clipped to what a run can reach ({_range_text(metric)}) at "
            f"{clipped_points} point{s}, where the Student-t interval of few runs crossed it."
        )
    if runs and min(runs) < MIN_RUNS_FOR_BAND:
        caption.append(f"{min(runs)} run{'s' if min(runs) != 1 else ''} per point: too few seeds")
    fig.tight_layout()
    if caption:
        fig.text(0.01, 0.01, "; ".join(caption), fontsize=7, color="0.35")
        fig.subplots_adjust(bottom=0.2)
    return _png(fig)


def _figures(summary: dataset.Summary, context: _Context) -> str:
    if not summary.axes:
        return "<p>The sweep has no axes (one point): see the table.</p>"
    parts = []
    for metric in plotted_metrics(summary):
        for axis in summary.axes:
            alt = escape(f"{metric} against {axis}")
            png = _figure(summary, metric, axis, context)
            parts.append(f'<figure><img alt="{alt}" src="data:image/png;base64,{png}"></figure>')
    return "\n".join(parts)


def _notes(context: _Context) -> str:
    if not context.notes:
        return ""
    items = "".join(f"<li>{escape(n)}</li>" for n in context.notes)
    return f'<ul class="notes">{items}</ul>'


def _points_table(summary: dataset.Summary, context: _Context) -> str:
    header = [*summary.axes, "runs", "failed"]
    for metric in summary.metrics:
        header += [f"{metric} n", f"{metric} mean", f"{metric} CI low", f"{metric} CI high"]
    rows = []
    for point in summary.points:
        row = [*(point["params"][a] for a in summary.axes), point["runs"], point["failed"]]
        for metric in summary.metrics:
            m = point["metrics"][metric]
            if metric == sw.MODEL_COLUMN and not _model_applies(context, point):
                row += [0, None, None, None]  # the model does not describe this controller
                continue
            row += [m["n"], m["mean"], m["ci_low"], m["ci_high"]]
        rows.append(row)
    return _table(header, rows)


def _provenance(directory: Path, manifest: dict[str, Any]) -> str:
    keys = ("name", "created_at", "farlink_version", "git_revision", "definition_sha256")
    rows = [[k, manifest.get(k)] for k in keys]
    columns = ("farlink_version", "core_version", "git_revision", "host", "python_version")
    for column in columns:
        _, found = dataset.query(directory, f"SELECT DISTINCT {column} FROM results ORDER BY 1")
        rows.append([f"runs: {column}", ", ".join(fmt(v) for (v,) in found)])
    _, span = dataset.query(
        directory, "SELECT min(finished_at)::VARCHAR, max(finished_at)::VARCHAR FROM results"
    )
    rows.append(["runs finished", f"{span[0][0]} to {span[0][1]}"])
    return _table(["field", "value"], rows, left=1)


def _png(fig) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", metadata={"Software": "farlink"})
    plt.close(fig)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _find_run(directory: Path, wanted: str) -> dict[str, Any]:
    """The row of a run: its run_key or point_id, or a prefix of one (a point: replicate 0)."""
    pattern = wanted.replace("'", "''") + "%"
    _, rows = dataset.query(
        directory,
        "SELECT run_key, point_id, replicate, seed, error, "
        + ", ".join(TRACE_METRICS)
        + f" FROM results WHERE run_key LIKE '{pattern}' OR point_id LIKE '{pattern}'"
        " ORDER BY replicate, run_key",
    )
    names = ["run_key", "point_id", "replicate", "seed", "error", *TRACE_METRICS]
    found = [dict(zip(names, row, strict=True)) for row in rows]
    if not found or len({r["point_id"] for r in found}) > 1:
        what = "no run or point" if not found else "more than one point matches"
        raise ReportError(f"{wanted!r}: {what} in {directory}")
    if found[0]["error"] is not None:
        raise ReportError(f"{wanted!r}: the run failed ({found[0]['error']})")
    return found[0]


def _trace_section(directory: Path, manifest: dict[str, Any], wanted: str) -> str:
    """Re-run one run with its recorded seed, tracing, and plot cwnd, RTT, RTO and queues."""
    from farlink.sim import simulate

    row = _find_run(directory, wanted)
    sweep = _sweep_of(manifest)
    params = next(p.params for p in sweep.points() if p.point_id == row["point_id"])
    doc = sw.point_doc(sweep, params, seed=int(row["seed"]))
    doc["trace"] = {"all": True}
    result = simulate(doc)
    fig, axes = plt.subplots(2, 2, figsize=(9.0, 6.0), dpi=100, sharex=True)
    flows, links = result.names.get("flows", []), result.names.get("links", [])

    def each(trace: str, key: str, names: list[str]):
        columns = result.traces.get(trace, {})
        ids = columns.get(key)
        for i in [] if ids is None else sorted(set(ids.tolist())):
            mask = ids == i
            label = names[i] if i < len(names) else str(i)
            yield label, columns["time_ns"][mask] / 1e9, {k: v[mask] for k, v in columns.items()}

    for label, t, c in each("cwnd", "flow", flows):
        axes[0, 0].step(t, c["cwnd_bytes"] / 1e3, where="post", label=f"{label} cwnd")
        ssthresh = c["ssthresh_bytes"].astype(float)
        ssthresh[ssthresh >= 2.0**62] = np.nan  # "infinite" until the first loss
        axes[0, 0].step(t, ssthresh / 1e3, where="post", label=f"{label} ssthresh")
    for label, t, c in each("rtt", "flow", flows):
        axes[0, 1].plot(t, c["rtt_ns"] / 1e9, ".", markersize=2, label=f"{label} sample")
        axes[0, 1].plot(t, c["srtt_ns"] / 1e9, label=f"{label} srtt")
    for label, t, c in each("rto", "flow", flows):
        axes[1, 0].step(t, c["rto_ns"] / 1e9, "o-", where="post", markersize=3, label=label)
    for label, t, c in each("queue", "link", links):
        fwd = c["forward"]
        axes[1, 1].step(t[fwd], c["pkts"][fwd], where="post", label=f"{label} fwd")
    ylabels = (("cwnd, ssthresh (KB)", "RTT (s)"), ("RTO (s)", "queue (packets)"))
    for (i, j), ax in np.ndenumerate(axes):
        ax.set_ylabel(ylabels[i][j])
        ax.grid(True, alpha=0.3)
        if ax.has_data():
            ax.legend(fontsize=7)
    for ax in axes[1]:
        ax.set_xlabel("time (s)")
    title = ", ".join(f"{a}={v}" for a, v in params.items()) or "the point"
    fig.suptitle(f"{title}, seed {row['seed']}", fontsize=10)
    fig.tight_layout()
    recorded = [[m, row[m], result.summary.get(m)] for m in TRACE_METRICS]
    return (
        f"<h3>Run {escape(row['run_key'])} (point {escape(row['point_id'])}, replicate "
        f"{row['replicate']}, seed {row['seed']})</h3>"
        f'<figure><img alt="trace of run {escape(row["run_key"])}" '
        f'src="data:image/png;base64,{_png(fig)}"></figure>'
        + _table(["metric", "recorded in the sweep", "re-run with tracing"], recorded)
    )


def write_report(
    directory: str | Path, out: str | Path | None = None, traces: Sequence[str] = ()
) -> Path:
    """Write the HTML report of the sweep in ``directory`` (default ``DIR/report.html``).

    ``traces`` names runs (run_key or point_id, or a prefix) to re-run with their recorded seed
    and tracing on; their cwnd, RTT, RTO and queue occupancy are plotted.
    """
    directory = Path(directory)
    summary = dataset.summarize(directory)  # raises SweepError when DIR is not a sweep
    manifest = json.loads((directory / sw.MANIFEST).read_text(encoding="utf-8"))
    failed_rows = [
        [*(f["params"][a] for a in summary.axes), f["replicate"], f["seed"], f["error"]]
        for f in summary.failures
    ]
    header = [*summary.axes, "replicate", "seed", "error"]
    failures = _table(header, failed_rows, left=1) if failed_rows else "<p>None.</p>"
    definition = manifest.get("definition", {})
    context = _Context(point_controllers(summary, manifest))
    figures = _figures(summary, context)
    page = TEMPLATE.format(
        name=escape(str(manifest.get("name", directory.name))),
        description=escape(str(definition.get("description") or "")),
        directory=escape(str(directory)),
        points=len(summary.points),
        runs=sum(p["runs"] for p in summary.points),
        failed=sum(p["failed"] for p in summary.points),
        level=f"{summary.confidence:.0%}",
        now=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        figures=figures,
        notes=_notes(context),
        table=_points_table(summary, context),
        failures=failures,
        definition=escape(json.dumps(definition, indent=2, sort_keys=True, default=str)),
        provenance=_provenance(directory, manifest),
        traces="".join(
            ["<h2>Traces of chosen runs</h2>"] * bool(traces)
            + [_trace_section(directory, manifest, t) for t in traces]
        ),
    )
    path = Path(out) if out is not None else directory / "report.html"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page, encoding="utf-8")
    return path
