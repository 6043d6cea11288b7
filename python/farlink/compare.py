"""One scenario through the three engines: ``farlink.compare(scenario, **overrides)``.

The model column comes from the resolved scenario (:func:`farlink.scenario.resolve`) through
:func:`farlink.predict.path_inputs`, bounded by the path's capacity; the sim and emulate
columns are full runs with the same overrides. Which closed-form model stands for the scenario,
and why, is part of the model's result document (``model``, ``why``); where none applies
(a delay- or model-based controller such as BBR) its figures are None and ``why`` says so.

The emulator needs CAP_NET_ADMIN and /dev/net/tun: where the host lacks them the comparison
keeps the other two engines and says why in ``skipped``.
"""

from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from farlink import _core
from farlink.emulate import emulate
from farlink.predict import (
    PathInputs,
    bound,
    bounded_transfer_time_s,
    calldrop_of_path,
    path_inputs,
)
from farlink.results.result import Result
from farlink.results.schema import model_document
from farlink.scenario import apply_overrides, load_scenario, resolve
from farlink.sim import simulate

__all__ = [
    "DELAY_OR_MODEL_BASED",
    "ROWS",
    "Comparison",
    "compare",
    "figure",
    "model_column",
    "table_rows",
]

DELAY_OR_MODEL_BASED = {
    "bbr": "BBR paces at its estimate of the bottleneck rate and ignores random loss",
    "vegas": "Vegas sets its window from the RTT (queueing delay), not from loss",
    "stpd": "ST-PD sets its window by PD control of the queue estimated from the RTT",
}
"""Controllers no loss-driven closed-form model describes, and why."""

ROWS = (
    ("goodput_bps", "goodput (bit/s)"),
    ("normalized_goodput", "normalized goodput"),
    ("transfer_time_s", "transfer time (s)"),
    ("retransmissions", "retransmissions"),
    ("timeouts", "timeouts"),
    ("drops", "drops"),
)
"""The table's rows: a result document's field and its label."""

MODEL_COUNTS_WHY = "the model predicts a rate, not event counts"


@dataclass
class Comparison:
    """The three engines' results on one scenario."""

    scenario: str
    model: dict[str, Any]
    """The model's result document (engine ``model``)."""
    sim: Result
    emulate: Result | None
    """None when the emulator could not run here; ``skipped`` says why."""
    skipped: str | None = None
    documents: dict[str, dict[str, Any] | None] = field(init=False)

    def __post_init__(self) -> None:
        self.documents = {
            "model": self.model,
            "sim": self.sim.summary,
            "emulate": None if self.emulate is None else self.emulate.summary,
        }


def compare(
    scenario: str | Path | dict[str, Any],
    *,
    tcp: str | None = None,
    loss: float | None = None,
    duration: str | None = None,
    size: str | None = None,
    seed: int | None = None,
    sets: list[str] | tuple[str, ...] = (),
    profile: str | None = None,
) -> Comparison:
    """Run a scenario on model, sim and emulate with ``simulate``'s overrides.

    ``tcp`` goes to both packet engines (the emulator names the kernel's controller), and so
    does ``profile`` (every flow's TCP profile); the sim
    run also records its cwnd trace, which is drawn beside the kernel's. Raises what
    :func:`farlink.sim.simulate` and :func:`farlink.emulate.emulate` raise, except an
    ``EmulatorError`` of kind ``unsupported`` (no CAP_NET_ADMIN, no /dev/net/tun, not Linux),
    which leaves the emulate column out with its message in ``skipped``.
    """
    doc = scenario if isinstance(scenario, dict) else load_scenario(scenario)
    name = str(doc.get("name") or Path(str(scenario)).stem)
    overrides: dict[str, Any] = {
        "tcp": tcp,
        "loss": loss,
        "duration": duration,
        "size": size,
        "seed": seed,
        "sets": list(sets),
        "profile": profile,
    }
    resolved = resolve(apply_overrides(doc, **overrides))
    model = model_column(resolved, scenario=name)
    sim_sets = [*overrides.pop("sets"), "trace.cwnd=true"]
    sim = simulate(doc, **overrides, sets=sim_sets)
    emu: Result | None = None
    skipped: str | None = None
    try:
        emu = emulate(doc, **overrides, sets=sets)
    except _core.EmulatorError as err:
        if getattr(err, "kind", None) != "unsupported":
            raise
        skipped = str(err)
    return Comparison(scenario=name, model=model, sim=sim, emulate=emu, skipped=skipped)


