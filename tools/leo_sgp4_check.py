"""The built-in propagator beside ``sgp4`` on TLEs of the same orbits, printed per preset.

Run: ``python tools/leo_sgp4_check.py`` (docs/leo.md, "Checked against sgp4").
"""

from __future__ import annotations

from datetime import UTC, datetime

from farlink.leo.tle import sgp4_gap_km


def main() -> None:
    """Print the largest gap over four satellites of each preset's shell."""
    from farlink.leo.presets import PRESETS

    epoch = datetime(2024, 1, 1, tzinfo=UTC)
    for name, preset in PRESETS.items():
        total = preset.shell.planes * preset.shell.per_plane
        gaps = sgp4_gap_km(preset.shell, epoch, [0, 7, total // 2, total - 1])
        worst = max(gaps, key=gaps.get)
        print(f"{name}: largest gap over 10 min {gaps[worst] * 1000:.1f} m ({worst})")


if __name__ == "__main__":
    main()
