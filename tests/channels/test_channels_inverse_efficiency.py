"""E[1{SNR >= θ} / log2(1 + SNR)] under unit-mean Rayleigh fading, checked independently.

References: a seeded Monte-Carlo estimate, the closed-form bounds from
1/u < 1/ln(1 + u) < 1/u + 1/2 (u > 0), the closed-form low-SNR expansion (Gregory's series
1/ln(1 + u) = 1/u + 1/2 - u/12 + u²/24 - 19u³/720 + ..., integrated term by term against
e^{-x}: incomplete gamma functions), scipy's adaptive quadrature, and Jensen's inequality with
the exponential's memorylessness E[X | X >= x0] = x0 + 1.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.integrate
import scipy.special

from channels import (
    rayleigh_inverse_efficiency,
    rayleigh_outage_probability,
    rayleigh_outage_snr,
)

LN2 = math.log(2.0)
CASES = [(0.1, 0.001), (1.0, 0.1), (10.0, 0.1005), (10.0, 1.0), (100.0, 0.5), (1e4, 10.0)]


def _upper_gamma(a: int, x: float) -> float:
    """Γ(a, x) for integer a >= 1."""
    return float(scipy.special.gammaincc(a, x) * scipy.special.gamma(a))


@pytest.mark.parametrize(("mean_snr", "theta"), CASES)
def test_matches_monte_carlo(mean_snr, theta):
    x = np.random.default_rng(12345).exponential(size=2_000_000)
    snr = mean_snr * x
    keep = snr >= theta
    sample = np.where(keep, 1.0 / np.log2(1.0 + np.where(keep, snr, 1.0)), 0.0)
    mc, se = sample.mean(), sample.std() / math.sqrt(sample.size)
    assert rayleigh_inverse_efficiency(mean_snr, theta) == pytest.approx(mc, abs=5 * se)
    cond = sample[keep]
    mc_c, se_c = cond.mean(), cond.std() / math.sqrt(cond.size)
    got_c = rayleigh_inverse_efficiency(mean_snr, theta, conditional=True)
    assert got_c == pytest.approx(mc_c, abs=5 * se_c)


@pytest.mark.parametrize("mean_snr", [1e-3, 1e-1, 1.0, 10.0, 1e3, 1e6])
@pytest.mark.parametrize("x0", [1e-9, 1e-3, 0.1, 1.0, 30.0])
def test_between_closed_form_bounds(mean_snr, x0):
    # 1/u < 1/ln(1+u) < 1/u + 1/2 for u > 0, so, with u = ρ̄x and ∫_{x0}^∞ e^{-x}/x dx = E1(x0),
    # ln2 E1(x0)/ρ̄ < value < ln2 (E1(x0)/ρ̄ + e^{-x0}/2)
    got = rayleigh_inverse_efficiency(mean_snr, x0 * mean_snr)
    lower = LN2 * scipy.special.exp1(x0) / mean_snr
    assert lower < got < lower + LN2 * math.exp(-x0) / 2


@pytest.mark.parametrize("x0", [1e-6, 0.01, 1.0, 5.0])
def test_low_snr_closed_form(x0):
    # Gregory's series term by term: ln2 [E1(x0)/ρ̄ + Γ(1,x0)/2 - ρ̄Γ(2,x0)/12 + ρ̄²Γ(3,x0)/24
    # - 19ρ̄³Γ(4,x0)/720] + O(ρ̄⁴); at ρ̄ = 1e-3 the remainder is ~1e-16 of the value
    s = 1e-3
    series = (
        scipy.special.exp1(x0) / s
        + _upper_gamma(1, x0) / 2
        - s * _upper_gamma(2, x0) / 12
        + s**2 * _upper_gamma(3, x0) / 24
        - 19 * s**3 * _upper_gamma(4, x0) / 720
    )
    assert rayleigh_inverse_efficiency(s, x0 * s) == pytest.approx(LN2 * series, rel=1e-12)


@pytest.mark.parametrize(("mean_snr", "theta"), CASES)
def test_matches_adaptive_quadrature(mean_snr, theta):
    x0 = theta / mean_snr

    def f(x: float) -> float:
        return math.exp(-(x - x0)) / math.log1p(mean_snr * x)

    edges = sorted({x0, x0 + min(x0, 1.0), x0 + 1.0, x0 + 10.0})
    ref = sum(
        scipy.integrate.quad(f, a, b, limit=200, epsabs=0, epsrel=1e-12)[0]
        for a, b in zip(edges[:-1], edges[1:], strict=True)
    )
    ref += scipy.integrate.quad(f, edges[-1], np.inf, epsabs=0, epsrel=1e-12)[0]
    got = rayleigh_inverse_efficiency(mean_snr, theta, conditional=True)
    assert got == pytest.approx(LN2 * ref, rel=1e-11)


@pytest.mark.parametrize(("mean_snr", "theta"), CASES)
def test_jensen_and_conditioning(mean_snr, theta):
    # 1/log2(1+x) is convex: E[. | SNR >= θ] > 1/log2(1 + E[SNR | SNR >= θ]) = 1/log2(1 + θ + ρ̄)
    cond = rayleigh_inverse_efficiency(mean_snr, theta, conditional=True)
    assert cond > 1.0 / math.log2(1.0 + theta + mean_snr)
    partial = rayleigh_inverse_efficiency(mean_snr, theta)
    kept = 1.0 - rayleigh_outage_probability(mean_snr, theta)
    assert partial == pytest.approx(cond * kept, rel=1e-14)


def test_diverges_without_cut_off():
    thetas = 10.0 * np.array([1e-2, 1e-4, 1e-8, 1e-16])
    got = rayleigh_inverse_efficiency(10.0, thetas)
    assert np.all(np.diff(got) > 0)
    # growth ln2 E1(x0)/ρ̄ ≈ ln2 ln(1/x0)/ρ̄ per decade of x0
    step = np.diff(got)[-1] / (8 * math.log(10.0))
    assert step == pytest.approx(LN2 / 10.0, rel=1e-6)
    assert rayleigh_inverse_efficiency(10.0, 0.0) == math.inf


def test_vectorised_and_edges():
    s = np.array([[0.5, 10.0, 10.0], [1e3, 0.5, 10.0]])
    got = rayleigh_inverse_efficiency(s, 0.2)
    assert got.shape == (2, 3)
    for idx in np.ndindex(s.shape):
        # one shared grid: the far left end moves with the smallest x0, a rounding change only
        assert got[idx] == pytest.approx(rayleigh_inverse_efficiency(float(s[idx]), 0.2), rel=1e-14)
    assert rayleigh_inverse_efficiency(1.0, 800.0) == 0.0  # e^{-800}: always in outage
    cond = rayleigh_inverse_efficiency(1.0, 800.0, conditional=True)
    assert cond == pytest.approx(1.0 / math.log2(801.0), rel=2e-3)
    with pytest.raises(ValueError, match="mean_snr"):
        rayleigh_inverse_efficiency(0.0, 1.0)
    with pytest.raises(ValueError, match="outage_snr"):
        rayleigh_inverse_efficiency(1.0, -1.0)
    with pytest.raises(ValueError, match="outage_snr"):
        rayleigh_inverse_efficiency(1.0, math.nan)


@pytest.mark.parametrize("eps", [1e-4, 0.01, 0.5])
def test_outage_quantile_round_trip(eps):
    s = np.array([0.1, 10.0, 1e4])
    theta = rayleigh_outage_snr(s, eps)
    np.testing.assert_allclose(rayleigh_outage_probability(s, theta), eps, rtol=1e-12)
    x = np.random.default_rng(1).exponential(size=400_000)
    assert np.mean(10.0 * x < rayleigh_outage_snr(10.0, eps)) == pytest.approx(eps, abs=5e-3)
    with pytest.raises(ValueError, match="outage_prob"):
        rayleigh_outage_snr(1.0, 1.0)
