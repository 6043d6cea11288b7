"""Starting the daemon and the modem simulator: a configuration or a preset in, the Rust loop
run until SIGTERM or SIGINT."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

DEFAULT_PRESET = "iridium-greenland-8"
"""The preset whose bundle the simulated modems take their parameters from."""


LOG_WAIT_S = 30.0
"""The longest the dashboard waits for a starting daemon's log (a loaded machine)."""


def run_daemon(config: str | Path, say: Callable[[str], None] = print) -> None:
    """Run the link-management daemon on ``config`` (TOML) until SIGTERM or SIGINT, and the
    dashboard of its log beside it in this process if the configuration has a ``[dashboard]``.

    Raises ``farlink._core.LinkMgrError`` (``kind`` ``config`` for a bad file, placed as
    ``FILE:LINE: path: message``) and ``farlink.linkmgr.dashboard.DashboardError`` for a
    dashboard address that cannot be used (off loopback without a token, a port in use).
    """
    from farlink import _core

    cfg = json.loads(_core.linkmgr_config(str(config)))
    dashboard = cfg.get("dashboard")
    if dashboard is None:
        _core.linkmgr_run(str(config))
        return
    from farlink.linkmgr.dashboard import (
        DashboardError,
        check_access,
        parse_listen,
        serve_in_thread,
    )

    # Refused before the daemon dials anything, as `farlink linkmgr dashboard` refuses it.
    try:
        host, _ = parse_listen(dashboard["listen"])
        check_access(host, dashboard["token"])
    except DashboardError as err:
        # Its messages name the command's options; here they are the table's fields.
        raise DashboardError(str(err).replace("--", "dashboard.")) from None
    failure: list[BaseException] = []

    def daemon() -> None:
        try:
            _core.linkmgr_run(str(config))
        except BaseException as err:  # re-raised in the calling thread
            failure.append(err)

    # The daemon's loop in a thread (the GIL released, SIGTERM and SIGINT its own), the
    # dashboard in another once the daemon has made its log.
    loop = threading.Thread(target=daemon, name="linkmgr-daemon")
    loop.start()
    stop = threading.Event()
    log = Path(cfg["log"])
    try:
        if _await_log(log, loop):
            serve_in_thread(log, dashboard["listen"], dashboard["token"], stop, say, LOG_WAIT_S)
    except BaseException:
        # The dashboard could not start: the daemon stops as on SIGTERM (logging its stop).
        os.kill(os.getpid(), signal.SIGTERM)
        raise
    finally:
        while loop.is_alive():
            loop.join(0.5)
        stop.set()
    if failure:
        raise failure[0]


def _await_log(log: Path, loop: threading.Thread) -> bool:
    """Whether the daemon made its log (False: it stopped first, with its error)."""
    from farlink.linkmgr.dashboard import DashboardError
    from farlink.linkmgr.eventlog import EventLog, EventLogError

    deadline = time.monotonic() + LOG_WAIT_S
    while loop.is_alive():
        try:
            EventLog(log).close()
            return True
        except EventLogError:
            if time.monotonic() > deadline:
                raise DashboardError(f"the daemon's log {log} did not appear") from None
            time.sleep(0.1)
    return False


def run_modem_sim(
    modems: int,
    directory: str | Path,
    *,
    time_scale: float = 1.0,
    seed: int | None = None,
    preset: str = DEFAULT_PRESET,
    signal_reply_s: float = 4.0,
    loss: float | None = None,
) -> None:
    """Run ``modems`` simulated modem pairs on ptys linked in ``directory`` until SIGTERM or
    SIGINT, with the rate, delay, ARQ, frame errors, call-drop rate, dial time and dial
    failures of ``preset``'s bundle and its random streams (``seed``: the preset's if None;
    ``loss``: the frame error rate of its lossy link's data direction, as ``simulate --loss``).

    Raises ``farlink.ScenarioError`` for a preset that cannot be read and
    ``farlink._core.LinkMgrError`` for a bad option.
    """
    from farlink import _core
    from farlink.scenario import apply_overrides, load_scenario, to_core_json

    doc = apply_overrides(load_scenario(preset), loss=loss)
    _core.linkmgr_modem_sim(
        to_core_json(doc), modems, str(directory), time_scale, seed, signal_reply_s
    )
