"""--calibrate: a short pilot turns recorded arrays into BoundConstants."""

from __future__ import annotations

import numpy as np
import pytest
from scenario_helpers import digits_scenario

from wirelessfl.study.calibrate import calibrate


@pytest.mark.slow
@pytest.mark.usefixtures("one_torch_thread")
def test_pilot_constants_come_from_the_recorded_arrays():
    sc = digits_scenario(rounds=2)
    constants, record, ranks = calibrate(sc, 4, rounds=2, progress=lambda *_: None)
    assert ranks == [2, 4, 8]
    # G and W are maxima of what the pilot recorded (independent of optim's code paths)
    assert pytest.approx(float(np.max(record.grad_norms))) == constants.G
    assert pytest.approx(float(np.max(record.component_norms))) == constants.W
    assert record.trajectory_params.shape == record.trajectory_grads.shape
    assert record.sweep_updates.shape[0] == 3
    for name in ("S", "H", "W", "phi", "G"):
        value = getattr(constants, name)
        assert np.isfinite(value) and value > 0, name
    assert constants.eta == 0.1 and constants.E == 8
