"""Figures of analysed connections: time-sequence, RTT, outstanding data, goodput histograms.

A capture's connections and a simulation's (:mod:`farlink.captures.simulated`) are drawn in the
same four PNGs, so that the two can be compared by eye (``docs/captures.md``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from farlink.captures.analysis import (
    GOODPUT_WINDOWS_S,
    NORMALIZED_BIN_EDGES,
    Connection,
    normalized_histogram,
)

__all__ = ["plot_connections"]


def plot_connections(
    connections: list[Connection],
    out: str | Path,
    *,
    stem: str = "analysis",
    drops_s: np.ndarray | None = None,
    sim_drops_s: np.ndarray | None = None,
    link_rate_bps: float | None = None,
    title: str | None = None,
    figures: tuple[str, ...] = ("tseq", "rtt", "outstanding", "goodput"),
) -> list[Path]:
    """Draw the connections (of one capture, or a capture beside a simulation) in four PNGs:
    time-sequence (retransmissions marked, call drops as vertical lines: ``drops_s`` from a log
    dashed, ``sim_drops_s`` from a simulation dotted), RTT samples, outstanding data and goodput
    histograms (normalised to ``link_rate_bps`` when given); ``figures`` chooses which of the
    four (by the names ending their files). Returns the paths written."""
    import matplotlib.pyplot as plt

    from farlink.reports import plots  # noqa: F401  (selects the Agg backend)

    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    written = []

    def save(fig: Any, name: str) -> None:
        if name not in figures:
            plt.close(fig)
            return
        path = folder / f"{stem}-{name}.png"
        fig.savefig(path, metadata={"Software": "farlink"})
        plt.close(fig)
        written.append(path)

    fig, ax = plt.subplots(figsize=(7.0, 4.4), dpi=120)
    for i, c in enumerate(connections):
        s = c.seq
        ax.plot(s["time_s"], (s["seq"] + s["len_bytes"]) / 1e3, ".", ms=2, label=f"{c.name} sent")
        rt = s["retransmission"]
        ax.plot(
            s["time_s"][rt],
            (s["seq"][rt] + s["len_bytes"][rt]) / 1e3,
            _RETX_MARKERS[i % len(_RETX_MARKERS)],
            ms=5,
            label=f"{c.name} retransmissions ({rt.sum()})",
        )
        ax.step(c.ack["time_s"], c.ack["ack"] / 1e3, where="post", lw=0.8, label=f"{c.name} ACK")
    for i, t in enumerate(drops_s if drops_s is not None else []):
        ax.axvline(t, color="0.4", ls="--", lw=0.8, label="call drop" if i == 0 else None)
    for i, t in enumerate(sim_drops_s if sim_drops_s is not None else []):
        label = "simulated call drop" if i == 0 else None
        ax.axvline(t, color="tab:purple", ls=":", lw=0.9, label=label)
    ax.set(xlabel="time (s)", ylabel="sequence (KB)", title=title or f"{stem}: time-sequence")
    _finish(ax)
    save(fig, "tseq")

    fig, ax = plt.subplots(figsize=(7.0, 4.4), dpi=120)
    for c in connections:
        ax.plot(c.rtt["time_s"], c.rtt["rtt_s"], ".", ms=3, label=f"{c.name} ({c.rtt_method})")
    ax.set(xlabel="time (s)", ylabel="RTT (s)", title=f"{stem}: RTT samples")
    _finish(ax)
    save(fig, "rtt")

    fig, ax = plt.subplots(figsize=(7.0, 4.4), dpi=120)
    for c in connections:
        ax.step(
            c.outstanding["time_s"],
            c.outstanding["bytes"] / 1e3,
            where="post",
            lw=0.8,
            label=c.name,
        )
    ax.set(xlabel="time (s)", ylabel="outstanding (KB)", title=f"{stem}: outstanding data")
    _finish(ax)
    save(fig, "outstanding")

    fig, axes = plt.subplots(len(GOODPUT_WINDOWS_S), 1, figsize=(7.0, 8.0), dpi=120)
    for ax, w in zip(axes, GOODPUT_WINDOWS_S, strict=True):
        _goodput_panel(ax, connections, w, link_rate_bps)
    axes[0].set_title(f"{stem}: goodput histograms", fontsize=10)
    fig.tight_layout()
    save(fig, "goodput")
    return written


# Retransmission markers, one style per connection so a capture and a simulation drawn together
# stay apart (red crosses first, as tcptrace draws them).
_RETX_MARKERS = ("rx", "k+", "m1", "c2")


def _goodput_panel(
    ax: Any, connections: list[Connection], w: float, link_rate_bps: float | None
) -> None:
    """One histogram panel: goodput over windows of ``w`` seconds, in kbit/s or normalised."""
    drawn = False
    for c in connections:
        g = c.goodput[w]
        if not len(g):
            continue
        label = f"{c.name} ({len(g)} windows)"
        if link_rate_bps:
            # Fractions of the windows, so a capture and a longer simulation compare.
            counts = normalized_histogram(g / link_rate_bps)
            ax.stairs(counts / len(g), NORMALIZED_BIN_EDGES, fill=True, alpha=0.5, label=label)
        else:
            ax.hist(g / 1e3, bins=30, alpha=0.6, label=label)
        drawn = True
    if not drawn:
        ax.text(0.5, 0.5, "no complete window", ha="center", va="center", transform=ax.transAxes)
    if link_rate_bps:
        rate = f"{link_rate_bps / 1e3:g} kbit/s"
        ax.set(
            xlabel=f"goodput over {w:g} s windows / link rate ({rate})",
            ylabel="share of windows",
            xlim=(0.0, 1.0),
        )
    else:
        ax.set(xlabel=f"goodput over {w:g} s windows (kbit/s)", ylabel="windows")
    _finish(ax, legend=drawn)


def _finish(ax: Any, legend: bool = True) -> None:
    ax.grid(True, alpha=0.3)
    ax.title.set_fontsize(10)
    if legend:
        ax.legend(fontsize=7)
