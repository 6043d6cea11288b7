"""``make validate-linkmgr``'s parts: the unbounded transfer checked byte for byte (on loopback),
the simulator's calls read as ``fit-drops`` reads a log, and the table written between its
markers. The hour itself runs behind the make target."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from farlink.linkmgr.transfer import CHUNK_BYTES, Stream
from farlink.linkmgr.validation import (
    CALL_LOST,
    CONNECTED,
    Fit,
    Side,
    Validation,
    sim_drop_log,
    simulated_side,
    table_markdown,
)
from farlink.outputs import write_between_markers
from support import WALL_CLOCK

pytestmark = WALL_CLOCK

LIMIT_S = 30.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _transfer(*args: str) -> list[str]:
    return [sys.executable, "-m", "farlink.linkmgr.transfer", *args]


def _receiver(port: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        _transfer("receive-stream", "--port", str(port), "--timeout", "20"),
        stdout=subprocess.PIPE,
        text=True,
    )


def _sender(port: int, duration_s: float, seed: int = 1) -> subprocess.Popen[str]:
    return subprocess.Popen(
        _transfer(
            "send-stream",
            "127.0.0.1",
            *("--port", str(port), "--seed", str(seed)),
            *("--duration", str(duration_s), "--timeout", "20"),
        ),
    )


def test_the_stream_is_the_same_however_it_is_taken():
    a, b = Stream(7), Stream(7)
    whole = a.take(3 * CHUNK_BYTES + 5)
    parts = b.take(10) + b.take(CHUNK_BYTES) + b.take(2 * CHUNK_BYTES - 5)
    assert whole == parts
    assert Stream(8).take(100) != Stream(7).take(100)


def test_stream_checked_byte_for_byte_on_loopback():
    port = _free_port()
    rx = _receiver(port)
    tx = _sender(port, 1.0)
    try:
        assert tx.wait(LIMIT_S) == 0
        out, _ = rx.communicate(timeout=LIMIT_S)
    finally:
        tx.kill()
        rx.kill()
    result = json.loads(out)
    assert result["verified"] is True
    assert result["connections"] == 1
    assert result["bytes"] > CHUNK_BYTES
    assert result["end_unix_s"] >= result["start_unix_s"]


@pytest.mark.parametrize("seed, verified", [(1, True), (2, False)])
def test_a_new_connection_starts_the_stream_over(seed: int, verified: bool):
    port = _free_port()
    rx = _receiver(port)
    try:
        # A connection the bundle broke: the stream's first bytes, then silence, still open.
        deadline = time.monotonic() + LIMIT_S
        while True:
            try:
                stale = socket.create_connection(("127.0.0.1", port), timeout=LIMIT_S)
                break
            except ConnectionRefusedError:
                assert time.monotonic() < deadline
                time.sleep(0.05)
        with stale:
            stale.sendall(Stream(1).take(1000))
            time.sleep(0.5)
            # The new connection's stream starts over; one of another seed is not the stream.
            tx = _sender(port, 0.5, seed=seed)
            assert tx.wait(LIMIT_S) == 0
            out, _ = rx.communicate(timeout=LIMIT_S)
    finally:
        rx.kill()
    result = json.loads(out)
    assert result["connections"] == 2
    assert result["verified"] is verified
    assert result["bytes"] > 1000


def _trace(rows: list[tuple[float, int, int]], end_s: float) -> SimpleNamespace:
    t, m, s = zip(*rows, strict=True)
    return SimpleNamespace(
        traces={
            "member_state": {
                "time_ns": np.asarray(t) * 1e9,
                "member": np.asarray(m),
                "state": np.asarray(s),
            }
        },
        summary={"sim_time_s": end_s},
    )


def test_simulated_calls_read_as_fit_drops_reads_a_log():
    dropped, idle = 4, 0
    result = _trace(
        [
            (0.0, 0, CONNECTED),
            (100.0, 0, CALL_LOST),  # complete: 100 s, a drop
            (130.0, 0, dropped),
            (150.0, 0, CONNECTED),  # open at the end: 50 s censored
            (10.0, 1, CONNECTED),
            (40.0, 1, idle),  # hung up (its primary dropped): 30 s censored
        ],
        end_s=200.0,
    )
    log = sim_drop_log(result, 2)
    assert log.drops == 1
    assert list(log.intervals_s) == [100.0]
    assert log.exposure_s == pytest.approx(100.0 + 50.0 + 30.0)
    assert log.censoring == "time"


def test_simulated_side_of_a_short_compressed_run():
    side = simulated_side(8, 10.0, 600.0, 1)
    assert 0 < side.all_up_fraction <= side.any_up_fraction <= 1
    assert side.drops > 0 and side.fit is not None
    assert side.fit.drops == side.drops
    assert side.fit.low_per_s < side.fit.beta_per_s < side.fit.high_per_s
    assert 0 < side.goodput_bps < 8 * 2400


def _validation(fit: Fit | None) -> Validation:
    side = Side(0.85, 0.97, 12, 2, fit, 15000.0)
    return Validation(
        modems=8,
        duration_s=3600.0,
        time_scale=1.0,
        seed=1,
        configured_beta_per_s=1 / 3000,
        daemon=side,
        simulator=Side(0.83, 0.98, 14, None, fit, 14800.0),
        bytes_received=6_750_000,
        verified=True,
        connections=1,
        log="air.sqlite",
    )


def test_table_and_markers(tmp_path: Path):
    fit = Fit(1 / 2700, 1 / 5000, 1 / 1600, 12, 32400.0, "insufficient data")
    table = table_markdown(_validation(fit))
    assert "| all members up |  | 85.0 % | 83.0 % |" in table
    assert "1/50.0 min" in table and "1/45.0 min" in table
    assert "12 (of the primary 2)" in table
    assert "19200 bit/s (8 × 2400)" in table and "(78.1 %)" in table
    assert "too short" in table_markdown(_validation(None))
    doc = tmp_path / "doc.md"
    doc.write_text("before\n<!-- b -->\nold\n<!-- e -->\nafter\n")
    write_between_markers(doc, "<!-- b -->", "<!-- e -->", "new")
    write_between_markers(doc, "<!-- b -->", "<!-- e -->", "newer")
    assert doc.read_text() == "before\n<!-- b -->\nnewer\n<!-- e -->\nafter\n"
    # A document without the markers gets the section at its end.
    write_between_markers(doc, "<!-- x -->", "<!-- y -->", "row\n")
    assert doc.read_text().endswith("after\n\n<!-- x -->\nrow\n\n<!-- y -->\n")
