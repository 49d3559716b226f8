"""SNR at a chosen power, compute time at a chosen clock, CMOS energy at a chosen clock."""

from __future__ import annotations

import math

import numpy as np
import pytest

from channels import CmosEnergy, compute_delay_at_clock_s, snr_at_power


def test_snr_scales_linearly_with_power_and_is_exact_at_the_reference():
    snr = np.array([0.5, 10.0, 300.0])
    p_ref = np.array([0.2, 0.2, 0.1])
    half = snr_at_power(snr, p_ref / 2, p_ref)
    np.testing.assert_allclose(half, snr / 2, rtol=1e-15)
    assert (snr_at_power(snr, p_ref, p_ref) == snr).all()  # bit for bit at p = p_ref
    # g / (N0 B) per watt: 10 dB at 200 mW is 0 dB at 20 mW
    assert snr_at_power(10.0, 0.02, 0.2) == pytest.approx(1.0, rel=1e-15)
    with pytest.raises(ValueError, match="reference_power_w"):
        snr_at_power(1.0, 0.1, 0.0)


def test_compute_time_is_inverse_in_the_clock():
    flops, speed, f_max = 6.0e12, 2.0e11, 2.4e9
    assert compute_delay_at_clock_s(flops, speed, f_max, f_max) == flops / speed
    assert compute_delay_at_clock_s(flops, speed, f_max / 2, f_max) == pytest.approx(60.0)
    assert compute_delay_at_clock_s(flops, speed, 0.6e9, f_max) == pytest.approx(120.0)
    with pytest.raises(ValueError, match="cpu_hz"):
        compute_delay_at_clock_s(flops, speed, 0.0, f_max)


def test_cmos_energy_at_a_decided_clock():
    model = CmosEnergy(kappa=2.0e-28, cpu_freq_hz=2.0e9, flops_per_cycle=4.0)
    flops = np.array([4.0e12, 8.0e12])
    at_max = model.energy_j(flops, None)
    np.testing.assert_allclose(at_max, 2.0e-28 * (2.0e9) ** 2 * flops / 4.0, rtol=1e-15)
    clocks = np.array([1.0e9, 0.5e9])
    decided = model.energy_j(flops, None, cpu_hz=clocks)
    expected = [2.0e-28 * 1.0e18 * 1.0e12, 2.0e-28 * 0.25e18 * 2.0e12]
    np.testing.assert_allclose(decided, expected, rtol=1e-15)
    assert math.isclose(decided[0], at_max[0] / 4, rel_tol=1e-15)
