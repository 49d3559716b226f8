"""Transmit power per client: fixed, per device class, open-loop fractional (by hand)."""

from __future__ import annotations

import numpy as np
import pytest

from channels import (
    POWER_CONTROLS,
    FixedPower,
    FractionalPower,
    PerClassPower,
    PowerControl,
    make_power_control,
)


def test_fixed_power():
    np.testing.assert_allclose(FixedPower(20.0).watts(np.zeros(3), None), [0.1, 0.1, 0.1])


def test_per_class_power():
    power = PerClassPower({"low_end_phone": 20.0, "laptop_cpu": 30.0})
    got = power.watts(np.zeros(2), ["laptop_cpu", "low_end_phone"])
    np.testing.assert_allclose(got, [1.0, 0.1])


def test_fractional_power_by_hand():
    # min(23, -80 + 0.8 PL): PL 100 dB -> 0 dBm = 1 mW; PL 140 dB -> 32 -> capped at 23 dBm
    power = FractionalPower(p_max_dbm=23.0, p0_dbm=-80.0, alpha=0.8)
    np.testing.assert_allclose(power.dbm(np.array([100.0, 140.0]), None), [0.0, 23.0])
    np.testing.assert_allclose(power.watts(np.array([100.0, 140.0]), None), [1e-3, 10**-0.7])


def test_registry_builds_each_model():
    assert list(POWER_CONTROLS) == ["fixed", "per_class", "fractional"]
    assert isinstance(make_power_control("fixed", p_dbm=10.0), FixedPower)
    frac = make_power_control("fractional", p_max_dbm=23.0, p0_dbm=-90.0, alpha=1.0)
    assert isinstance(frac, PowerControl) and frac.alpha == 1.0


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: make_power_control("adaptive"), "unknown power control 'adaptive'; accepted: "),
        (lambda: make_power_control("fixed"), "missing parameter 'p_dbm' for power control"),
        (lambda: make_power_control("fixed", p_dbm=1.0, x=2), "unknown parameter 'x'"),
        (lambda: PerClassPower({}), "per_class_dbm must be a non-empty mapping"),
        (lambda: FractionalPower(23.0, -80.0, 1.5), r"alpha must be in \[0, 1\]"),
        (
            lambda: PerClassPower({"laptop_cpu": 1.0}).dbm(np.zeros(2), None),
            "pass client_class",
        ),
        (
            lambda: PerClassPower({"laptop_cpu": 1.0}).dbm(np.zeros(1), ["toaster"]),
            "no value for device class 'toaster'",
        ),
    ],
)
def test_errors_are_one_line(call, match):
    with pytest.raises(ValueError, match=match) as err:
        call()
    assert "\n" not in str(err.value)
