"""Closed-form and quadrature rates for a whole band (share b = 1).

- :func:`ergodic_rate_rayleigh`: E[B log2(1 + ρ̄|s|²)] with |s|² ~ Exp(1),
  = B e^{1/ρ̄} E1(1/ρ̄) / ln 2.
- :func:`ergodic_rate_rician`: the same expectation for unit-power Rician fading with K-factor
  K, by a deterministic quadrature (exact closed forms need infinite series).
- :func:`average_channel_rate`: B log2(1 + ρ̄), the rate of the *average* channel, which the
  paper's offline stage (TSFA, section IV-A) uses in place of the unknown CSI. By Jensen it
  upper-bounds the ergodic rate.
- :func:`rayleigh_inverse_efficiency`: E[1{ρ̄X >= θ} / log2(1 + ρ̄X)], X ~ Exp(1): the expected
  upload time per bit and hertz of a client that sends only when its SNR is at least θ, by
  quadrature. Without a cut-off (θ = 0) it diverges; by Jensen it exceeds 1/log2(1 + ρ̄).
- :func:`rayleigh_outage_probability`, :func:`rayleigh_outage_snr`: P(ρ̄X < θ) = 1 - e^{-θ/ρ̄}
  and its inverse, the ε-quantile θ_ε = -ρ̄ ln(1 - ε).

Multiply by a share b_k for an FDMA sub-band (the rate is linear in bandwidth).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from channels._validation import as_float, as_float_array, scalar_or_array

__all__ = [
    "average_channel_rate",
    "ergodic_rate_rayleigh",
    "ergodic_rate_rician",
    "exp_e1",
    "rayleigh_inverse_efficiency",
    "rayleigh_outage_probability",
    "rayleigh_outage_snr",
]

_LN2 = math.log(2.0)
# Below this x, exp(x)·E1(x) is computed directly (exp(50) ≈ 5e21, E1(50) ≈ 4e-24: no
# overflow/underflow); above, by a continued fraction that converges fast for large x.
_EXP_E1_SWITCH = 50.0
_CF_TERMS = 40
_QUAD_STEP = 0.05
_QUAD_CHUNK = 1024
# rayleigh_inverse_efficiency: trapezoidal step in v = ln(x - x0), the left end below
# min(x0, 1) (in e-folds) and the right end x - x0 = 45 (e^{-45} ≈ 3e-20).
_INV_STEP = 0.1
_INV_LEFT_EFOLDS = 40.0
_INV_RIGHT = 45.0
_INV_CHUNK = 256


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
        import scipy.special  # noqa: PLC0415 - 0.15 s, needed only for this branch

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


def rayleigh_outage_probability(mean_snr: ArrayLike, outage_snr: ArrayLike) -> float | np.ndarray:
    """P(ρ̄X < θ) = 1 - e^{-θ/ρ̄} for unit-mean Rayleigh fading (X = |s|² ~ Exp(1)).

    Input: ``mean_snr`` ρ̄ > 0 and ``outage_snr`` θ >= 0 (linear, broadcast together).
    Output: outage probability, their broadcast shape.
    """
    snr = as_float_array("mean_snr", mean_snr, lower=0.0, lower_op=">")
    theta = as_float_array("outage_snr", outage_snr, lower=0.0)
    return scalar_or_array(-np.expm1(-theta / snr))


def rayleigh_outage_snr(mean_snr: ArrayLike, outage_prob: float) -> float | np.ndarray:
    """The ε-quantile of the SNR under unit-mean Rayleigh fading, θ_ε = -ρ̄ ln(1 - ε).

    The SNR a client falls below with probability ε (the ε-outage threshold; Tse & Viswanath,
    *Fundamentals of Wireless Communication*, 2005, section 5.4.1).
    Input: ``mean_snr`` ρ̄ > 0 (linear, any shape); ``outage_prob`` ε in (0, 1).
    Output: θ_ε (linear), same shape as ``mean_snr``.
    """
    snr = as_float_array("mean_snr", mean_snr, lower=0.0, lower_op=">")
    eps = as_float("outage_prob", outage_prob, lower=0.0, lower_op=">", upper=1.0, upper_op="<")
    return scalar_or_array(-snr * math.log1p(-eps))


def rayleigh_inverse_efficiency(
    mean_snr: ArrayLike, outage_snr: ArrayLike, *, conditional: bool = False
) -> float | np.ndarray:
    """Expected inverse spectral efficiency above a cut-off under unit-mean Rayleigh fading.

    With SNR = ρ̄X, X ~ Exp(1), and x0 = θ/ρ̄ this is the partial expectation

        E[1{SNR >= θ} / log2(1 + SNR)] = ln 2 · ∫_{x0}^∞ e^{-x} / ln(1 + ρ̄x) dx   [s·Hz/bit],

    the expected full-band upload time of one bit over one hertz of a client that does not send
    when its SNR is below θ; with ``conditional`` it is divided by P(SNR >= θ) = e^{-x0}, i.e.
    E[1 / log2(1 + SNR) | SNR >= θ]. As θ -> 0 it grows like ln 2 · E1(x0)/ρ̄ -> inf (the
    integrand is ≈ ln 2/(ρ̄x) near 0), so θ = 0 returns inf.

    Computed with x = x0 + e^v, ``e^{-x0} ∫ e^v exp(-e^v) / log1p(ρ̄x0 + ρ̄e^v) dv`` over the
    whole line, by the trapezoidal rule (step 0.1 in v; the integrand is analytic in the strip
    |Im v| < π/2 and decays exponentially on the left and double-exponentially on the right,
    so the rule converges geometrically; the ends drop less than 1e-16 of the value).
    Input: ``mean_snr`` ρ̄ > 0 and ``outage_snr`` θ >= 0 (linear, finite, broadcast together);
    ``conditional`` as above.
    Output: float64 of the broadcast shape; 0 where e^{-x0} underflows (without
    ``conditional``: the client is always in outage).
    """
    snr = as_float_array("mean_snr", mean_snr, lower=0.0, lower_op=">")
    theta = as_float_array("outage_snr", outage_snr, lower=0.0)
    snr, theta = np.broadcast_arrays(snr, theta)
    shape = snr.shape
    # one quadrature per distinct (mean SNR, threshold): a cell with one mean SNR needs one
    pairs, inverse = np.unique(
        np.stack([snr.reshape(-1), theta.reshape(-1)], axis=1), axis=0, return_inverse=True
    )
    s = pairs[:, 0]
    x0 = pairs[:, 1] / s
    out = np.full(s.shape, np.inf)
    pos = np.flatnonzero(x0 > 0.0)
    if pos.size:
        left = math.log(min(float(x0[pos].min()), 1.0)) - _INV_LEFT_EFOLDS
        v = np.arange(left, math.log(_INV_RIGHT) + _INV_STEP, _INV_STEP)
        y = np.exp(v)[None, :]
        weight = y * np.exp(-y)
        for start in range(0, pos.size, _INV_CHUNK):
            idx = pos[start : start + _INV_CHUNK]
            sk, xk = s[idx][:, None], x0[idx][:, None]
            integral = _INV_STEP * (weight / np.log1p(sk * xk + sk * y)).sum(axis=1)
            out[idx] = _LN2 * integral
        if not conditional:
            with np.errstate(under="ignore"):
                out[pos] *= np.exp(-x0[pos])
    return scalar_or_array(out[inverse.reshape(-1)].reshape(shape))
