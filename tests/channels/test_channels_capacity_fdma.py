"""Rates and delays against closed forms and hand-computed values."""

import math

import numpy as np
import pytest

from channels import (
    Cell,
    RicianFading,
    average_channel_rate,
    ergodic_rate_rayleigh,
    ergodic_rate_rician,
    exp_e1,
    rate_bps,
    upload_delay_s,
)

# e^{1/ρ̄} E1(1/ρ̄) / ln 2 to 18 digits (mpmath, 30 digits).
HAND_ERGODIC = {1e-4: 1.44255080023012262e-4, 10.0: 2.90651480841480498, 1e4: 12.4563560414944589}


@pytest.mark.parametrize("mean_snr", sorted(HAND_ERGODIC))
def test_ergodic_closed_form_hand_values(mean_snr):
    b = 2e6
    got = ergodic_rate_rayleigh(mean_snr, b)
    assert got == pytest.approx(b * HAND_ERGODIC[mean_snr], rel=1e-12)


def test_ergodic_extremes_are_finite_and_ordered():
    snr = np.array([0.0, 1e-300, 1e-12, 1e-4, 1.0, 1e4, 1e12, 1e300])
    r = ergodic_rate_rayleigh(snr, 1.0)
    assert np.all(np.isfinite(r)) and r[0] == 0.0
    assert np.all(np.diff(r) > 0)
    # Low SNR: rate ≈ ρ̄/ln2; high SNR: log2(ρ̄) - γ_Euler/ln2 (+ O(ln ρ̄ / ρ̄)).
    assert r[2] == pytest.approx(1e-12 / math.log(2), rel=1e-9)
    assert r[6] == pytest.approx(math.log2(1e12) - np.euler_gamma / math.log(2), rel=1e-11)
    # Jensen: ergodic < average-channel rate.
    avg = average_channel_rate(snr[1:], 1.0)
    assert np.all(r[1:] <= avg) and np.all(r[3:] < avg[2:])


def test_exp_e1_switch_is_continuous():
    x = np.array([49.999999, 50.0, 50.000001])
    v = exp_e1(x)
    assert np.max(np.abs(np.diff(v))) < 1e-9
    assert exp_e1(1e4) == pytest.approx(1 / (1e4 + 1) * (1 + 1 / (1e4 + 1) ** 2), rel=1e-8)


def test_monte_carlo_ergodic_rate_within_half_percent():
    b = 1e6
    for snr_db in (0.0, 10.0, 20.0):
        cell = Cell.from_mean_snr(mean_snr_db=snr_db, n_clients=200, seed=2024)
        snr, _ = cell.snr_block(0, 1000)
        mc = np.mean(rate_bps(1.0, b, snr.ravel()[:, None]))
        closed = ergodic_rate_rayleigh(10 ** (snr_db / 10), b)
        assert mc == pytest.approx(closed, rel=0.005)


def test_rician_quadrature():
    snr = np.array([1e-3, 1.0, 10.0, 1e4])
    np.testing.assert_allclose(
        ergodic_rate_rician(snr, 1.0, 0.0), ergodic_rate_rayleigh(snr, 1.0), rtol=1e-10
    )
    # Monte Carlo for K = 4 at 10 dB.
    cell = Cell.from_mean_snr(mean_snr_db=10.0, n_clients=200, seed=5, fading=RicianFading(4.0))
    s, _ = cell.snr_block(0, 1000)
    mc = np.mean(np.log2(1 + s))
    assert ergodic_rate_rician(10.0, 1.0, 4.0) == pytest.approx(mc, rel=0.003)
    # Large K approaches the average channel.
    assert ergodic_rate_rician(10.0, 1.0, 1e6) == pytest.approx(math.log2(11), rel=1e-5)


def test_average_channel_rate():
    assert average_channel_rate(1.0, 1e6) == pytest.approx(1e6)
    assert average_channel_rate(3.0, 5.0) == pytest.approx(10.0)


def test_rate_hand_values_and_broadcasting():
    # 0.25 · 1 MHz · log2(1 + 15) = 1 Mbit/s.
    assert rate_bps(0.25, 1e6, 15.0) == pytest.approx(1e6)
    share = np.array([0.5, 0.25, 0.25])
    snr = np.array([[1.0, 3.0, 7.0], [0.0, 15.0, 255.0]])
    r = rate_bps(share, 2e6, snr)
    np.testing.assert_allclose(r, [[1e6, 1e6, 1.5e6], [0.0, 2e6, 4e6]])


def test_upload_delay_hand_values():
    # 8 Mbit over 0.5 · 1 MHz · log2(1+3) = 1 Mbit/s → 8 s.
    assert upload_delay_s(8e6, 0.5, 1e6, 3.0) == pytest.approx(8.0)
    share = np.array([[0.5, 0.5, 0.0], [0.0, 0.5, 0.5]])
    snr = np.array([[3.0, 0.0, 3.0], [3.0, 15.0, 1.0]])
    d = upload_delay_s(1e6, share, 1e6, snr)
    # Default: scheduled = share > 0. Zero share → unscheduled → 0; zero SNR → inf.
    np.testing.assert_allclose(d, [[1.0, np.inf, 0.0], [0.0, 0.5, 2.0]])


def test_upload_delay_scheduled_flag():
    share = np.array([0.5, 0.0, 0.5])
    sched = np.array([True, True, False])
    d = upload_delay_s(np.array([1e6, 1e6, 1e6]), share, 1e6, 3.0, scheduled=sched)
    np.testing.assert_array_equal(d, [1.0, np.inf, 0.0])
    assert upload_delay_s(0.0, 0.0, 1e6, 0.0, scheduled=True) == 0.0
    # scheduled broadcasts against scalar inputs.
    np.testing.assert_array_equal(upload_delay_s(1e6, 0.5, 1e6, 3.0, scheduled=[1, 1]), [1.0, 1.0])
    np.testing.assert_array_equal(upload_delay_s(1e6, 0.5, 1e6, 3.0, scheduled=[1, 0]), [1.0, 0.0])


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: rate_bps(0.5, -1.0, 1.0), "bandwidth_hz"),
        (lambda: rate_bps(1.5, 1.0, 1.0), "share"),
        (lambda: rate_bps(-0.1, 1.0, 1.0), "share"),
        (lambda: rate_bps([0.6, 0.5], 1.0, 1.0), "share"),
        (lambda: rate_bps(np.array([[0.5, 0.5], [0.7, 0.4]]), 1.0, 1.0), "share"),
        (lambda: rate_bps(0.5, 1.0, -1.0), "snr"),
        (lambda: rate_bps(0.5, 1.0, np.nan), "snr"),
        (lambda: upload_delay_s(-1.0, 0.5, 1.0, 1.0), "bits"),
        (lambda: upload_delay_s(np.inf, 0.5, 1.0, 1.0), "bits"),
        (lambda: upload_delay_s(1.0, 0.5, 1.0, 1.0, scheduled=[2]), "scheduled"),
        (lambda: ergodic_rate_rayleigh(-1.0, 1.0), "mean_snr"),
        (lambda: ergodic_rate_rayleigh(1.0, 0.0), "bandwidth_hz"),
        (lambda: average_channel_rate(np.nan, 1.0), "mean_snr"),
        (lambda: ergodic_rate_rician(1.0, 1.0, -2.0), "k_factor"),
    ],
)
def test_bad_inputs(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_share_sum_tolerance():
    share = np.full(3, 1 / 3 + 1e-12)
    assert rate_bps(share, 1.0, 1.0).shape == (3,)
