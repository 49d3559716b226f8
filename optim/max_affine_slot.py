"""P3 (eq. 29) with a round delay that is a maximum of affine functions of the ratio O.

On an uplink where clients do not finish together (NOMA with SIC: each client's upload
bits_k(O) / R_k ends on its own), the round's delay is the longest upload,

    D(O) = max_j (c0_j + c_j O)   [s],  c_j, c0_j >= 0,

a convex piecewise-affine function of O, and the per-slot objective

    f(O) = (Q + Pi) D(O) + V (offset + a (1 - O)^2 / O^4),   O in [O_min, 1]

stays convex (a sum of convex functions). :func:`solve_max_affine_slot` minimises it exactly:
the upper envelope of the lines over [O_min, 1] splits the interval into pieces [lo, hi] on
each of which D is one line; there f is P3 with that line's slope, whose minimiser over
[lo, 1] (:func:`optim.p3.p3_ratio`, exact) clipped to hi is the piece's minimiser (convexity),
and the least of the pieces' values is the optimum (ties: the larger O, the smaller penalty).
``method="cvxpy"`` solves the same problem with CVXPY in x = 1/O (the epigraph of the maximum),
the independent check of the tests. With one line it is :func:`optim.online.solve_affine_slot`.
"""

from __future__ import annotations

import logging

import numpy as np
from numpy.typing import ArrayLike, NDArray

from optim._validation import check_real
from optim.online import SlotSolution
from optim.p3 import p3_ratio

__all__ = ["max_affine_delay_s", "solve_max_affine_slot", "upper_envelope"]

logger = logging.getLogger(__name__)

_SNAP = 1e-5  # relative distance to a bound below which CVXPY's x is put on the bound


def max_affine_delay_s(slopes_s: NDArray, fixed_s: NDArray, ratio: float) -> float:
    """D(O) = max_j (c0_j + c_j O) [s] at O = ``ratio`` (0 for no line)."""
    return float(np.max(fixed_s + slopes_s * ratio, initial=0.0))


def upper_envelope(
    slopes_s: NDArray, fixed_s: NDArray, o_min: float
) -> list[tuple[float, float, int]]:
    """The pieces ``(lo, hi, j)`` of [O_min, 1] on which line j is the largest, left to right
    (ties at a point: the larger slope, which stays largest to its right)."""
    c, c0 = np.asarray(slopes_s, float), np.asarray(fixed_s, float)
    x = float(o_min)
    at = c0 + c * x
    top = np.flatnonzero(at == at.max())
    j = int(top[np.argmax(c[top])])
    pieces = []
    while True:
        steeper = c > c[j]
        if not steeper.any():
            pieces.append((x, 1.0, j))
            return pieces
        with np.errstate(divide="ignore", invalid="ignore"):
            cross = np.where(steeper, (c0[j] - c0) / (c - c[j]), np.inf)
        cross[cross <= x] = np.inf  # already below j to the right of x, or a rounding echo
        x_next = float(cross.min())
        if x_next >= 1.0:
            pieces.append((x, 1.0, j))
            return pieces
        pieces.append((x, x_next, j))
        ties = np.flatnonzero(cross == x_next)
        x, j = x_next, int(ties[np.argmax(c[ties])])


def _objective(w: float, V: float, c: NDArray, c0: NDArray, offset: float, a: float, o: float):
    delay = max_affine_delay_s(c, c0, o)
    bound = offset + a * (1.0 - o) ** 2 / o**4  # gamma^t, eq. (14)
    return w * delay + V * bound, delay, bound


def _exact_ratio(w: float, va: float, c: NDArray, c0: NDArray, o_min: float) -> float:
    """The exact minimiser (module docstring)."""
    best_o, best_f = 1.0, np.inf
    for lo, hi, j in upper_envelope(c, c0, o_min):
        if hi <= lo:
            continue
        o = min(p3_ratio(w * float(c[j]), va, lo), hi) if lo < 1.0 else 1.0
        f = w * max_affine_delay_s(c, c0, o) + va * (1.0 - o) ** 2 / o**4
        if f < best_f or (f == best_f and o > best_o):
            best_o, best_f = o, f
    return best_o


