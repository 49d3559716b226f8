"""AirComp power control under fading with an average power constraint (policy
``optimal_fading``): regularized channel inversion with per-device Lagrange multipliers,
updated online by projected stochastic dual ascent (docs/simulator.md, "Over-the-air
aggregation", "Fading with an average power").

This is the project's derivation of the structure Cao et al. report for the fading case
(the optimum under average power constraints is a regularized channel inversion, found by
Lagrange duality); their equations are not reproduced here. Units as in
:mod:`channels.aircomp`: q_k the SNR at the peak power P_k, g_k = q_k / P_k the SNR per watt,
c_k = sqrt(p_k g_k / η), MSE = Σ_k (c_k - 1)² + 1 / η.

Problem: minimise the long-run mean MSE subject to E[p_k] <= P̄_k (and p_k <= P_k every round).
With a multiplier λ_k >= 0 [1/W] per device, the round's Lagrangian is

    L(p, η) = Σ_k (c_k - 1)² + 1 / η + Σ_k λ_k p_k.

For fixed η, in the amplitude b_k = sqrt(p_k) device k's share (sqrt(g_k / η) b_k - 1)²
+ λ_k b_k² is a convex quadratic, least at b_k = sqrt(g_k / η) / (g_k / η + λ_k), so within
its peak (:func:`regularized_inversion`)

    p_k = min(P_k, (g_k / η) / (g_k / η + λ_k)²),   c_k = (g_k / η) / (g_k / η + λ_k) uncapped;

λ_k = 0 gives back min(P_k, η / g_k) (full inversion capped by the peak). η minimises L
with every p_k at its best (:func:`fading_power`: a 1-D search). After the round the
multipliers move along the constraint's subgradient, ν_k = λ_k P̄_k being the dimensionless
price (:func:`dual_update`):

    ν_k <- [ν_k + step (p_k / P̄_k - 1)]⁺.

Paper: X. Cao, G. Zhu, J. Xu, K. Huang, "Optimized Power Control for Over-the-Air Computation
in Fading Channels", IEEE TWC 2020, arXiv:1906.06858.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from channels._validation import as_float, as_float_array
from channels.aircomp import AirPower, aggregation_mse

__all__ = ["dual_update", "fading_power", "lagrangian", "regularized_inversion"]

GRID_POINTS = 128  # log-spaced η values of the coarse search, before the golden section
GOLDEN_STEPS = 60  # golden-section steps in log η (the bracket shrinks by 0.618 each)
ETA_SPAN = 100.0  # the search's top: η = ETA_SPAN max_k q_k (every c_k <= 0.1 above it)


def _inputs(
    snr: ArrayLike, peak_power_w: ArrayLike, multiplier_per_w: ArrayLike
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    q = as_float_array("snr", snr, lower=0.0).reshape(-1)
    peak = as_float_array("peak_power_w", peak_power_w, lower=0.0, lower_op=">").reshape(-1)
    lam = as_float_array("multiplier_per_w", multiplier_per_w, lower=0.0).reshape(-1)
    if not q.shape == peak.shape == lam.shape:
        raise ValueError(
            "snr, peak_power_w and multiplier_per_w must have one value per client, got "
            f"{q.size}, {peak.size} and {lam.size}"
        )
    return q, peak, lam


def _powers(q: np.ndarray, peak: np.ndarray, lam: np.ndarray, eta: np.ndarray) -> np.ndarray:
    """(..., K) regularized inversion powers [W] at the denoising factors ``eta`` (..., 1)."""
    a = (q / peak) / eta  # g_k / η [1/W]
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(a > 0, a / (a + lam) ** 2, 0.0)  # g_k = 0: sending cannot help
    return np.minimum(p, peak)


def _lagrangian(q, peak, lam, eta: np.ndarray) -> np.ndarray:
    """(...) L at the denoising factors ``eta`` (..., 1) with every power at its best."""
    p = _powers(q, peak, lam, eta)
    c = np.sqrt(p * (q / peak) / eta)
    return np.sum((c - 1.0) ** 2 + lam * p, axis=-1) + 1.0 / eta[..., 0]


def lagrangian(
    snr: ArrayLike, peak_power_w: ArrayLike, multiplier_per_w: ArrayLike, denoising: float
) -> float:
    """The round's Lagrangian Σ_k (c_k - 1)² + 1 / η + Σ_k λ_k p_k at denoising η with every
    power at :func:`regularized_inversion`'s.

    Input: ``snr`` (K,) q_k >= 0; ``peak_power_w`` (K,) P_k > 0 [W]; ``multiplier_per_w`` (K,)
    λ_k >= 0 [1/W]; ``denoising`` η > 0.
    Output: L (float, in units of the symbol power).
    """
    q, peak, lam = _inputs(snr, peak_power_w, multiplier_per_w)
    eta = as_float("denoising", denoising, lower=0.0, lower_op=">")
    return float(_lagrangian(q, peak, lam, np.array([eta])))


def regularized_inversion(
    snr: ArrayLike, peak_power_w: ArrayLike, multiplier_per_w: ArrayLike, denoising: float
) -> AirPower:
    """Each device's power minimising (c_k - 1)² + λ_k p_k at the denoising η, within its
    peak: p_k = min(P_k, (g_k / η) / (g_k / η + λ_k)²) (0 when g_k = 0).

    Input: ``snr`` (K,) q_k >= 0; ``peak_power_w`` (K,) P_k > 0 [W]; ``multiplier_per_w`` (K,)
    λ_k >= 0 [1/W]; ``denoising`` η > 0.
    Output: :class:`~channels.aircomp.AirPower` (``included``: p_k > 0).
    """
    q, peak, lam = _inputs(snr, peak_power_w, multiplier_per_w)
    eta = as_float("denoising", denoising, lower=0.0, lower_op=">")
    p = _powers(q, peak, lam, np.array([eta]))
    gain = np.sqrt(p * (q / peak) / eta)
    return AirPower(p, p > 0, eta, gain, aggregation_mse(gain, eta))


def fading_power(snr: ArrayLike, peak_power_w: ArrayLike, multiplier_per_w: ArrayLike) -> AirPower:
    """The round's regularized inversion at the η minimising :func:`lagrangian`.

    L <= K + 1 / η_top at the search's top η_top >= 1 and L >= 1 / η, so the least L lies at
    η >= 1 / (K + 1); η is searched over [1 / (K + 1), ETA_SPAN max(1, max_k q_k)] on a
    log-spaced grid, then refined by golden section between the best point's neighbours.

    Input: ``snr`` (K,) q_k >= 0; ``peak_power_w`` (K,) P_k > 0 [W]; ``multiplier_per_w`` (K,)
    λ_k >= 0 [1/W].
    Output: :class:`~channels.aircomp.AirPower` (nobody sends when every q_k = 0).
    """
    q, peak, lam = _inputs(snr, peak_power_w, multiplier_per_w)
    if not (q > 0).any():
        zeros = np.zeros(q.size)
        return AirPower(zeros, np.zeros(q.size, bool), 0.0, zeros.copy(), float(q.size))

    def at(log_eta: float) -> float:
        return float(_lagrangian(q, peak, lam, np.array([math.exp(log_eta)])))

    grid = np.geomspace(1.0 / (q.size + 1), ETA_SPAN * max(1.0, float(q.max())), GRID_POINTS)
    values = _lagrangian(q, peak, lam, grid[:, None])
    best = int(np.argmin(values))
    low = math.log(grid[max(best - 1, 0)])
    high = math.log(grid[min(best + 1, grid.size - 1)])
    log_eta = _golden_section(at, low, high)
    eta = math.exp(log_eta) if at(log_eta) <= values[best] else float(grid[best])
    return regularized_inversion(q, peak, lam, eta)


def _golden_section(f, low: float, high: float) -> float:
    """The minimiser of ``f`` over [low, high] (log η) by golden section."""
    ratio = (math.sqrt(5.0) - 1.0) / 2.0
    a, b = low, high
    x1, x2 = b - ratio * (b - a), a + ratio * (b - a)
    f1, f2 = f(x1), f(x2)
    for _ in range(GOLDEN_STEPS):
        if f1 <= f2:
            b, x2, f2 = x2, x1, f1
            x1 = b - ratio * (b - a)
            f1 = f(x1)
        else:
            a, x1, f1 = x1, x2, f2
            x2 = a + ratio * (b - a)
            f2 = f(x2)
    return x1 if f1 <= f2 else x2


def dual_update(
    multiplier_per_w: ArrayLike, tx_power_w: ArrayLike, average_power_w: float, step: float
) -> np.ndarray:
    """Projected stochastic dual ascent on E[p_k] <= P̄: with the dimensionless price
    ν_k = λ_k P̄, ν_k <- [ν_k + step (p_k / P̄ - 1)]⁺.

    Input: ``multiplier_per_w`` (K,) λ_k >= 0 [1/W]; ``tx_power_w`` (K,) the round's p_k [W];
    ``average_power_w`` P̄ > 0 [W]; ``step`` > 0 (dimensionless).
    Output: (K,) the next λ_k [1/W].
    """
    lam = as_float_array("multiplier_per_w", multiplier_per_w, lower=0.0)
    p = as_float_array("tx_power_w", tx_power_w, lower=0.0)
    budget = as_float("average_power_w", average_power_w, lower=0.0, lower_op=">")
    nu = lam * budget + as_float("step", step, lower=0.0, lower_op=">") * (p / budget - 1.0)
    return np.maximum(nu, 0.0) / budget
