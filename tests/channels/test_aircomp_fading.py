"""AirComp policy optimal_fading (channels.aircomp_fading): the regularized inversion against a
brute-force grid of powers, its λ = 0 limit, the denoising factor against a fine grid of the
Lagrangian, the dual step by hand, and over Rayleigh fading the average power it meets."""

from __future__ import annotations

import numpy as np
import pytest

from channels.aircomp import aggregation_mse, average_power_denoising, truncated_inversion
from channels.aircomp_fading import dual_update, fading_power, lagrangian, regularized_inversion

Q = np.array([0.3, 2.0, 15.0])  # SNR at the peak power
PEAK_W = np.array([0.2, 0.1, 0.2])
LAMBDA_PER_W = np.array([4.0, 0.0, 30.0])


def _share(q, peak, lam, eta, p):
    """(..., ) device share (c - 1)^2 + λ p of the Lagrangian at power p [W]."""
    c = np.sqrt(p * (q / peak) / eta)
    return (c - 1.0) ** 2 + lam * p


def _best_share_on_grid(q, peak, lam, eta, n=200_001):
    """The least share over a uniform grid of p in [0, P] and its argmin [W]."""
    p = np.linspace(0.0, peak, n)
    values = _share(q, peak, lam, eta, p)
    i = int(np.argmin(values))
    return float(values[i]), float(p[i])


@pytest.mark.parametrize("eta", [0.5, 3.0, 40.0])
def test_regularized_inversion_minimises_each_share_over_a_power_grid(eta):
    air = regularized_inversion(Q, PEAK_W, LAMBDA_PER_W, eta)
    for k in range(Q.size):
        best, p_grid = _best_share_on_grid(Q[k], PEAK_W[k], LAMBDA_PER_W[k], eta)
        got = float(_share(Q[k], PEAK_W[k], LAMBDA_PER_W[k], eta, air.tx_power_w[k]))
        assert got <= best + 1e-12
        assert air.tx_power_w[k] == pytest.approx(p_grid, abs=2.0 * PEAK_W[k] / 200_000)
        assert air.tx_power_w[k] <= PEAK_W[k]
    assert air.mse == pytest.approx(aggregation_mse(air.gain, eta))


def test_without_multipliers_it_is_full_inversion_capped_by_the_peak():
    for eta in [0.1, 1.0, 5.0, 100.0]:
        air = regularized_inversion(Q, PEAK_W, np.zeros(3), eta)
        inverted_w = eta / (Q / PEAK_W)  # p = η / g: received coefficient 1
        np.testing.assert_allclose(air.tx_power_w, np.minimum(PEAK_W, inverted_w), rtol=1e-12)
        expected_gain = np.where(inverted_w <= PEAK_W, 1.0, np.sqrt(Q / eta))
        np.testing.assert_allclose(air.gain, expected_gain, rtol=1e-12)


def test_a_positive_multiplier_shrinks_the_coefficient_to_the_ridge_value():
    # uncapped: c = (g/η) / (g/η + λ), the regularized inversion
    q, peak, lam, eta = np.array([50.0]), np.array([1.0]), np.array([0.5]), 10.0
    air = regularized_inversion(q, peak, lam, eta)
    assert air.gain[0] == pytest.approx(5.0 / 5.5, rel=1e-12)
    assert air.tx_power_w[0] == pytest.approx(5.0 / 5.5**2, rel=1e-12)


def test_the_denoising_factor_minimises_the_lagrangian_over_a_fine_grid():
    # the Lagrangian with each device's power chosen on a grid, over a fine grid of η
    etas = np.geomspace(0.05, 2000.0, 3000)
    powers = np.linspace(0.0, 1.0, 4001)[:, None] * PEAK_W  # (P, K) [W]
    grid_values = [
        1.0 / eta + _share(Q, PEAK_W, LAMBDA_PER_W, eta, powers).min(axis=0).sum() for eta in etas
    ]
    i = int(np.argmin(grid_values))
    air = fading_power(Q, PEAK_W, LAMBDA_PER_W)
    found = lagrangian(Q, PEAK_W, LAMBDA_PER_W, air.denoising)
    assert found <= grid_values[i] + 1e-9
    assert air.denoising == pytest.approx(etas[i], rel=0.01)


def test_without_multipliers_the_denoising_is_cao_et_als_static_optimum():
    # λ = 0: the Lagrangian is the MSE, least at sqrt(η) = (1 + Σ_A q) / Σ_A sqrt(q) with A the
    # clients at full power (here the two weakest, 2 < η < 15)
    air = fading_power(Q, PEAK_W, np.zeros(3))
    eta = ((1.0 + 0.3 + 2.0) / (np.sqrt(0.3) + np.sqrt(2.0))) ** 2
    assert 2.0 < eta < 15.0
    assert air.denoising == pytest.approx(eta, rel=1e-6)


def test_the_mse_of_shrunk_coefficients_matches_a_monte_carlo_of_the_symbols():
    rng = np.random.default_rng(5)
    air = fading_power(Q, PEAK_W, LAMBDA_PER_W)
    assert (air.gain < 1.0 - 1e-3).any()  # misaligned: the (c_k - 1)^2 terms count
    amplitude = np.sqrt(air.tx_power_w * Q / PEAK_W)  # sqrt(p_k) |h_k| / sigma
    x = rng.choice([-1.0, 1.0], size=(Q.size, 400_000))  # unit-power, uncorrelated
    y = amplitude @ x + rng.standard_normal(x.shape[1])
    measured = float(np.mean((y / np.sqrt(air.denoising) - x.sum(axis=0)) ** 2))
    assert air.mse == pytest.approx(measured, rel=0.02)


def test_dual_step_by_hand():
    lam = dual_update([2.0, 0.1, 0.0], [0.05, 0.0, 0.02], average_power_w=0.02, step=0.5)
    # ν = λ P̄ = 0.04, 0.002, 0; + 0.5 (p / P̄ - 1) = +0.75, -0.5, 0 -> floored at 0
    np.testing.assert_allclose(lam, [(0.04 + 0.75) / 0.02, 0.0, 0.0])


def test_over_rayleigh_fading_the_average_power_meets_the_budget_and_beats_truncation():
    rng = np.random.default_rng(7)
    k, rounds, budget_w, mean_snr = 5, 500, 0.02, 10.0
    peak = np.full(k, 0.2)
    snr = mean_snr * rng.exponential(size=(rounds, k))  # Rayleigh: |h|^2 ~ Exp
    lam = np.zeros(k)
    power_w, mse = np.zeros((rounds, k)), np.zeros(rounds)
    for t in range(rounds):
        air = fading_power(snr[t], peak, lam)
        assert (air.tx_power_w <= peak).all()
        power_w[t], mse[t] = air.tx_power_w, air.mse
        lam = dual_update(lam, air.tx_power_w, budget_w, step=0.05)
    assert (lam > 0).all()  # the constraint binds
    np.testing.assert_allclose(power_w.mean(axis=0), budget_w, rtol=0.02)
    truncated = []
    for threshold_db in [-5.0, 0.0, 3.0, 5.0, 8.0]:
        q_th = 10.0 ** (threshold_db / 10.0)
        eta = average_power_denoising(q_th, np.full(k, mean_snr), peak, budget_w)
        truncated.append(np.mean([truncated_inversion(s, peak, q_th, eta).mse for s in snr]))
    assert mse.mean() < min(truncated)
