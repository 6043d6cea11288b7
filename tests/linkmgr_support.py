"""Support for the dashboard tests: a dashboard process, and logs with members in given states.

:func:`running_dashboard` starts ``farlink linkmgr dashboard`` as a child process that dies with
the test process (PR_SET_PDEATHSIG), waits for the address it prints, and stops it afterwards.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

from farlink.linkmgr.synthetic import LogWriter

FARLINK = Path(sys.executable).parent / "farlink"
T0 = 1_089_936_000.0
START_TIMEOUT_S = 60.0  # a loaded machine imports slowly; the test fails, never hangs, past it


def _die_with_parent() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


@contextlib.contextmanager
def running_dashboard(
    log: Path, listen: str = "127.0.0.1:0", token: str | None = None
) -> Iterator[str]:
    """Serve ``log``; yield the page's address (without the token)."""
    argv = [str(FARLINK), "linkmgr", "dashboard", str(log), "--listen", listen]
    if token is not None:
        argv += ["--token", token]
    proc = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_die_with_parent,
    )
    try:
        line: list[str] = []
        reader = threading.Thread(target=lambda: line.append(proc.stdout.readline()), daemon=True)
        reader.start()
        reader.join(START_TIMEOUT_S)
        if not line or not line[0].startswith("dashboard at "):
            proc.kill()
            raise AssertionError(f"dashboard did not start: {line} {proc.stderr.read()}")
        url = line[0].split("dashboard at ", 1)[1].strip().removesuffix("?token=TOKEN")
        port = url.rsplit(":", 1)[1].rstrip("/")
        yield f"http://127.0.0.1:{port}/"
        assert proc.poll() is None, f"the dashboard died: {proc.stderr.read()}"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()


def states_log(path: Path, names: Sequence[str], states: Sequence[str]) -> LogWriter:
    """A log whose members end in ``states`` (member i has i % 6 signal bars; the first member
    that ends connected is the primary), its events in time order as a daemon writes them.

    Returns the writer, still open, so that a test can make the log grow.
    """
    events: list[tuple[float, str, int | None, dict]] = [(T0, "daemon", None, {"detail": "start"})]
    for i, state in enumerate(states):
        t = T0 + 1 + 10 * i
        events.append((t, "state", i, {"state": "connecting"}))
        events.append((t, "dial", i, {"value": 1}))
        events.append((t + 20, "dial_result", i, {"value": 1, "detail": "CONNECT 9600"}))
        events.append((t + 20, "state", i, {"state": "connected"}))
        detail = json.dumps({"reply_s": 0.4, "handover": False})
        events.append((t + 30, "signal", i, {"value": i % 6, "detail": detail}))
        if state == "dropped":
            events.append((T0 + 200 + i, "drop", i, {"detail": "no carrier"}))
        if state != "connected":
            events.append((T0 + 200 + i, "state", i, {"state": state}))
    up = [i for i, state in enumerate(states) if state == "connected"]
    events.append((T0 + 250, "primary", up[0] if up else None, {}))
    for k in range(1, 31):
        rate = 2400.0 * min(k, 10) / 10  # the bundle's rate grows as members join
        events.append((T0 + 10 * k, "tx_bytes", None, {"value": rate * k}))
        events.append((T0 + 10 * k, "rx_bytes", None, {"value": rate * k / 4}))
    writer = LogWriter(path, list(names), started_unix_s=T0)
    for t, kind, modem, fields in sorted(events, key=lambda e: e[0]):
        writer.event(t, kind, modem, **fields)
    return writer