def model_column(resolved: dict[str, Any], *, scenario: str | None) -> dict[str, Any]:
    """The model's result document for a resolved scenario's first flow.

    - a bottleneck bundle with call drops and a bulk transfer: seed 000 eq. 36 (``calldrop``),
      the one model that accounts for the members dropped and redialled;
    - otherwise a loss-based controller: PFTK (Padhye et al. 2000, eq. 31) with the path's loss
      after ARQ, its base RTT, the minimum RTO as T0 and the receive buffer as W_max; with no
      loss on the data path, PFTK's limit W_max / RTT (``window``);
    - a delay- or model-based controller (:data:`DELAY_OR_MODEL_BASED`): no model.

    Every throughput is bounded by the bottleneck's payload capacity. The transfer time is the
    bulk size over that throughput (a model of the steady state: no handshake, no slow start).
    """
    path = path_inputs(resolved)
    cc = resolved["flows"][0]["tcp"]["cc"]
    bottleneck_bps = resolved["flows"][0]["bottleneck_bps"]
    inputs = _inputs(path)
    if cc in DELAY_OR_MODEL_BASED:
        return _document(
            scenario,
            model=None,
            why=f"no closed-form model: {DELAY_OR_MODEL_BASED[cc]}",
            inputs=inputs,
        )
    if path.beta_per_s > 0 and path.size_bytes is not None and path.p > 0:
        return _calldrop(path, inputs, scenario, bottleneck_bps)
    return _pftk(path, cc, inputs, scenario, bottleneck_bps)


def _inputs(path: PathInputs) -> dict[str, Any]:
    return {
        "rtt_s": path.rtt_s,
        "p": path.p,
        "t0_s": path.t0_s,
        "mss_bytes": path.mss_bytes,
        "wmax_bytes": path.wmax_bytes,
        "b": path.b,
        "n_links": path.n_links,
        "beta_per_s": path.beta_per_s,
        "size_bytes": path.size_bytes,
    }


def _calldrop(
    path: PathInputs, inputs: dict[str, Any], scenario: str | None, bottleneck_bps: float
) -> dict[str, Any]:
    result = calldrop_of_path(path, path.size_bytes)
    why = (
        f"the bottleneck {path.bottleneck} is a bundle of {path.n_links} members dropped at "
        f"{path.beta_per_s:.3g}/s each: seed 000 eq. 36 adds the call drops' timeouts to PFTK"
    )
    return _rate_document(
        scenario,
        "calldrop",
        why,
        inputs,
        float(result.throughput_bps),
        path,
        bottleneck_bps,
        model_time_s=float(result.transfer_time_s),
    )


def _pftk(
    path: PathInputs, cc: str, inputs: dict[str, Any], scenario: str | None, bottleneck_bps: float
) -> dict[str, Any]:
    from farlink.models import pftk_full_throughput

    reno_like = "" if cc == "reno" else f" ({cc} is loss-based; PFTK gives Reno's rate)"
    if path.p == 0:
        rate_bps = path.wmax_bytes * 8 / path.rtt_s
        why = (
            "no loss on the data path: PFTK's limit as p -> 0, the receive window per RTT"
            f"{reno_like}"
        )
        return _rate_document(scenario, "window", why, inputs, rate_bps, path, bottleneck_bps)
    wmax_pkts = path.wmax_bytes / path.mss_bytes
    pkts_per_s = float(pftk_full_throughput(path.p, path.rtt_s, path.t0_s, path.b, wmax_pkts))
    why = f"a loss-based controller on a path losing p = {path.p:.3g}: PFTK eq. 31{reno_like}"
    if path.beta_per_s > 0:
        why += "; the call-drop model needs a bulk size (--size)"
    return _rate_document(
        scenario, "pftk", why, inputs, pkts_per_s * path.mss_bytes * 8, path, bottleneck_bps
    )


def _rate_document(
    scenario: str | None,
    model: str,
    why: str,
    inputs: dict[str, Any],
    model_bps: float,
    path: PathInputs,
    bottleneck_bps: float,
    *,
    model_time_s: float | None = None,
) -> dict[str, Any]:
    """The model column of a rate model; ``model_time_s``: the model's own transfer time where
    it counts the file otherwise than in bytes at its rate (eq. 36: whole segments)."""
    bounded = bound(model_bps, path.capacity_bps)
    if model_time_s is None and path.size_bytes is not None:
        model_time_s = path.size_bytes * 8 / model_bps
    goodput_bps = bounded.throughput_bps
    doc = _document(scenario, model=model, why=why, inputs=inputs)
    doc.update(
        {
            "goodput_bps": goodput_bps,
            "throughput_bps": goodput_bps,
            "model_throughput_bps": bounded.model_throughput_bps,
            "capacity_bps": bounded.capacity_bps,
            "capacity_binds": bounded.binds,
            "normalized_goodput": goodput_bps / bottleneck_bps,
            "transfer_time_s": None
            if model_time_s is None
            else bounded_transfer_time_s(model_time_s, bounded),
        }
    )
    return doc


