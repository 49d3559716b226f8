"""Closed-form and quadrature rates for a whole band (share b = 1).

- :func:`ergodic_rate_rayleigh`: E[B log2(1 + ρ̄|s|²)] with |s|² ~ Exp(1),
  = B e^{1/ρ̄} E1(1/ρ̄) / ln 2.
- :func:`ergodic_rate_rician`: the same expectation for unit-power Rician fading with K-factor
  K, by a deterministic quadrature (exact closed forms need infinite series).
- :func:`average_channel_rate`: B log2(1 + ρ̄), the rate of the *average* channel, which the
  paper's offline stage (TSFA, section IV-A) uses in place of the unknown CSI. By Jensen it
  upper-bounds the ergodic rate.

Multiply by a share b_k for an FDMA sub-band (the rate is linear in bandwidth).
"""

from __future__ import annotations

import math

import numpy as np
import scipy.special
from numpy.typing import ArrayLike

from channels._validation import as_float, as_float_array, scalar_or_array

__all__ = [
    "average_channel_rate",
    "ergodic_rate_rayleigh",
    "ergodic_rate_rician",
    "exp_e1",
]

_LN2 = math.log(2.0)
# Below this x, exp(x)·E1(x) is computed directly (exp(50) ≈ 5e21, E1(50) ≈ 4e-24: no
# overflow/underflow); above, by a continued fraction that converges fast for large x.
_EXP_E1_SWITCH = 50.0
_CF_TERMS = 40
_QUAD_STEP = 0.05
_QUAD_CHUNK = 1024


def exp_e1(x: ArrayLike) -> float | np.ndarray:
    """Scaled exponential integral e^x·E1(x), stable for all x >= 0.

    For x < 50: ``exp(x) * scipy.special.exp1(x)``; for x >= 50 the continued fraction
    e^x E1(x) = 1/(x + 1 - 1²/(x + 3 - 2²/(x + 5 - ...))), evaluated bottom-up with 40 terms
    (relative error far below 1e-15 there). x = 0 gives inf, x = inf gives 0.
    Input: ``x`` >= 0, any shape.
    Output: float64, same shape.
    """
    xa = as_float_array("x", x, lower=0.0, allow_inf=True)
    out = np.empty_like(xa)
    small = xa < _EXP_E1_SWITCH
    xs = xa[small]
    with np.errstate(over="ignore", invalid="ignore"):
        out[small] = np.where(xs == 0.0, np.inf, np.exp(xs) * scipy.special.exp1(xs))
    xl = xa[~small]
    if xl.size:
        tail = np.zeros_like(xl)
        for n in range(_CF_TERMS, 0, -1):
            tail = n * n / (xl + (2 * n + 1) - tail)
        with np.errstate(divide="ignore"):
            out[~small] = 1.0 / (xl + 1.0 - tail)
        out[~small & np.isinf(xa)] = 0.0
    return scalar_or_array(out)


def ergodic_rate_rayleigh(mean_snr: ArrayLike, bandwidth_hz: float) -> float | np.ndarray:
    """Ergodic Shannon rate under Rayleigh fading, B·e^{1/ρ̄}·E1(1/ρ̄)/ln 2 [bit/s].

    Input: ``mean_snr`` ρ̄ >= 0 (linear, any shape); ``bandwidth_hz`` > 0 [Hz].
    Output: rate [bit/s], same shape; 0 where ρ̄ = 0. Stable from ρ̄ = 1e-300 to 1e300.
    """
    snr = as_float_array("mean_snr", mean_snr, lower=0.0)
    b = as_float("bandwidth_hz", bandwidth_hz, lower=0.0, lower_op=">")
    with np.errstate(divide="ignore"):
        x = np.where(snr > 0.0, 1.0 / snr, np.inf)
    return scalar_or_array(b * np.asarray(exp_e1(x)) / _LN2)


def average_channel_rate(mean_snr: ArrayLike, bandwidth_hz: float) -> float | np.ndarray:
    """Rate of the average channel, B·log2(1 + ρ̄) [bit/s] (the paper's offline-stage model).

    Input: ``mean_snr`` ρ̄ >= 0 (linear, any shape); ``bandwidth_hz`` > 0 [Hz].
    Output: rate [bit/s], same shape.
    """
    snr = as_float_array("mean_snr", mean_snr, lower=0.0)
    b = as_float("bandwidth_hz", bandwidth_hz, lower=0.0, lower_op=">")
    return scalar_or_array(b * np.log1p(snr) / _LN2)


def ergodic_rate_rician(
    mean_snr: ArrayLike, bandwidth_hz: float, k_factor: float
) -> float | np.ndarray:
    """Ergodic Shannon rate under unit-power Rician fading [bit/s], by quadrature.

    Uses E[ln(1 + cX)] = ∫_0^∞ (1 - M(c t)) e^{-t} dt/t (Hamdi's lemma), with
    M(z) = E[e^{-zX}] = (K+1)/(K+1+z)·exp(-Kz/(K+1+z)) the Laplace transform of the power
    X = |s|², substituted t = e^u and integrated over u with the trapezoidal rule (step 0.05;
    the integrand is analytic in a strip and decays exponentially on the left and
    double-exponentially on the right, so the rule converges spectrally). K = 0 reproduces
    :func:`ergodic_rate_rayleigh`.
    Input: ``mean_snr`` c >= 0 (linear, any shape); ``bandwidth_hz`` > 0 [Hz];
    ``k_factor`` K >= 0.
    Output: rate [bit/s], same shape.
    """
    snr = as_float_array("mean_snr", mean_snr, lower=0.0)
    b = as_float("bandwidth_hz", bandwidth_hz, lower=0.0, lower_op=">")
    k = as_float("k_factor", k_factor, lower=0.0)
    flat = snr.reshape(-1)
    out = np.zeros_like(flat)
    pos = np.flatnonzero(flat > 0.0)
    if pos.size:
        # Left tail: 1 - M(ct) ≈ c·t, cut where c_max·t < 1e-18; right tail e^{-t}, t <= 60.
        c_max = max(float(flat[pos].max()), 1.0)
        u = np.arange(math.log(1e-18) - math.log(c_max), math.log(60.0) + _QUAD_STEP, _QUAD_STEP)
        t = np.exp(u)[None, :]
        weight = np.exp(-t)
        for start in range(0, pos.size, _QUAD_CHUNK):
            idx = pos[start : start + _QUAD_CHUNK]
            z = flat[idx][:, None] * t
            log_m = -np.log1p(z / (k + 1.0)) - k * z / (k + 1.0 + z)
            out[idx] = _QUAD_STEP * (-np.expm1(log_m) * weight).sum(axis=1)
    return scalar_or_array(b * out.reshape(snr.shape) / _LN2)
