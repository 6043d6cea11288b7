"""Kernel cubic through the emulator and through a real tbf bottleneck of the same rate and
queue, no delay, no loss (issue 11): the TCP crossing them must see the same path.

About 4 s each way. Asserts behaviour, not speed: both fill the bottleneck (goodput within 15 %
of the rate and of each other) and both hold a standing queue of the same order (queue delay
within a factor 2). Namespaces are removed on exit, and those of a killed run at the next start.
"""

import pytest

from farlink.tbf_compare import emulator_run, kernel_run
from farlink.testbed import missing_capability
from support import REAL_TIME, needs_namespaces

RATE_BPS = 10e6
QUEUE_PKTS = 50
DURATION_S = 4.0

pytestmark = [
    REAL_TIME,
    needs_namespaces("emulator beside a tbf"),
    pytest.mark.skipif(missing_capability() is not None, reason=str(missing_capability())),
]


def test_emulator_and_tbf_look_alike_to_cubic():
    emu = emulator_run(RATE_BPS, QUEUE_PKTS, 0.0, "cubic", DURATION_S)
    ker = kernel_run(RATE_BPS, QUEUE_PKTS, 0.0, "cubic", DURATION_S)
    for side in (emu, ker):
        assert side["goodput_bps"] == pytest.approx(RATE_BPS, rel=0.15), (emu, ker)
    assert emu["goodput_bps"] == pytest.approx(ker["goodput_bps"], rel=0.15), (emu, ker)
    # A 50-packet queue at 10 Mbit/s is up to 60 ms: cubic keeps tens of ms of it standing.
    for side in (emu, ker):
        assert side["queue_delay_ms"] > 5, (emu, ker)
    ratio = emu["queue_delay_ms"] / ker["queue_delay_ms"]
    assert 0.5 <= ratio <= 2, (emu, ker)