def _document(
    scenario: str | None, *, model: str | None, why: str, inputs: dict[str, Any]
) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "model": model,
        "why": why,
        "inputs": inputs,
        "goodput_bps": None,
        "normalized_goodput": None,
        "transfer_time_s": None,
        "retransmissions": None,
        "timeouts": None,
        "drops": None,
        "not_predicted": MODEL_COUNTS_WHY,
    }
    return model_document(payload, scenario=scenario)


def table_rows(comparison: Comparison) -> list[tuple[str, str, str, str]]:
    """The table: one row per figure of :data:`ROWS`, one column per engine (text cells).

    An empty model cell says why (``n/a: ...``); the emulate column says ``skipped`` where the
    emulator could not run.
    """
    rows = []
    for key, label in ROWS:
        cells = [label]
        for engine, doc in comparison.documents.items():
            if doc is None:
                cells.append("skipped")
            elif engine == "model" and doc.get(key) is None:
                cells.append(_empty_model_cell(doc, key))
            else:
                cells.append(_cell(doc.get(key)))
        rows.append(tuple(cells))
    return rows  # type: ignore[return-value]


def _empty_model_cell(doc: dict[str, Any], key: str) -> str:
    if doc["model"] is None:
        return "n/a (no model)"
    if key == "transfer_time_s":
        return "n/a (not a bulk transfer)"
    return "n/a (rate only)"


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, dict):
        total = sum(value.values())
        parts = ", ".join(f"{k} {v}" for k, v in sorted(value.items()) if v)
        return f"{total}" + (f" ({parts})" if parts else "")
    if isinstance(value, float):
        return f"{value:.4g}" if math.isfinite(value) else str(value)
    return str(value)


def figure(comparison: Comparison, path: Path) -> Path:
    """A PNG: the three engines' goodput as bars, and beside them the first flow's congestion
    window over time from the simulator's cwnd trace and the kernel's TCP_INFO samples."""
    from farlink.reports.plots import plt

    fig, (bars, cwnd) = plt.subplots(1, 2, figsize=(11.0, 4.4), dpi=120)
    labels = list(comparison.documents)
    values = []
    for engine in labels:
        doc = comparison.documents[engine]
        value = None if doc is None else doc.get("goodput_bps")
        values.append(value)
    heights = [0.0 if v is None else v / 1e6 for v in values]
    drawn = bars.bar(labels, heights, color=["#4c72b0", "#dd8452", "#55a868"])
    for rect, value, engine in zip(drawn, values, labels, strict=True):
        note = f"{value / 1e6:.3g}" if value is not None else _missing(comparison, engine)
        bars.annotate(
            note,
            (rect.get_x() + rect.get_width() / 2, rect.get_height()),
            ha="center",
            va="bottom",
            fontsize=8,
        )
    bars.set_ylabel("goodput (Mbit/s)")
    bars.set_title("goodput by engine", fontsize=10)
    bars.grid(True, axis="y", alpha=0.3)

    drew = False
    sim_cwnd = comparison.sim.traces.get("cwnd")
    if sim_cwnd is not None and len(sim_cwnd.get("time_ns", [])):
        first = np.asarray(sim_cwnd["flow"]) == 0
        t = np.asarray(sim_cwnd["time_ns"])[first] / 1e9
        w = np.asarray(sim_cwnd["cwnd_bytes"])[first] / 1e3
        cwnd.step(t, w, where="post", label="sim cwnd", linewidth=1.2)
        drew = True
    if comparison.emulate is not None:
        info = comparison.emulate.traces.get("tcp_info", {})
        if len(info.get("time_s", [])):
            first = np.asarray(info["flow"]) == 0
            t = np.asarray(info["time_s"])[first]
            w = np.asarray(info["cwnd_bytes"])[first] / 1e3
            cwnd.step(t, w, where="post", label="kernel TCP_INFO cwnd", linewidth=1.2)
            drew = True
    if drew:
        cwnd.legend(fontsize=9)
    else:
        cwnd.text(0.5, 0.5, "no cwnd trace", ha="center", va="center", transform=cwnd.transAxes)
    cwnd.set_xlabel("time (s)")
    cwnd.set_ylabel("cwnd (kB)")
    cwnd.set_title("congestion window of the first flow", fontsize=10)
    cwnd.grid(True, alpha=0.3)
    model = comparison.model
    caption = f"{comparison.scenario}: model {model['model'] or 'none'}: {model['why']}"
    if comparison.skipped:
        caption += f"; emulate skipped: {comparison.skipped}"
    fig.text(0.01, 0.01, "\n".join(textwrap.wrap(caption, 170)), fontsize=7, color="0.35")
    fig.subplots_adjust(bottom=0.2, wspace=0.3)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, metadata={"Software": "farlink"})
    plt.close(fig)
    return path


def _missing(comparison: Comparison, engine: str) -> str:
    return "no model" if engine == "model" else "skipped"
