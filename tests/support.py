"""What the Python tests share: the command run in this process or as a process, the one-line
error it must give on bad input, and whether this host can make network namespaces and TUN
devices (the emulator, the wire senders, the link manager's data plane)."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest

from farlink.cli.app import main

# The command as a process, whatever the venv's entry-point script says.
FARLINK_ARGV = [
    sys.executable,
    "-c",
    "import sys; from farlink.cli.app import main; sys.exit(main())",
]

CAP_NET_ADMIN_BIT = 12


def run(capsys, *argv) -> tuple[int, str, str]:
    """`farlink ARGV` in this process: its exit status, stdout and stderr."""
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_error(code: int, err: str, *fragments: str) -> None:
    """Bad input: exit status 2 and one line `farlink: error: ...` holding every fragment."""
    assert code == 2, err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("farlink: error: "), err
    for fragment in fragments:
        assert fragment in lines[0], err


def namespaces_missing() -> str | None:
    """Why this host cannot make network namespaces and TUN devices, or None."""
    if sys.platform != "linux":
        return "not Linux"
    status = Path("/proc/self/status").read_text()
    cap_eff = next(
        int(line.split()[1], 16) for line in status.splitlines() if line.startswith("CapEff:")
    )
    if not cap_eff & (1 << CAP_NET_ADMIN_BIT):
        return "no CAP_NET_ADMIN"
    if not Path("/dev/net/tun").exists():
        return "no /dev/net/tun"
    if shutil.which("ip") is None:
        return "no iproute2 (ip)"
    return None


REAL_TIME = pytest.mark.real_time
"""The mark of a test that runs an emulation on the wall clock (network namespaces, the
emulator's driver, kernel TCP, real captures). Most measure time, so ``make test`` runs them
one after another in a pytest process of their own, beside the others; the modules that only
check what their emulations carry and print (the Makefile's ``COUNTED_EMULATIONS``) run one
after another in a second such process (Makefile, python-test)."""

WALL_CLOCK = pytest.mark.wall_clock
"""The mark of a test that waits on the wall clock without spinning: the link manager's daemons
and simulated modems at 2400 bit/s, its dashboard, a browser, kernel TCP through a real tbf
(tests/realcap.py: no emulator). ``make test`` runs these in a
process of their own beside the emulations': they mostly sleep, so they take little of a core."""

REAL_TIME_COMMANDS = re.compile(r"farlink (emulate|compare|send)\b(?!-)|farlink .*--emulate\b")
"""A documented command that runs an emulation (:data:`REAL_TIME`): ``farlink compare``, not
``farlink compare-bonding`` (the simulator alone) unless it is given ``--emulate``."""

WALL_CLOCK_COMMANDS = ("farlink linkmgr",)
"""A documented command that runs the link manager (:data:`WALL_CLOCK`)."""


def clock_marks(text: str) -> list[pytest.MarkDecorator]:
    """The marks of a test running the documented commands in ``text``: :data:`REAL_TIME` for
    an emulation (it comes first: the emulator wants a core), else :data:`WALL_CLOCK` for the
    link manager, else none."""
    if REAL_TIME_COMMANDS.search(text):
        return [REAL_TIME]
    if any(c in text for c in WALL_CLOCK_COMMANDS):
        return [WALL_CLOCK]
    return []


def needs_namespaces(what: str) -> pytest.MarkDecorator:
    """Skip, saying why, where the host cannot make namespaces and TUN devices."""
    why = namespaces_missing()
    return pytest.mark.skipif(why is not None, reason=f"{what}: {why}")


def segment_train(seg_t, ack_t, ack, *, mss_bytes: int, **series):
    """A connection (farlink.captures.analysis.build_connection) of data segments of one MSS
    each, in sequence, crossing a tap at ``seg_t``, and its ACKs; ``series`` adds SACK blocks
    (``sack``) or TCP timestamps (``seg_tsval``, ``ack_tsecr``)."""
    import numpy as np

    from farlink.captures.analysis import build_connection

    n = len(seg_t)
    return build_connection(
        name="train",
        source="synthetic",
        seg_t=seg_t,
        seq=np.arange(n, dtype=np.int64) * mss_bytes,
        lens=np.full(n, mss_bytes, dtype=np.int64),
        ack_t=ack_t,
        ack=ack,
        mss_bytes=mss_bytes,
        **series,
    )
