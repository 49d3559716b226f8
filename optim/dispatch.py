"""The per-dispatch drift-plus-penalty step of the event-driven modes (docs/solvers.md,
"Per-dispatch step (asynchronous modes)"). Pure numpy.

A client k dispatched with SNR_k computes for c_k seconds, then uploads
v (n_k O + h_k) + side_k bits (n_k values the ratio O thins, h_k always sent) at the share b of
the band B it is expected to get, so its latency and energy are expected to be

    l_k(O) = c_k + u0_k + u_k O                                   [s]
    E_k(O) = E_comp,k + P_k (u0_k + u_k O)                        [J]
    u_k = v n_k / (b B log2(1 + SNR_k)),  u0_k = (v h_k + side_k) / (b B log2(1 + SNR_k)).

With the delay queue Q [s] (one per server, eq. 21 per update), the energy queue Z_k [J] (E1)
and the penalty gamma_k(O) = offset_k + a_k (1 - O)^2 / O^4 (eq. 14's form), the controller
picks

    O_k = argmin_{O in [O_min, 1]}  J_k(O) = V gamma_k(O) + Q l_k(O) + Z_k E_k(O).    (D1)

J_k(O) = (Q + Z_k P_k) u_k O + V a_k (1 - O)^2 / O^4 + (terms free of O): P3 (eq. 29a) with
qc = (Q + Z_k P_k) u_k and va = V a_k, convex on (0, 1] (eq. 30), and its minimiser is the
monotone Newton root of :mod:`optim.p3`, here vectorised over candidates
(:func:`dispatch_ratios`; :func:`optim.p3.solve_p3_exact` is the scalar one).

The queue takes every update's realised latency in arrival order,
Q <- max(Q + l_i - D_th, 0) (:func:`queue_after_updates`), so that (1/U) sum_i l_i <= D_th +
Q^U / U over U updates: D_th is a per-update latency budget.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from optim._validation import check_real
from optim.controller import queue_update
from optim.p3 import solve_p3_exact

__all__ = [
    "DispatchSolution",
    "delay_price",
    "dispatch_ratios",
    "queue_after_updates",
    "solve_dispatch",
]

_MAX_NEWTON = 200
_SCALAR_UP_TO = 8  # candidates solved one by one (numpy's per-call cost dominates below)


@dataclass(frozen=True, slots=True, eq=False)
class DispatchSolution:
    """(D1) solved for n candidates (arrays of shape (n,)).

    Attributes:
        ratio: O_k in [O_min, 1].
        latency_s: l_k(O_k), compute plus expected upload time [s].
        upload_s: u0_k + u_k O_k, the expected upload time [s].
        penalty: gamma_k(O_k).
        objective: J_k(O_k) of (D1), constants included (candidates compare by it).
    """

    ratio: NDArray[np.float64]
    latency_s: NDArray[np.float64]
    upload_s: NDArray[np.float64]
    penalty: NDArray[np.float64]
    objective: NDArray[np.float64]


def dispatch_ratios(qc: ArrayLike, va: ArrayLike, o_min: float) -> NDArray[np.float64]:
    """(n,) minimisers O in [o_min, 1] of qc O + va (1 - O)^2 / O^4, one per entry.

    The monotone Newton of :func:`optim.p3.solve_p3_exact` on
    psi(x) = x^3 (x - 1)(2x - 1) - qc / (2 va), x = 1/O, run on every entry at once from the
    same start (right of the root, so the iterates decrease to it).

    Args:
        qc: (n,) or scalar, >= 0 [s^2] (queue-and-price weight times u_k).
        va: (n,) or scalar, >= 0 (V times a_k).
        o_min: O_min in (0, 1).
    """
    qc, va = np.broadcast_arrays(np.asarray(qc, dtype=float), np.asarray(va, dtype=float))
    shape, qc, va = qc.shape, qc.ravel(), va.ravel()
    if qc.size <= _SCALAR_UP_TO:  # a few candidates: the scalar solver, without numpy's overhead
        pairs = zip(qc.tolist(), va.tolist(), strict=True)
        scalar = [solve_p3_exact(qc=q, va=v, o_min=o_min) for q, v in pairs]
        return np.array(scalar, dtype=float).reshape(shape)
    out = np.ones(qc.shape)
    x_max = 1.0 / o_min
    psi_max = x_max**3 * (x_max - 1.0) * (2.0 * x_max - 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        kappa = qc / (2.0 * va)
    out[(qc > 0.0) & (va <= 0.0)] = o_min  # pure delay minimisation
    interior = (qc > 0.0) & (va > 0.0)
    out[interior & (psi_max <= kappa)] = o_min  # psi(1/O_min) <= 0
    todo = np.flatnonzero(interior & (psi_max > kappa))
    k = kappa[todo]
    x = np.minimum(np.minimum(1.0 + k, 1.0 + (0.5 * k) ** 0.2), x_max)
    active = np.ones(todo.size, dtype=bool)
    for _ in range(_MAX_NEWTON):
        if not active.any():
            break
        xa = x[active]
        x2 = xa * xa
        psi = x2 * xa * (xa - 1.0) * (2.0 * xa - 1.0) - k[active]
        step = np.where(psi > 0.0, psi / (x2 * (10.0 * x2 - 12.0 * xa + 3.0)), 0.0)
        x[active] = xa - step
        still = (psi > 0.0) & (step > 1e-15 * (xa - step))
        active[np.flatnonzero(active)[~still]] = False
    o = np.where(x <= 1.0, 1.0, 1.0 / x)
    out[todo] = np.maximum(o, o_min)
    return out.reshape(shape)


def solve_dispatch(
    *,
    queue: float,
    V: float,
    o_min: float,
    offset: ArrayLike,
    a: ArrayLike,
    upload_per_ratio_s: ArrayLike,
    fixed_upload_s: ArrayLike = 0.0,
    compute_s: ArrayLike = 0.0,
    energy_queue_j: ArrayLike = 0.0,
    tx_power_w: ArrayLike = 0.0,
    compute_energy_j: ArrayLike = 0.0,
) -> DispatchSolution:
    """Solve (D1) for n candidates at once (module docstring); arrays broadcast to (n,).

    Args:
        queue: Q >= 0 [s], or (n,) one price of delay per candidate (those of (D4),
            :mod:`optim.dispatch_radio`).
        V: penalty weight >= 0.
        o_min: O_min in (0, 1).
        offset, a: gamma_k(O) = offset_k + a_k (1 - O)^2 / O^4, a_k >= 0.
        upload_per_ratio_s: u_k >= 0 [s] (upload seconds per unit ratio at the expected share).
        fixed_upload_s: u0_k >= 0 [s] (upload seconds of the values always sent).
        compute_s: c_k >= 0 [s].
        energy_queue_j: Z_k >= 0 [J] (0: no energy budget).
        tx_power_w: P_k >= 0 [W].
        compute_energy_j: E_comp,k >= 0 [J].

    Returns:
        :class:`DispatchSolution`.
    """
    q = delay_price("queue", queue)
    v = check_real("V", V, low=0.0)
    omin = check_real("o_min", o_min, low=0.0, high=1.0, low_open=True, high_open=True)
    names = (
        "offset",
        "a",
        "upload_per_ratio_s",
        "fixed_upload_s",
        "compute_s",
        "energy_queue_j",
        "tx_power_w",
        "compute_energy_j",
    )
    given = (offset, a, upload_per_ratio_s, fixed_upload_s, compute_s)
    given += (energy_queue_j, tx_power_w, compute_energy_j)
    block = np.array(np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in given)))
    ok = np.isfinite(block)
    ok[1:] &= block[1:] >= 0.0  # every input but the offset is >= 0
    if not ok.all():
        i = int(np.flatnonzero(~ok.reshape(len(names), -1).all(axis=1))[0])
        bound = "" if i == 0 else " >= 0"
        raise ValueError(f"{names[i]} must hold finite values{bound}; got {block[i]!r}")
    off, a_k, u, u0, c, z, p, e_comp = block
    weight = q + z * p  # Q + Z_k P_k: what one second of upload costs [s, or J W]
    o = dispatch_ratios(weight * u, v * a_k, omin)
    upload = u0 + u * o
    latency = c + upload
    penalty = off + a_k * (1.0 - o) ** 2 / o**4  # eq. (14)'s form
    objective = v * penalty + q * latency + z * (e_comp + p * upload)  # (D1)
    return DispatchSolution(o, latency, upload, penalty, objective)


def delay_price(name: str, queue: ArrayLike) -> float | NDArray[np.float64]:
    """Q >= 0 [s] as a float, or (n,) prices >= 0 [s] as an array (one per candidate)."""
    if np.ndim(queue) == 0:
        return check_real(name, queue.item() if isinstance(queue, np.ndarray) else queue, low=0.0)
    return _nonneg(name, queue)


def queue_after_updates(queue: float, latencies_s: ArrayLike, d_th_s: float) -> float:
    """Q after eq. (21) once per update, in arrival order: Q <- max(Q + l_i - D_th, 0) [s]."""
    q = check_real("queue", queue, low=0.0)
    budget = check_real("d_th_s", d_th_s, low=0.0, low_open=True)
    for latency in _nonneg("latencies_s", latencies_s).ravel().tolist():
        q = queue_update(q, latency, budget)
    return q


def _nonneg(name: str, value: ArrayLike) -> NDArray[np.float64]:
    arr = np.asarray(value, dtype=float)
    if not (np.isfinite(arr) & (arr >= 0.0)).all():
        raise ValueError(f"{name} must hold finite values >= 0; got {arr!r}")
    return arr
