"""``farlink report DIR``: a self-contained HTML report of a sweep directory.

The page holds, for each metric and each axis, the mean across seeds with its Student-t
confidence band (the other axes' combinations as separate curves; the closed-form model's
``model_normalized_goodput`` dashed beside ``normalized_goodput``), a table of the per-point means
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
from html import escape
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from farlink import sweep as sw

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
</style></head>
<body>
<h1>Sweep {name}</h1>
<p>{description}</p>
<p>Directory <code>{directory}</code>: {points} points, {runs} runs, {failed} failed.
Means across seeds with {level} Student-t confidence intervals.
Written by <code>farlink report</code> at {now}.</p>
<h2>Figures</h2>
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


def plotted_metrics(summary: sw.Summary) -> list[str]:
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


def _figure(summary: sw.Summary, metric: str, axis: str) -> str:
    """One metric against one axis, a curve per combination of the other axes; base64 PNG."""
    values = list(dict.fromkeys(p["params"][axis] for p in summary.points))
    numeric = all(_is_number(v) for v in values)
    position = {v: (v if numeric else i) for i, v in enumerate(values)}
    others = [a for a in summary.axes if a != axis]
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for point in summary.points:
        groups.setdefault(tuple(point["params"][a] for a in others), []).append(point)
    overlay = metric == "normalized_goodput" and sw.MODEL_COLUMN in summary.metrics
    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=100)
    for key, points in groups.items():
        points.sort(key=lambda p: position[p["params"][axis]])
        label = ", ".join(f"{a}={v}" for a, v in zip(others, key, strict=True)) or metric
        x = [position[p["params"][axis]] for p in points]

        def column(name: str, field: str, points=points) -> list[float]:
            # The mean where an interval is missing (fewer than two runs), NaN with no value.
            got = [p["metrics"][name][field] for p in points]
            means = [p["metrics"][name]["mean"] for p in points]
            return [math.nan if v is None and m is None else float(m if v is None else v)
                    for v, m in zip(got, means, strict=True)]  # fmt: skip

        mean, low, high = (column(metric, f) for f in ("mean", "ci_low", "ci_high"))
        (line,) = ax.plot(x, mean, "o-", label=label, linewidth=1.6)
        ax.fill_between(x, low, high, color=line.get_color(), alpha=0.2, linewidth=0)
        if overlay:
            ax.plot(x, column(sw.MODEL_COLUMN, "mean"), "--", color=line.get_color(),
                    label=f"model (PFTK), {label}" if others else "model (PFTK)")  # fmt: skip
    if numeric and all(v > 0 for v in values) and max(values) / min(values) >= 50:
        ax.set_xscale("log")
    if not numeric:
        ax.set_xticks(range(len(values)), [str(v) for v in values])
    ax.set_xlabel(axis)
    ax.set_ylabel(metric)
    ax.set_title(f"{metric} against {axis} ({summary.confidence:.0%} CI across seeds)", fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return _png(fig)


def _figures(summary: sw.Summary) -> str:
    if not summary.axes:
        return "<p>The sweep has no axes (one point): see the table.</p>"
    parts = []
    for metric in plotted_metrics(summary):
        for axis in summary.axes:
            alt = escape(f"{metric} against {axis}")
            png = _figure(summary, metric, axis)
            parts.append(f'<figure><img alt="{alt}" src="data:image/png;base64,{png}"></figure>')
    return "\n".join(parts)


def _points_table(summary: sw.Summary) -> str:
    header = [*summary.axes, "runs", "failed"]
    for metric in summary.metrics:
        header += [f"{metric} n", f"{metric} mean", f"{metric} CI low", f"{metric} CI high"]
    rows = []
    for point in summary.points:
        row = [*(point["params"][a] for a in summary.axes), point["runs"], point["failed"]]
        for metric in summary.metrics:
            m = point["metrics"][metric]
            row += [m["n"], m["mean"], m["ci_low"], m["ci_high"]]
        rows.append(row)
    return _table(header, rows)


def _provenance(directory: Path, manifest: dict[str, Any]) -> str:
    keys = ("name", "created_at", "farlink_version", "git_revision", "definition_sha256")
    rows = [[k, manifest.get(k)] for k in keys]
    columns = ("farlink_version", "core_version", "git_revision", "host", "python_version")
    for column in columns:
        _, found = sw.query(directory, f"SELECT DISTINCT {column} FROM results ORDER BY 1")
        rows.append([f"runs: {column}", ", ".join(fmt(v) for (v,) in found)])
    _, span = sw.query(
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
    _, rows = sw.query(
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
    d = manifest["definition"]
    sweep = sw.Sweep(
        scenario=d["scenario"], source=d["scenario_source"], grid=d["grid"], fixed=d["fixed"],
        seeds=d["seeds"], seed=d["seed"], metrics=tuple(d["metrics"]), name=d["name"],
    )  # fmt: skip
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
    summary = sw.summarize(directory)  # raises SweepError when DIR is not a sweep
    manifest = json.loads((directory / sw.MANIFEST).read_text(encoding="utf-8"))
    failed_rows = [
        [*(f["params"][a] for a in summary.axes), f["replicate"], f["seed"], f["error"]]
        for f in summary.failures
    ]
    header = [*summary.axes, "replicate", "seed", "error"]
    failures = _table(header, failed_rows, left=1) if failed_rows else "<p>None.</p>"
    definition = manifest.get("definition", {})
    page = TEMPLATE.format(
        name=escape(str(manifest.get("name", directory.name))),
        description=escape(str(definition.get("description") or "")),
        directory=escape(str(directory)),
        points=len(summary.points),
        runs=sum(p["runs"] for p in summary.points),
        failed=sum(p["failed"] for p in summary.points),
        level=f"{summary.confidence:.0%}",
        now=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        figures=_figures(summary),
        table=_points_table(summary),
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
