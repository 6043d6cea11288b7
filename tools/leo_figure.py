"""docs/leo-rtt.png: RTT (2 x one-way delay) over 10 minutes of both presets' schedules.

Run: ``python tools/leo_figure.py docs/leo-rtt.png`` (``make leo-figure``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np


def draw(path: Path, duration_s: float = 600.0) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from farlink.leo import build_schedule, config_of_preset

    fig, axes = plt.subplots(2, 1, figsize=(8, 5.5), sharex=True)
    for ax, name in zip(axes, ("starlink-like", "iridium-leo"), strict=True):
        s = build_schedule(config_of_preset(name, duration_s=duration_s))
        at = np.array([r[0] for r in s.rows])
        rtt_ms = 2e3 * np.array([r[1] for r in s.rows])
        up = np.array([r[3] for r in s.rows]) == 1
        ax.plot(at, np.where(up, rtt_ms, np.nan), lw=1.2)
        sats = [r[4] for r in s.rows]
        for k in range(1, len(sats)):
            if sats[k] != sats[k - 1]:
                ax.axvline(at[k], color="0.75", lw=0.6, zorder=0)
        ax.set_ylabel("RTT (ms)")
        ax.set_title(f"{name}: {s.summary['handoffs']} hand-offs (grey lines)", fontsize=10)
        ax.grid(alpha=0.3)
    axes[-1].set_xlabel("time from 2024-01-01T00:00:00Z (s)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    draw(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/leo-rtt.png"))
