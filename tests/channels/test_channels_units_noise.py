"""Unit conversions and thermal noise against hand values."""

import math

import numpy as np
import pytest

from channels import db_to_linear, dbm_to_watt, linear_to_db, noise_power_w, watt_to_dbm


def test_dbm_watt_hand_values():
    assert dbm_to_watt(30.0) == pytest.approx(1.0, rel=1e-15)
    assert dbm_to_watt(0.0) == pytest.approx(1e-3, rel=1e-15)
    assert watt_to_dbm(1.0) == pytest.approx(30.0, abs=1e-12)
    assert watt_to_dbm(1e-3) == pytest.approx(0.0, abs=1e-12)
    assert dbm_to_watt(-math.inf) == 0.0
    assert watt_to_dbm(0.0) == -math.inf


def test_db_linear_round_trip_arrays():
    x = np.array([[-30.0, 0.0], [3.0, 20.0]])
    lin = db_to_linear(x)
    assert isinstance(lin, np.ndarray) and lin.shape == (2, 2)
    np.testing.assert_allclose(lin, [[1e-3, 1.0], [10**0.3, 100.0]], rtol=1e-14)
    np.testing.assert_allclose(linear_to_db(lin), x, atol=1e-12)
    assert isinstance(db_to_linear(10.0), float)


def test_noise_power_one_mhz():
    # kT at 290 K ≈ -174 dBm/Hz → 3.98e-21 W/Hz; × 1 MHz ≈ 3.98e-15 W.
    assert noise_power_w(bandwidth_hz=1e6) == pytest.approx(3.981e-15, rel=1e-3)
    # A 9 dB noise figure multiplies by 10^0.9.
    assert noise_power_w(bandwidth_hz=1e6, noise_figure_db=9.0) == pytest.approx(
        3.981071705534972e-15 * 10**0.9, rel=1e-12
    )
    assert noise_power_w(bandwidth_hz=2e6, noise_psd_dbm_per_hz=-170.0) == pytest.approx(
        2e6 * 1e-20, rel=1e-12
    )


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: noise_power_w(bandwidth_hz=-1.0), "bandwidth_hz"),
        (lambda: noise_power_w(bandwidth_hz=0.0), "bandwidth_hz"),
        (lambda: noise_power_w(bandwidth_hz=math.nan), "bandwidth_hz"),
        (lambda: noise_power_w(bandwidth_hz=math.inf), "bandwidth_hz"),
        (lambda: noise_power_w(bandwidth_hz=1e6, noise_figure_db=-1.0), "noise_figure_db"),
        (lambda: noise_power_w(bandwidth_hz=1e6, noise_psd_dbm_per_hz=math.nan), "noise_psd"),
        (lambda: watt_to_dbm(-1.0), "p_w"),
        (lambda: linear_to_db([1.0, -2.0]), "x"),
        (lambda: db_to_linear(math.nan), "x_db"),
        (lambda: dbm_to_watt(math.nan), "p_dbm"),
    ],
)
def test_bad_inputs_name_the_argument(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_message_states_range():
    with pytest.raises(ValueError, match=r"bandwidth_hz must be > 0, got -1\.0"):
        noise_power_w(bandwidth_hz=-1.0)