def _cvxpy_ratio(w: float, va: float, c: NDArray, c0: NDArray, o_min: float) -> float | None:
    """CVXPY's minimiser in x = 1/O (None if no solver reported optimal)."""
    import cvxpy as cp

    x_max = 1.0 / o_min
    x = cp.Variable(name="inv_sparsification")

    def f(o: float) -> float:
        return w * max_affine_delay_s(c, c0, o) + va * (1.0 - o) ** 2 / o**4

    scale = min(f(1.0), f(o_min)) or 1.0  # the optimum of order one (as optim.p3_cvxpy)
    delay = cp.max(c0 + c * cp.inv_pos(x))  # D(1/x): convex, non-decreasing in each line
    penalty = cp.square(cp.pos(cp.square(x) - x))  # (1 - O)^2 / O^4 = (x^2 - x)^2
    problem = cp.Problem(cp.Minimize((w * delay + va * penalty) / scale), [x >= 1.0, x <= x_max])
    for solver in ("CLARABEL", "SCS"):
        if solver not in cp.installed_solvers():
            continue
        tight = {"eps_abs": 1e-10, "eps_rel": 1e-10, "max_iters": 200_000}
        kwargs = tight if solver == "SCS" else {}
        try:
            problem.solve(solver=solver, **kwargs)
        except cp.SolverError as err:
            logger.debug("max-affine P3: %s failed: %s", solver, err)
            continue
        if problem.status == cp.OPTIMAL and x.value is not None:
            xv = float(x.value)
            xv = x_max if xv >= x_max * (1.0 - _SNAP) else 1.0 if xv <= 1.0 + _SNAP else xv
            return min(1.0, max(o_min, 1.0 / xv))
    return None


def solve_max_affine_slot(
    *,
    queue: float,
    V: float,
    delay_per_ratio_s: ArrayLike,
    fixed_delay_s: ArrayLike,
    offset: float,
    a: float,
    o_min: float,
    shares: ArrayLike,
    method: str = "exact",
    energy_price_jw: float = 0.0,
) -> SlotSolution:
    """P3 with D(O) = max_j (c0_j + c_j O) (module docstring).

    Args:
        queue: Q^t [s] >= 0; V: penalty weight >= 0.
        delay_per_ratio_s: (J,) c_j [s] >= 0; fixed_delay_s: (J,) c0_j [s] >= 0 (J >= 1).
        offset, a: the penalty offset + a (1 - O)^2 / O^4 (a >= 0).
        o_min: O_min in (0, 1); shares: (K,) resources, returned as they are.
        method: ``"exact"`` or ``"cvxpy"`` (falls back to the exact solver if CVXPY fails).
        energy_price_jw: Pi^t >= 0 [J W], pricing the delay as the queue does (eq. E2).

    Returns:
        :class:`~optim.online.SlotSolution` (``delay_s`` = D(O^t), ``bound`` = gamma(O^t)).
    """
    if method not in ("exact", "cvxpy"):
        raise ValueError(f"method must be 'exact' or 'cvxpy'; got {method!r}")
    q = check_real("queue", queue, low=0.0)
    V = check_real("V", V, low=0.0)
    a = check_real("a", a, low=0.0)
    offset = check_real("offset", offset)
    o_min = check_real("o_min", o_min, low=0.0, high=1.0, low_open=True, high_open=True)
    price = check_real("energy_price_jw", energy_price_jw, low=0.0)
    c = np.asarray(delay_per_ratio_s, dtype=float).ravel()
    c0 = np.asarray(fixed_delay_s, dtype=float).ravel()
    if c.size == 0 or c.shape != c0.shape or (c < 0).any() or (c0 < 0).any():
        raise ValueError("delay_per_ratio_s and fixed_delay_s: equal-length arrays of values >= 0")
    if not (np.isfinite(c).all() and np.isfinite(c0).all()):
        raise ValueError("delay_per_ratio_s and fixed_delay_s must be finite")
    w = q + price
    used, fallbacks = method, 0
    o = None
    if method == "cvxpy" and w * c.max() > 0.0 and V * a > 0.0:
        o = _cvxpy_ratio(w, V * a, c, c0, o_min)
        fallbacks = 0 if o is not None else 2
    if o is None:  # asked for, or a degenerate instance CVXPY need not see, or CVXPY failed
        used = "exact"
        o = _exact_ratio(w, V * a, c, c0, o_min)
    _, delay, bound = _objective(w, V, c, c0, offset, a, o)
    return SlotSolution(
        sparsification=o,
        shares=np.asarray(shares, dtype=np.float64),
        delay_s=delay,
        bound=bound,
        objective=q * delay + V * bound + price * delay,  # eq. (29a), (E2)
        method=used,
        fell_back=fallbacks > 0,
        queue_before=q,
        fallbacks=fallbacks,
        energy_price_jw=price,
    )
