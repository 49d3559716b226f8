"""Newton's method on the optimality conditions of the joint step at a fixed ratio
(docs/solvers.md, "Joint power, frequency, bandwidth and ratio"). It runs compiled
(:func:`optim.joint_kernel.newton_round`); this function is its entry.

At fixed O the best round time D and bandwidth price lambda solve two equations, with every
client's split t_k the root of its slope g_k(t; lambda, D) at (D, lambda)
(the price search of :func:`optim.energy_min.solve_block`):

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

import numpy as np
from numpy.typing import NDArray

from optim.joint_client import ClientBlock, column, kernel

__all__ = ["newton_round"]

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
    (D, lambda), with D kept inside ``d_range``; None when the iteration does not converge
    (40 steps, each halved at most 8 times until |F| falls; |F_1|, |F_2| <= 1e-7).
    ``upload_hint``: (K,) the splits at ``start``, to start the clients' roots from."""
    splits = np.empty(block.bits.size) if upload_hint is None else np.array(upload_hint, float)
    ok, d, price = kernel().newton_round(
        block.table,
        block.bandwidth_hz,
        column(weight),
        queue_s,
        d_range[0],
        d_range[1],
        start[0],
        start[1],
        splits,
        upload_hint is not None,
    )
    return (d, price, splits) if ok else None
