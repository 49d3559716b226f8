"""Newton's method on the optimality conditions of the joint step at a fixed ratio
(docs/solvers.md, "Joint power, frequency, bandwidth and ratio"). Pure numpy.

At fixed O the best round time D and bandwidth price lambda solve two equations, with every
client's split t_k the root of its slope g_k(t; lambda, D) at (D, lambda)
(:func:`optim.energy_min.priced_split`):

    F_1 = sum_k b_k - 1 = 0                          (the shares fill the band)
    F_2 = (Q + dW/dD) / Q = 0                        (:func:`optim.energy_min.round_slope`, J4)

Newton's method on (log lambda, D), with the step halved until the residual falls, converges
in a few steps from a neighbouring ratio's solution. The Jacobian is that of the implicit
function theorem: a client's split moves by dt = -(dg / dtheta) / (dg / dt) (dg/dt its
curvature, :func:`optim.joint_client.split_slope_and_curvature`; at an end of its range set
by f_max or f_min, dt/dD = 1 and dt/dlambda = 0; at the upload floor it does not move), and
b_k = y_k / t_k and h_k' move through t and lambda; the partial derivatives in lambda, and
the share's in t, are forward differences at the fixed splits (closed forms, no root). It is
a warm start only: the caller certifies the answer (the price search's duality gap) and falls
back on the nested searches when this fails.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from optim.energy_min import priced_split, round_slope, upload_range_s
from optim.joint_client import ClientBlock, split_slope_and_curvature, split_value

__all__ = ["newton_round"]

_STEPS = 40
_HALVINGS = 8
_SHARE_TOL = 1e-7  # |sum_k b_k - 1|; the price search at its D certifies the answer
_SLOPE_TOL = 1e-7  # |Q + dW/dD| / Q
_FD_REL = 1e-6  # relative step of the partial derivatives at fixed splits
_MAX_LOG_STEP = 2.0  # the price moves by at most e^2 per step
_FloatArray = NDArray[np.float64]


def newton_round(
    block: ClientBlock,
    weight: _FloatArray,
    queue_s: float,
    d_range: tuple[float, float],
    start: tuple[float, float],
    upload_hint: _FloatArray | None = None,
) -> tuple[float, float, _FloatArray] | None:
    """(D [s], lambda, splits [s]) solving F_1 = F_2 = 0 (module docstring) from ``start`` =
    (D, lambda), with D kept inside ``d_range``; None when the iteration does not converge.
    ``upload_hint``: (K,) the splits at ``start``, to start the clients' roots from."""
    d_lo, d_hi = d_range
    guess: list[_FloatArray | None] = [upload_hint]

    def evaluate(d: float, u: float) -> tuple[_FloatArray, _FloatArray]:
        upload, y, _ = priced_split(block, d, math.exp(u), weight, guess[0])
        guess[0] = upload
        return _residual_and_jacobian(block, weight, queue_s, d, math.exp(u), upload, y)

    if not (d_lo < start[0] < d_hi and 0.0 < start[1] < math.inf):
        return None
    d, u = start[0], math.log(start[1])
    f, jac = evaluate(d, u)
    for _ in range(_STEPS):
        if not (np.all(np.isfinite(f)) and np.all(np.isfinite(jac))):
            return None
        if abs(f[0]) <= _SHARE_TOL and abs(f[1]) <= _SLOPE_TOL:
            return d, math.exp(u), guess[0]
        det = jac[0, 0] * jac[1, 1] - jac[0, 1] * jac[1, 0]
        if det == 0.0 or not math.isfinite(det):
            return None
        du = (jac[0, 1] * f[1] - jac[1, 1] * f[0]) / det  # Cramer's rule on jac @ step = -f
        dd = (jac[1, 0] * f[0] - jac[0, 0] * f[1]) / det
        du = min(max(du, -_MAX_LOG_STEP), _MAX_LOG_STEP)
        norm = float(np.hypot(*f))
        for _ in range(_HALVINGS):
            d_new = min(max(d + dd, 0.5 * (d + d_lo)), 0.5 * (d + d_hi))
            f_new, jac_new = evaluate(d_new, u + du)
            if np.all(np.isfinite(f_new)) and float(np.hypot(*f_new)) < norm:
                d, u, f, jac = d_new, u + du, f_new, jac_new
                break
            du, dd = 0.5 * du, 0.5 * dd
        else:
            return None
    return None


def _residual_and_jacobian(
    block: ClientBlock,
    weight: _FloatArray,
    queue_s: float,
    d: float,
    price: float,
    upload: _FloatArray,
    y: _FloatArray,
) -> tuple[_FloatArray, _FloatArray]:
    """(F (2,), dF/d(log lambda, D) (2, 2)) of the module docstring at the splits ``upload``
    [s] and products ``y`` [s]."""
    has_bits = block.bits > 0.0
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        share = np.where(has_bits, y / upload, 0.0)
        slope = round_slope(block, d, upload, price, weight)
        f = np.array([float(np.sum(share)) - 1.0, (queue_s + slope) / queue_s])
        # partial derivatives at the fixed splits
        g, g_t = split_slope_and_curvature(block, d, upload, price, weight)
        g_up, _ = split_slope_and_curvature(block, d, upload, price * (1.0 + _FD_REL), weight)
        g_lam = (g_up - g) / (price * _FD_REL)  # = dh'/dlambda: the compute part has no lambda
        y_lam = split_value(block, d, upload, price * (1.0 + _FD_REL), weight)[1]
        b_lam = np.where(has_bits, (y_lam / upload - share) / (price * _FD_REL), 0.0)
        t_up = upload * (1.0 + _FD_REL)
        y_t = split_value(block, d, t_up, price, weight)[1]
        b_t = np.where(has_bits, (y_t / t_up - share) / (upload * _FD_REL), 0.0)
        cubed = np.where(block.cycles > 0.0, weight * block.kappa * block.cycles**3, 0.0)
        g_d = -6.0 * cubed / (d - upload) ** 4  # d/dD of the compute slope 2 w kappa C^3/tau^3
        h_t = g_t + g_d  # the upload part of the curvature
        # how each split moves: inside its range by the implicit function theorem
        lo, hi = upload_range_s(block, d)
        slow = d - block.slowest_compute_s()
        inside = (upload > lo) & (upload < hi)
        follows_d = (upload >= hi) | ((upload <= lo) & (lo == slow))  # an end set by f_max, f_min
        dt_du = np.where(inside, -g_lam * price / g_t, 0.0)
        dt_dd = np.where(inside, -g_d / g_t, np.where(follows_d, 1.0, 0.0))
        # round_slope's clients at the upload floor count -2 w kappa C^3 / tau^3 instead of h'
        floor_bound = (upload <= lo) & (lo > slow) & (block.cycles > 0.0)
        df2_du = np.where(floor_bound | ~has_bits, 0.0, h_t * dt_du + g_lam * price)
        df2_dd = np.where(floor_bound, -g_d, np.where(has_bits, h_t * dt_dd, 0.0))
        jac = np.array(
            [
                [_finite_sum(b_t * dt_du + b_lam * price), _finite_sum(b_t * dt_dd)],
                [_finite_sum(df2_du) / queue_s, _finite_sum(df2_dd) / queue_s],
            ]
        )
    return f, jac


def _finite_sum(values: _FloatArray) -> float:
    """Sum over the clients of the finite terms (a client at its floor has inf or nan partials,
    and does not move)."""
    return float(np.sum(np.where(np.isfinite(values), values, 0.0)))
