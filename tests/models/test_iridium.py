"""Iridium bundle arithmetic: seed 000 sections 4.1.6 and 5.2."""

import numpy as np
import pytest

from farlink.models import (
    clocking_time_s,
    go_back_n_service_time_s,
    loaded_rtt_s,
    packets_lost_per_call_drop,
)


def test_worked_examples_of_the_thesis():
    assert clocking_time_s(1500, 2400) == pytest.approx(5.0)
    assert loaded_rtt_s(6.5) == pytest.approx(19.5)  # Q_P = 3 by default
    assert loaded_rtt_s(clocking_time_s(1500, 2400)) == pytest.approx(15.0)
    assert packets_lost_per_call_drop(10, 2400, 4500, 1500, 1500) == pytest.approx(9.0)


def test_go_back_n_without_errors_is_the_clocking_time():
    assert go_back_n_service_time_s(1500, 2400, 100, 0.0, 0.5) == pytest.approx(5.0)


def test_go_back_n_costs_a_window_per_error():
    # 100-byte frames at 2400 bit/s last 1/3 s; a 1 s round trip keeps 3 more frames in flight,
    # so N = 4 and each frame takes (1 + 3 P) / (1 − P) slots.
    p = np.array([0.01, 0.1, 0.3])
    t = go_back_n_service_time_s(1500, 2400, 100, p, 0.5)
    assert t == pytest.approx(15 * (1 / 3) * (1 + 3 * p) / (1 - p))
    assert np.all(np.diff(t) > 0)


def test_longer_propagation_costs_more_per_error():
    near, far = go_back_n_service_time_s(1500, 2400, 100, 0.1, [0.01, 2.0])
    assert far > near


def test_drop_loss_grows_with_detection_delay():
    lost = packets_lost_per_call_drop(np.array([0.0, 10.0, 30.0]), 2400, 4500, 1500, 1500)
    assert lost.tolist() == pytest.approx([7.0, 9.0, 13.0])


def test_bad_frame_error_rate():
    with pytest.raises(ValueError, match="frame_error_rate"):
        go_back_n_service_time_s(1500, 2400, 100, 1.0, 0.5)
