"""AirComp power control and MSE (channels.aircomp) against Monte Carlo and brute force."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from channels.aircomp import (
    aggregation_mse,
    air_power,
    analog_upload_s,
    average_power_denoising,
    best_truncation,
    full_inversion,
    optimal_power,
    truncated_inversion,
)


def _monte_carlo_mse(q, peak, power, eta, rng, n=400_000):
    """Mean squared error of y / sqrt(eta) against sum_k x_k, simulated symbol by symbol:
    y = sum_k sqrt(p_k) |h_k| x_k + z with |h_k|^2 = q_k / P_k (noise power 1)."""
    amplitude = np.sqrt(power * q / peak)
    x = rng.choice([-1.0, 1.0], size=(q.size, n))  # unit-power, uncorrelated
    y = amplitude @ x + rng.standard_normal(n)
    return float(np.mean((y / np.sqrt(eta) - x.sum(axis=0)) ** 2))


@pytest.mark.parametrize("policy", ["full_inversion", "truncated", "optimal"])
def test_mse_closed_form_matches_monte_carlo(policy):
    rng = np.random.default_rng(3)
    q = np.array([0.3, 0.8, 2.0, 5.0])  # SNRs around 0 dB: noise and misalignment both count
    peak = np.array([0.2, 0.1, 0.2, 0.05])
    air = air_power(policy, q, peak)
    measured = _monte_carlo_mse(q, peak, air.tx_power_w, air.denoising, rng)
    assert air.mse == pytest.approx(measured, rel=0.02)


def test_full_inversion_aligns_every_client_at_the_weakest():
    q, peak = np.array([4.0, 1.0, 9.0]), np.array([1.0, 2.0, 0.5])
    air = full_inversion(q, peak)
    assert air.denoising == 1.0
    np.testing.assert_allclose(air.tx_power_w, [0.25, 2.0, 0.5 / 9.0])  # eta P_k / q_k
    np.testing.assert_allclose(air.gain, 1.0)
    assert air.mse == pytest.approx(1.0)


def test_truncated_inversion_excludes_below_threshold_and_keeps_peak_power():
    q, peak = np.array([0.5, 2.0, 8.0]), np.array([1.0, 1.0, 1.0])
    air = truncated_inversion(q, peak, 2.0)
    assert air.included.tolist() == [False, True, True]
    np.testing.assert_allclose(air.tx_power_w, [0.0, 1.0, 0.25])
    assert air.mse == pytest.approx(1.0 + 1.0 / 2.0)  # one missing symbol + noise 1/eta
    assert (air.tx_power_w <= peak).all()


def _brute_force_optimum(q, peak, points):
    """Least MSE over a grid of every client's power in [0, P_k] and of eta (log-spaced)."""
    grids = [np.linspace(0.0, p, points) for p in peak]
    powers = np.stack(np.meshgrid(*grids, indexing="ij"), axis=-1).reshape(-1, q.size)
    best = np.inf
    for eta in np.geomspace(1e-2, 1e3, 1000 if q.size == 2 else 300):
        c = np.sqrt(powers * (q / peak) / eta)
        best = min(best, float(np.min(((c - 1.0) ** 2).sum(axis=1) + 1.0 / eta)))
    return best


@pytest.mark.parametrize(
    ("seed", "k", "points", "rel"),
    [(0, 2, 201, 2e-3), (1, 2, 201, 2e-3), (2, 2, 201, 2e-3), (3, 3, 41, 3e-2)],
)
def test_optimal_policy_against_brute_force(seed, k, points, rel):
    rng = np.random.default_rng(seed)
    q = 10 ** rng.uniform(-1.0, 1.0, size=k)  # -10 .. 10 dB
    peak = rng.uniform(0.05, 0.5, size=k)
    air = optimal_power(q, peak)
    brute = _brute_force_optimum(q, peak, points)
    assert air.mse <= brute + 1e-9  # no grid point beats it
    assert air.mse == pytest.approx(brute, rel=rel)  # and the grid gets close to it
    assert (air.tx_power_w <= peak * (1 + 1e-12)).all()
    # threshold structure: the weak clients at full power, the strong ones aligned
    full = np.isclose(air.tx_power_w, peak)
    assert (np.isclose(air.gain, 1.0) | full).all()
    assert air.mse <= full_inversion(q, peak).mse + 1e-12


def test_best_truncation_against_every_subset():
    rng = np.random.default_rng(7)
    for _ in range(20):
        q = 10 ** rng.uniform(-1.5, 1.0, size=5)
        peak = np.ones(5)
        # brute force: every subset, inverted to its weakest member at full power (the empty
        # one: every symbol missing, no noise)
        brute = min(
            5.0,
            *(
                (5 - len(s)) + 1.0 / q[list(s)].min()
                for m in range(1, 6)
                for s in itertools.combinations(range(5), m)
            ),
        )
        air = best_truncation(q, peak)
        assert air.mse == pytest.approx(brute, rel=1e-12)
        # and no fixed threshold does better
        for q_th in np.geomspace(0.01, 20, 200):
            assert air.mse <= truncated_inversion(q, peak, q_th).mse + 1e-12


def test_nobody_sends_when_every_client_is_below_threshold():
    air = truncated_inversion([0.1, 0.2], [1.0, 1.0], 1.0)
    assert not air.included.any() and air.mse == 2.0 and air.denoising == 0.0


def test_analog_time_does_not_grow_with_clients():
    assert analog_upload_s(2.0e6, 1.0e6) == pytest.approx(2.0)
    assert aggregation_mse([1.0, 1.0], 4.0) == pytest.approx(0.25)


def test_average_power_cap_holds_over_rayleigh_fading():
    """Zhu et al.'s level: the mean power over many Rayleigh draws meets the budget."""
    rng = np.random.default_rng(11)
    mean_snr, peak = np.array([2.0, 10.0]), np.array([0.2, 0.2])
    budget_w, q_th = 0.05, 1.0
    eta = average_power_denoising(q_th, mean_snr, peak, budget_w)
    assert 0 < eta < q_th  # the budget binds below the peak
    draws = rng.exponential(mean_snr, size=(200_000, 2))
    powers = np.array([truncated_inversion(q, peak, q_th, eta).tx_power_w for q in draws[:2000]])
    assert (powers <= peak).all()
    # the mean over many fading states: E[p] = eta P E1(q_th / mean) / mean, the tight client
    # exactly at the budget (closed form against the sample mean of eta P / q above q_th)
    sample = np.where(draws >= q_th, eta * peak / draws, 0.0).mean(axis=0)
    assert sample.max() == pytest.approx(budget_w, rel=0.02)
    assert (sample <= budget_w * 1.02).all()
