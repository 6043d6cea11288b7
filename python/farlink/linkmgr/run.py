"""Starting the daemon and the modem simulator: a configuration or a preset in, the Rust loop
run until SIGTERM or SIGINT."""

from __future__ import annotations

from pathlib import Path

DEFAULT_PRESET = "iridium-greenland-8"
"""The preset whose bundle the simulated modems take their parameters from."""


def run_daemon(config: str | Path) -> None:
    """Run the link-management daemon on ``config`` (TOML) until SIGTERM or SIGINT.

    Raises ``farlink._core.LinkMgrError`` (``kind`` ``config`` for a bad file, placed as
    ``FILE:LINE: path: message``).
    """
    from farlink import _core

    _core.linkmgr_run(str(config))


def run_modem_sim(
    modems: int,
    directory: str | Path,
    *,
    time_scale: float = 1.0,
    seed: int | None = None,
    preset: str = DEFAULT_PRESET,
    signal_reply_s: float = 4.0,
) -> None:
    """Run ``modems`` simulated modem pairs on ptys linked in ``directory`` until SIGTERM or
    SIGINT, with the rate, delay, call-drop rate, dial time and dial failures of ``preset``'s
    bundle and its random streams (``seed``: the preset's if None).

    Raises ``farlink.ScenarioError`` for a preset that cannot be read and
    ``farlink._core.LinkMgrError`` for a bad option.
    """
    from farlink import _core
    from farlink.scenario import load_scenario, to_core_json

    doc = load_scenario(preset)
    _core.linkmgr_modem_sim(
        to_core_json(doc), modems, str(directory), time_scale, seed, signal_reply_s
    )
