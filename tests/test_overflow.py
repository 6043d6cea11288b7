"""Holes before the tap told apart by the queue's level when they were made
(farlink.captures.overflow): a full tail-drop queue's overflows against random loss."""

import numpy as np
import pytest

from farlink.captures.overflow import queue_overflows
from support import segment_train

MSS = 1000
PACKET_S = 0.001  # one packet at the bottleneck
FULL_S = 0.050  # the queue's length when full


def _connection(waits_s: np.ndarray, *, timestamps: bool = True):
    """Segments sent 1 ms apart, each waiting ``waits_s`` before the tap, their TSvals the
    sender's 1 kHz clock."""
    n = len(waits_s)
    sent = np.arange(n) * 0.001
    tap_t = sent + waits_s
    order = np.argsort(tap_t, kind="stable")
    assert (order == np.arange(n)).all(), "a FIFO queue keeps the order"
    tsval = np.round(sent * 1000).astype(np.int64) + 5 if timestamps else None
    acks = (np.arange(n) + 1) * MSS
    return segment_train(tap_t, tap_t + 0.01, acks, mss_bytes=MSS, seg_tsval=tsval, ack_tsecr=tsval)


def _sawtooth(n: int, plateau: int) -> np.ndarray:
    """A queue rising 0.1 ms per segment to full, standing full for ``plateau`` segments, then
    draining 0.5 ms per segment (no faster than the segments are sent: FIFO), again and again."""
    cycle = np.concatenate(
        [np.arange(500) * 0.0001, np.full(plateau, FULL_S), FULL_S - np.arange(1, 101) * 0.0005]
    )
    return np.resize(cycle, n)


def test_holes_at_a_full_queue_are_overflows_and_the_rest_random():
    waits = _sawtooth(3000, plateau=100)
    conn = _connection(waits)
    # 12 overflows while the queue stood full, and 30 random losses, one every 100 segments
    # whatever the queue's level.
    overflows = np.flatnonzero(waits >= FULL_S)[5::20][:12]
    random = np.arange(37, len(waits), 100)
    holes = sorted({*overflows.tolist(), *random.tolist()})
    found = queue_overflows(conn, holes, PACKET_S)
    assert found.holes == len(holes) == 42
    # The random ones at the top are expected in proportion to the segments that pass there,
    # from those below it; the estimate takes them off the holes at the top.
    level = found.full_wait_s - found.band_s
    share = float(np.mean(np.fmax(waits[:-1], waits[1:]) >= level))
    below = sum(waits[h] < level and waits[h + 1] < level for h in holes)
    assert found.overflows == round(len(holes) - below - below * share / (1 - share))
    assert found.overflows == pytest.approx(12, abs=2)
    assert found.full_wait_s == pytest.approx(FULL_S, abs=0.0011)


def test_a_queue_that_stood_at_its_top_without_overflowing_shows_no_overflow():
    # A window-limited sender: the queue stands at its highest for a long time, and random
    # losses fall there about as often as segments pass.
    waits = _sawtooth(3000, plateau=400)
    conn = _connection(waits)
    rng = np.random.default_rng(7)
    holes = sorted(rng.choice(len(waits) - 1, size=40, replace=False).tolist())
    assert queue_overflows(conn, holes, PACKET_S).overflows == 0


def test_without_timestamps_every_hole_counts_as_random():
    waits = _sawtooth(600, plateau=100)
    conn = _connection(waits, timestamps=False)
    found = queue_overflows(conn, [520, 540, 560], PACKET_S)
    assert (found.holes, found.overflows, found.full_wait_s) == (3, 0, None)
