"""Figures: matplotlib with the non-interactive Agg backend, written as PNG.

Figures carry their parameters in the title or a caption line, so a PNG found alone in an output
folder still says what it shows.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np


def line_figure(
    path: Path,
    *,
    x: np.ndarray,
    curves: Sequence[tuple[str, np.ndarray]],
    xlabel: str,
    ylabel: str,
    title: str,
    caption: str = "",
    points: Sequence[tuple[str, np.ndarray, np.ndarray]] = (),
    logx: bool = False,
    logy: bool = False,
    ylim: tuple[float, float] | None = None,
) -> Path:
    """Draw labelled curves over one x axis (and optional marked points) and save a PNG."""
    fig, ax = plt.subplots(figsize=(7.0, 4.4), dpi=120)
    for label, y in curves:
        ax.plot(x, y, label=label, linewidth=1.8)
    for label, px, py in points:
        ax.plot(px, py, "o", label=label, markersize=6)
    if logx:
        ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    if ylim is not None:
        ax.set_ylim(*ylim)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=9)
    if caption:
        fig.text(0.01, 0.01, caption, fontsize=7, color="0.35")
        fig.subplots_adjust(bottom=0.17)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, metadata={"Software": "farlink"})
    plt.close(fig)
    return path


def panels_figure(
    path: Path,
    *,
    panels: Sequence[tuple],
    xlabel: str,
    title: str,
    caption: str = "",
) -> Path:
    """Stack panels over one shared x axis and save a PNG.

    Each panel is ``(ylabel, series)`` or ``(ylabel, series, style)`` with series
    ``(label, x, y)``. ``style`` is ``"step"`` (the default: each value held until the next, how
    traces recorded on change read), ``"line"`` or ``"points"`` (markers, e.g. lost packets).
    """
    fig, axes = plt.subplots(
        len(panels), 1, figsize=(7.0, 2.3 * len(panels) + 0.9), dpi=120, sharex=True
    )
    axes = np.atleast_1d(axes)
    for ax, panel in zip(axes, panels, strict=True):
        ylabel, series = panel[0], panel[1]
        style = panel[2] if len(panel) > 2 else "step"
        for label, x, y in series:
            if style == "step":
                ax.step(x, y, where="post", label=label, linewidth=1.0)
            elif style == "points":
                ax.plot(x, y, ".", label=label, markersize=4)
            else:
                ax.plot(x, y, label=label, linewidth=1.2)
        ax.set_ylabel(ylabel, fontsize=9)
        ax.grid(True, alpha=0.3)
        if any(label for label, _, _ in series):
            ax.legend(fontsize=8, loc="upper right")
    axes[-1].set_xlabel(xlabel)
    axes[0].set_title(title, fontsize=9)
    if caption:
        fig.text(0.01, 0.005, caption, fontsize=7, color="0.35")
    fig.tight_layout(rect=(0, 0.03 if caption else 0, 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, metadata={"Software": "farlink"})
    plt.close(fig)
    return path
