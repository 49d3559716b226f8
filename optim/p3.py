"""The per-slot problem P3 (eq. 29) in one dimension, and its exact scalar solver.

With the equal-delay bandwidth rule (eq. 31) every scheduled client finishes at

    D^t(O) = c O,     c = v r p sum_{j in K^t} 1 / (B log2(1 + SNR_j))   [s]

(docs/solvers.md), and gamma^t(O) = offset + a (1 - O)^2 / O^4 with
a = 4 N r S^2 W^4 / K (eq. 14). P3 (eq. 29a-b) is therefore

    minimize_{O in [O_min, 1]}  f(O) = Q c O + V (offset + a (1 - O)^2 / O^4).

Derivatives (checked against finite differences in the tests):

    f'(O)  = Q c - 2 V a (1 - O)(2 - O) / O^5,
    f''(O) = 2 V a (3 O^2 - 12 O + 10) / O^6
           = V 8 N r S^2 W^4 / (K O^6) (3 O^2 - 12 O + 10).

The last line is eq. (30) of the paper, which prints W^2 where the derivation gives W^4 (a typo:
a = 4 N r S^2 W^4 / K is what the sparsification term of eq. 14 carries). 3 O^2 - 12 O + 10 > 0
for O < 2 - sqrt(2/3) ~ 1.18, so f is convex on (0, 1] and P3 is a 1-D convex problem.

Exact solver. Substitute x = 1/O in [1, 1/O_min]: (1 - O)^2 / O^4 = (x^2 - x)^2, and x^2 f'(O)
becomes -phi(x) with

    phi(x) = 2 V a x^3 (x - 1)(2x - 1) - Q c,

a quintic that is increasing and convex on x >= 1 (its second derivative is
2 V a 2x (20 x^2 - 18 x + 3) > 0 there). The optimum is x* = 1 (O = 1) when Q c = 0, x* = 1/O_min
when phi(1/O_min) <= 0, and otherwise the unique root of phi. Newton's method on an increasing
convex function started right of the root never overshoots, so it decreases monotonically to x*;
phi(x) >= 2 V a (x - 1) - Q c and phi(x) >= 4 V a (x - 1)^5 - Q c give the start
x0 = min(1/O_min, 1 + Q c / (2 V a), 1 + (Q c / (4 V a))^(1/5)), which is right of the root.
No bracketing or line search is needed; a bisection fallback guards against round-off.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "p3_derivative",
    "p3_objective",
    "p3_ratio",
    "p3_second_derivative",
    "solve_p3_exact",
]

_MAX_NEWTON = 200


def p3_objective(
    sparsification: ArrayLike, *, qc: float, V: float, offset: float, a: float
) -> float | NDArray[np.float64]:
    """f(O) = Q c O + V (offset + a (1 - O)^2 / O^4), the P3 objective (eq. 29a).

    Args:
        sparsification: O in (0, 1], scalar or array.
        qc: Q^t c [s^2]: queue [s] times the delay per unit sparsification c [s].
        V: Lyapunov penalty weight (>= 0).
        offset: O-independent part of gamma^t.
        a: sparsification coefficient 4 N r S^2 W^4 / K.
    """
    o = np.asarray(sparsification, dtype=np.float64)
    val = qc * o + V * (offset + a * (1.0 - o) ** 2 / o**4)
    return float(val) if val.ndim == 0 else val


def p3_derivative(
    sparsification: ArrayLike, *, qc: float, V: float, a: float
) -> float | NDArray[np.float64]:
    """f'(O) = Q c - 2 V a (1 - O)(2 - O) / O^5."""
    o = np.asarray(sparsification, dtype=np.float64)
    val = qc - 2.0 * V * a * (1.0 - o) * (2.0 - o) / o**5
    return float(val) if val.ndim == 0 else val


def p3_second_derivative(
    sparsification: ArrayLike, *, V: float, a: float
) -> float | NDArray[np.float64]:
    """f''(O) = 2 V a (3 O^2 - 12 O + 10) / O^6, eq. (30) with W^4 (the paper prints W^2: typo)."""
    o = np.asarray(sparsification, dtype=np.float64)
    # eq. (30): 8 N r S^2 W^4 / (K O^6) (3 O^2 - 12 O + 10) = 2 a (...) / O^6, times V.
    val = 2.0 * V * a * (3.0 * o**2 - 12.0 * o + 10.0) / o**6
    return float(val) if val.ndim == 0 else val


def solve_p3_exact(*, qc: float, va: float, o_min: float) -> float:
    """Minimiser O* in [o_min, 1] of Q c O + V a (1 - O)^2 / O^4 (P3, eq. 29).

    Monotone Newton on phi(x) in x = 1/O (see the module docstring); pure float arithmetic.

    Args:
        qc: Q^t c >= 0 [s^2] (queue times delay per unit sparsification).
        va: V a >= 0 (penalty weight times the sparsification coefficient).
        o_min: lower bound O_min in (0, 1).

    Returns:
        O*, a float in [o_min, 1]. When qc = va = 0 every O is optimal and 1 is returned (the
        best bound at no cost).
    """
    return p3_ratio(qc, va, o_min)


def p3_ratio(qc: float, va: float, o_min: float) -> float:
    """:func:`solve_p3_exact` with positional arguments: pure float arithmetic, which
    :mod:`optim.dispatch_kernel` also compiles as it stands (one implementation of P3's root)."""
    if qc <= 0.0:
        return 1.0  # f'(O) <= 0 on (0, 1]: no queue pressure, keep everything
    if va <= 0.0:
        return o_min  # pure delay minimisation
    # Work with psi = phi / (2 V a) = x^3 (x - 1)(2x - 1) - kappa, kappa = Q c / (2 V a).
    kappa = qc / (2.0 * va)
    x_max = 1.0 / o_min
    if x_max * x_max * x_max * (x_max - 1.0) * (2.0 * x_max - 1.0) <= kappa:
        return o_min  # phi(1/O_min) <= 0: f is decreasing in x up to the bound
    # Start right of the root: phi(x) >= 2 V a (x - 1) - Q c and phi(x) >= 4 V a (x - 1)^5 - Q c
    # on x >= 1, so both 1 + Q c / (2 V a) and 1 + (Q c / (4 V a))^(1/5) bound x* from above.
    x = 1.0 + kappa
    x5 = 1.0 + (0.5 * kappa) ** 0.2
    if x5 < x:
        x = x5
    if x_max < x:
        x = x_max
    for _ in range(_MAX_NEWTON):
        x2 = x * x
        psi = x2 * x * (x - 1.0) * (2.0 * x - 1.0) - kappa
        if psi <= 0.0:
            break  # at the root to round-off (Newton from the right never overshoots)
        step = psi / (x2 * (10.0 * x2 - 12.0 * x + 3.0))
        x -= step
        if step <= 1e-15 * x:
            break
    else:  # pragma: no cover - Newton converges in far fewer steps; kept as a safeguard
        x = _bisect_phi(qc, 2.0 * va, 1.0, x_max)
    if x <= 1.0:
        return 1.0
    o = 1.0 / x
    return o_min if o < o_min else o


def _bisect_phi(qc: float, two_va: float, lo: float, hi: float) -> float:  # pragma: no cover
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if two_va * mid**3 * (mid - 1.0) * (2.0 * mid - 1.0) - qc > 0.0:
            hi = mid
        else:
            lo = mid
    return 0.5 * (lo + hi)
