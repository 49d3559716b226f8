"""Newton's method on the optimality conditions of the joint step at a fixed ratio
(docs/solvers.md, "Joint power, frequency, bandwidth and ratio"). Pure numpy.

At fixed O the best round time D and bandwidth price lambda solve two equations, with every
client's split t_k the root of its slope at (D, lambda) (:func:`optim.energy_min.priced_split`):

    F_1 = sum_k b_k - 1 = 0                          (the shares fill the band)
    F_2 = (Q + dW/dD) / Q = 0                        (:func:`optim.energy_min.round_slope`, J4)

Newton's method on (log lambda, D), with a Jacobian by forward differences kept current by
Broyden's update (and carried from one ratio to the next), and the step halved until the
residual falls, converges in a few steps from a neighbouring ratio's solution; it is a warm
start only: the caller certifies the answer (the price search's duality gap) and falls
back on the nested searches when this fails.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from optim.energy_min import priced_split, round_slope
from optim.joint_client import ClientBlock

__all__ = ["newton_round"]

_STEPS = 40
_HALVINGS = 8
_SHARE_TOL = 1e-7  # |sum_k b_k - 1|; the price search at its D certifies the answer
_SLOPE_TOL = 1e-7  # |Q + dW/dD| / Q
_FD_LOG_PRICE = 1e-6
_MAX_LOG_STEP = 2.0  # the price moves by at most e^2 per step
_FD_ROUND = 1e-7  # relative
_FloatArray = NDArray[np.float64]


def newton_round(
    block: ClientBlock,
    weight: _FloatArray,
    queue_s: float,
    d_range: tuple[float, float],
    start: tuple[float, float],
    jacobian: NDArray[np.float64] | None = None,
    upload_hint: _FloatArray | None = None,
) -> tuple[float, float, NDArray[np.float64], _FloatArray] | None:
    """(D [s], lambda, Jacobian, splits [s]) solving F_1 = F_2 = 0 (module docstring) from
    ``start`` = (D, lambda), with D kept inside ``d_range``; None when the iteration does not
    converge. ``upload_hint``: (K,) the splits at ``start``, to start the clients' roots from.

    ``jacobian``: a (2, 2) d(F_1, F_2)/d(log lambda, D) from a neighbouring ratio to start with;
    Broyden's update keeps it current, and it is rebuilt by forward differences when a step
    fails to lower the residual.
    """
    d_lo, d_hi = d_range
    guess: list[_FloatArray | None] = [upload_hint]

    def residual(d: float, u: float) -> NDArray[np.float64]:
        upload, y, _ = priced_split(block, d, math.exp(u), weight, guess[0])
        guess[0] = upload
        with np.errstate(invalid="ignore", divide="ignore"):
            share = np.where(block.bits > 0.0, y / upload, 0.0)
        slope = round_slope(block, d, upload, math.exp(u), weight)
        return np.array([float(np.sum(share)) - 1.0, (queue_s + slope) / queue_s])

    def differences(d: float, u: float, f: NDArray[np.float64]) -> NDArray[np.float64]:
        h_d = _FD_ROUND * d
        return np.column_stack(
            [
                (residual(d, u + _FD_LOG_PRICE) - f) / _FD_LOG_PRICE,
                (residual(d + h_d, u) - f) / h_d,
            ]
        )

    if not (d_lo < start[0] < d_hi and 0.0 < start[1] < math.inf):
        return None
    d, u = start[0], math.log(start[1])
    f = residual(d, u)
    jac, fresh = (None, False) if jacobian is None else (jacobian.copy(), False)
    for _ in range(_STEPS):
        if not np.all(np.isfinite(f)):
            return None
        if abs(f[0]) <= _SHARE_TOL and abs(f[1]) <= _SLOPE_TOL:
            return d, math.exp(u), jac, guess[0]
        if jac is None:
            jac, fresh = differences(d, u, f), True
        det = jac[0, 0] * jac[1, 1] - jac[0, 1] * jac[1, 0]
        if det == 0.0 or not math.isfinite(det):
            return None
        du = (jac[0, 1] * f[1] - jac[1, 1] * f[0]) / det  # Cramer's rule on jac @ step = -f
        dd = (jac[1, 0] * f[0] - jac[0, 0] * f[1]) / det
        norm = float(np.hypot(*f))
        du = min(max(du, -_MAX_LOG_STEP), _MAX_LOG_STEP) if math.isfinite(du) else du
        for _ in range(_HALVINGS):
            d_new = min(max(d + dd, 0.5 * (d + d_lo)), 0.5 * (d + d_hi))
            f_new = residual(d_new, u + du) if math.isfinite(du) else f
            if np.all(np.isfinite(f_new)) and float(np.hypot(*f_new)) < norm:
                step = np.array([du, d_new - d])
                jac = jac + np.outer(f_new - f - jac @ step, step) / float(step @ step)  # Broyden
                d, u, f, fresh = d_new, u + du, f_new, False
                break
            if not fresh:  # a stale Jacobian: rebuild it before shortening the step
                break
            du, dd = 0.5 * du, 0.5 * dd
        else:
            return None
        if not fresh and f is not f_new:
            jac = None
    return None
