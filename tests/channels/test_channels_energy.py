"""channels.energy: compute energy models, transmit energy and fractional power control."""

from __future__ import annotations

import math

import numpy as np
import pytest

from channels import (
    COMPUTE_ENERGY_MODELS,
    DEVICE_CLASS_JOULES_PER_FLOP,
    DEVICE_CLASSES,
    CmosEnergy,
    PerFlopEnergy,
    fractional_power_control_dbm,
    make_compute_energy,
    transmit_energy_j,
)


def test_every_device_class_has_a_default_energy_per_flop():
    assert set(DEVICE_CLASS_JOULES_PER_FLOP) == set(DEVICE_CLASSES)
    assert all(1e-12 < v < 1e-9 for v in DEVICE_CLASS_JOULES_PER_FLOP.values())
    # RTX 4090: 3e13 FLOP/s sustained at ~450 W
    assert DEVICE_CLASS_JOULES_PER_FLOP["desktop_gpu"] == pytest.approx(450.0 / 3e13)


def test_per_flop_by_hand():
    flops = np.array([1e9, 2e9, 0.0])
    np.testing.assert_allclose(PerFlopEnergy(1e-10).energy_j(flops, None), [0.1, 0.2, 0.0])
    classes = ["desktop_gpu", "low_end_phone", "laptop_cpu"]
    e = make_compute_energy("per_flop").energy_j(flops, classes)
    np.testing.assert_allclose(e, [1e9 * 1.5e-11, 2e9 * 2e-10, 0.0])
    custom = PerFlopEnergy({"a": 1.0, "b": 2.0}).energy_j(np.array([3.0, 3.0]), ["b", "a"])
    np.testing.assert_array_equal(custom, [6.0, 3.0])


def test_cmos_by_hand():
    # E = kappa f^2 FLOPs / flops_per_cycle = 1e-28 * (2e9)^2 * 1e9 / 8 = 0.05 J
    e = CmosEnergy().energy_j(np.array([1e9, 0.0]), None)
    np.testing.assert_allclose(e, [0.05, 0.0], rtol=1e-15)
    m = make_compute_energy(
        "cmos", kappa=2e-28, cpu_freq_hz={"x": 1e9, "y": 3e9}, flops_per_cycle=4.0
    )
    np.testing.assert_allclose(
        m.energy_j(np.array([4e9, 4e9]), ["y", "x"]), [2e-28 * 9e18 * 1e9, 2e-28 * 1e18 * 1e9]
    )
    # doubling the clock quadruples the energy of the same work
    f = np.array([1e10])
    assert CmosEnergy(cpu_freq_hz=4e9).energy_j(f, None)[0] == pytest.approx(
        4 * CmosEnergy(cpu_freq_hz=2e9).energy_j(f, None)[0]
    )


def test_transmit_energy():
    assert transmit_energy_j(0.2, 3.0) == pytest.approx(0.6)
    e = transmit_energy_j(np.array([0.1, 0.2, 0.3, 0.0]), np.array([0.0, 2.0, math.inf, math.inf]))
    assert e[0] == 0.0 and e[1] == pytest.approx(0.4) and e[2] == math.inf and e[3] == 0.0
    np.testing.assert_allclose(transmit_energy_j(0.5, np.array([1.0, 2.0])), [0.5, 1.0])


def test_fractional_power_control_by_hand():
    # P = min(P_max, P0 + alpha PL): -80 + 0.8 * 100 = 0 dBm; -80 + 0.8 * 140 = 32 -> 23 (cap)
    p = fractional_power_control_dbm(
        np.array([100.0, 120.0, 140.0]), p_max_dbm=23.0, p0_dbm=-80.0, alpha=0.8
    )
    np.testing.assert_allclose(p, [0.0, 16.0, 23.0])
    assert fractional_power_control_dbm(90.0, p_max_dbm=23.0, p0_dbm=10.0, alpha=0.0) == 10.0
    assert fractional_power_control_dbm(200.0, p_max_dbm=23.0, p0_dbm=-100.0, alpha=1.0) == 23.0


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: make_compute_energy("nope"), "unknown compute energy model 'nope'; accepted: "),
        (
            lambda: make_compute_energy("cmos", bogus=1),
            "unknown parameter .bogus. for compute energy",
        ),
        (lambda: PerFlopEnergy(-1.0), "joules_per_flop must be > 0"),
        (lambda: CmosEnergy(kappa=0.0), "kappa must be > 0"),
        (lambda: make_compute_energy("per_flop").energy_j(np.ones(2), None), "pass client_class"),
        (
            lambda: PerFlopEnergy().energy_j(np.ones(2), ["low_end_phone", "toaster"]),
            "no value for device class 'toaster'",
        ),
        (lambda: PerFlopEnergy().energy_j(np.ones(2), ["laptop_cpu"]), "one class per client"),
        (lambda: PerFlopEnergy(1.0).energy_j(np.array([-1.0]), None), "flops must be >= 0"),
        (lambda: transmit_energy_j(-1.0, 1.0), "tx_power_w must be >= 0"),
        (lambda: transmit_energy_j(1.0, -1.0), "upload_s must be >= 0"),
        (
            lambda: fractional_power_control_dbm(100.0, p_max_dbm=23.0, p0_dbm=-80.0, alpha=1.5),
            r"alpha must be in \[0, 1\]",
        ),
    ],
)
def test_errors_are_one_line(call, match):
    with pytest.raises(ValueError, match=match) as err:
        call()
    assert "\n" not in str(err.value)


def test_registry_lists_the_models():
    assert list(COMPUTE_ENERGY_MODELS)[:2] == ["per_flop", "cmos"]
