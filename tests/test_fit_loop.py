"""The fit loop (tools/validate_fit_loop.py) on its two short cells: kernel CUBIC through the
emulator on stpd-wireless at p = 0 and 1e-2, 1 MB, captured at the sender, fitted and
simulated, comes back within 15 % of the emulated transfer time; the fit splits the losses by
cause as the emulator made them. About 25 s each (real-time emulation)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from support import REAL_TIME, needs_namespaces

SCRIPT = Path(__file__).resolve().parents[1] / "tools" / "validate_fit_loop.py"

pytestmark = [REAL_TIME, needs_namespaces("the fit loop emulates kernel TCP")]


@pytest.fixture(scope="module")
def loop():
    spec = importlib.util.spec_from_file_location("validate_fit_loop", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    # Its dataclass resolves its annotations through sys.modules.
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("loss", [0.0, 1e-2])
def test_a_sender_side_capture_fitted_gives_the_run_back(loop, loss, tmp_path):
    (cell,) = [c for c in loop.cells("stpd-wireless", ("cubic",)) if c.loss == loss]
    row = loop.run_cell(cell, tmp_path)
    emulated = row["emulated"]
    fitted = row["captures"]["sender"]
    assert fitted["tap_location"] == "sender"
    seen = (
        f"emulated {emulated['transfer_time_s']:.2f} s, drops {emulated['drops']}; fitted "
        f"{fitted['simulated']['transfer_time_s']:.2f} s, {fitted['loss_by_cause']}"
    )
    print(seen)
    assert loop.within(fitted["simulated"]["transfer_time_s"], emulated["transfer_time_s"]), seen
    # Every overflow the emulator's queue made is the fitted queue's, not the link's loss: at
    # p = 0 the fitted link loses nothing at random.
    cause = fitted["loss_by_cause"]
    overflows = emulated["drops"]["queue_overflow"]
    assert abs(cause["queue_overflows"] - overflows) <= 0.2 * overflows + 2, seen
    if loss == 0:
        assert cause["random_losses"] <= 2, seen
    else:
        corrupted = emulated["drops"]["corruption"]
        assert abs(cause["random_losses"] - corrupted) <= 0.5 * corrupted + 2, seen
    # The receiver's capture is the receiver's: never the last hop's delay as the path's.
    receiver = row["captures"]["receiver"]
    assert receiver["tap_location"] == "receiver"
    assert receiver["delay_s"] == pytest.approx(fitted["delay_s"], rel=0.1)
