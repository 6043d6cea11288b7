"""The demo's two network namespaces, named and cleaned up by the emulator's rules
(crates/farlink-emu/src/netns.rs): ``farlink-<run>-<node>`` with ``<run>`` in hex, and an
exclusive ``flock`` on ``/run/farlink/<run>.lock`` held while the run lives. The kernel drops the
lock however the process dies, so the next start (the demo's or the emulator's) removes the
namespaces of a run killed with SIGKILL.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import subprocess
from pathlib import Path

PREFIX = "farlink-"
NETNS_DIR = Path("/run/netns")
LOCK_DIR = Path("/run/farlink")


class NetnsError(RuntimeError):
    """A namespace could not be made (not root, no iproute2)."""


def ip(*args: str) -> None:
    """Runs ``ip ARGS``; an error names the command and what it printed."""
    try:
        out = subprocess.run(["ip", *args], capture_output=True, text=True, check=False)
    except FileNotFoundError:
        raise NetnsError("cannot run `ip` (iproute2)") from None
    if out.returncode != 0:
        raise NetnsError(f"`ip {' '.join(args)}` failed: {out.stderr.strip()}")


def _run_of(name: str) -> str | None:
    """The run id of ``farlink-<hex>-<node>``, else None (other tools' namespaces)."""
    if not name.startswith(PREFIX):
        return None
    run = name[len(PREFIX) :].split("-")[0]
    return run if run and all(c in "0123456789abcdef" for c in run) else None


def _run_is_gone(run: str) -> bool:
    path = LOCK_DIR / f"{run}.lock"
    try:
        fd = os.open(path, os.O_WRONLY)
    except OSError:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    finally:
        os.close(fd)
    with contextlib.suppress(OSError):
        path.unlink()
    return True


def _stop_processes_in(name: str) -> None:
    """Ends what a killed run left running in namespace ``name`` (its daemons, say)."""
    out = subprocess.run(["ip", "netns", "pids", name], capture_output=True, text=True)
    for pid in out.stdout.split():
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(pid), signal.SIGKILL)


def remove_stale() -> list[str]:
    """Removes the namespaces of farlink runs that are gone; returns their names."""
    try:
        names = sorted(p.name for p in NETNS_DIR.iterdir())
    except OSError:
        return []
    stale = [n for n in names if (run := _run_of(n)) is not None and _run_is_gone(run)]
    removed = []
    for n in stale:
        _stop_processes_in(n)
        with contextlib.suppress(NetnsError):
            ip("netns", "delete", n)
            removed.append(n)
    return removed


class RunNamespaces:
    """This run's lock and the namespaces it made; :meth:`close` removes them."""

    def __init__(self) -> None:
        LOCK_DIR.mkdir(parents=True, exist_ok=True)
        # The process id and a fixed last digit, in hex (the emulator's form, short enough
        # for interface names); 'd' for demo, so the emulator's own ids of this process
        # (pid and a counter) rarely meet it, and a taken lock is refused rather than shared.
        self.run = f"{os.getpid():x}d"
        self._lock_path = LOCK_DIR / f"{self.run}.lock"
        self._lock_fd = os.open(self._lock_path, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as err:
            os.close(self._lock_fd)
            raise NetnsError(f"lock {self._lock_path}: {err.strerror}") from None
        self.names: list[str] = []

    def create(self, node: str) -> str:
        """Makes ``farlink-<run>-<node>`` with its loopback up; returns its name."""
        name = f"{PREFIX}{self.run}-{node}"
        ip("netns", "add", name)
        self.names.append(name)
        ip("-n", name, "link", "set", "lo", "up")
        return name

    def close(self) -> None:
        for name in reversed(self.names):
            _stop_processes_in(name)
            with contextlib.suppress(NetnsError):
                ip("netns", "delete", name)
        self.names.clear()
        if self._lock_fd >= 0:
            with contextlib.suppress(OSError):
                self._lock_path.unlink()
            os.close(self._lock_fd)
            self._lock_fd = -1
