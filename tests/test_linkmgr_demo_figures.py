"""The figures ``farlink linkmgr demo`` sets beside its real run: eq. 36 from the demo's own
bundle with its timers scaled, and the simulator's spread over ten seeds (no root needed)."""

from __future__ import annotations

import pytest

from farlink.linkmgr.demo import SimulatedSpread, model_time_s, scaled_timers, simulated_spread


def test_the_model_follows_the_time_scale_as_the_demo_does() -> None:
    # 40 kB over four modems: at time scale 50 the calls drop 50 times as often and the dial is
    # 50 times shorter, TCP's timeout unchanged (as the kernel's). With the eight-modem inputs
    # of Table 6.1 (T0 = 60 s), eq. 36 gave 1,658 s here beside a 139 s transfer.
    scaled, plain = model_time_s(4, 40_000, 50), model_time_s(4, 40_000, 1)
    dial_s = scaled_timers(1)["dial_time_s"]
    assert plain - dial_s == pytest.approx(scaled - dial_s / 50, rel=0.5)
    assert scaled < plain


def test_the_model_reads_the_bundle_it_is_given() -> None:
    # Twice the members, about half the time for a file long enough to leave slow start behind.
    eight, four = model_time_s(8, 1_380_000, 1), model_time_s(4, 1_380_000, 1)
    assert 1.6 < four / eight < 2.4


def test_the_simulated_spread_is_ten_seeds_and_judges_the_real_run() -> None:
    spread = simulated_spread(2, 2_000, 10)
    assert len(spread.times_s) == 10
    p10, p50, p90 = (spread.percentile_s(q) for q in (10, 50, 90))
    assert p10 is not None and p90 is not None
    assert p10 <= p50 <= p90
    assert spread.judge(p10 / 2) == "below"
    assert spread.judge(p50) == "within"
    assert spread.judge(2 * p90) == "above"


def test_a_spread_with_no_finished_run_judges_nothing() -> None:
    spread = SimulatedSpread((None, None))
    assert spread.percentile_s(50) is None
    assert spread.judge(10.0) == "unknown"
