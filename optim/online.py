"""Online stage: one slot of the Lyapunov drift-plus-penalty controller (P3, eq. 29-31).

:func:`solve_slot` takes the current virtual queue Q^t [s], the scheduled clients' SNRs and the
fixed rank r, and returns the sparsification ratio O^t, the equal-delay bandwidth shares b_k^t
(eq. 31), the planned round delay D^t [s] and the bound gamma^t. The 1-D problem and its exact
solver live in :mod:`optim.p3`; the CVXPY formulation in :mod:`optim.p3_cvxpy`.

Solvers are looked up by name in :data:`SLOT_METHODS`; adding one is one function with the
signature of :func:`_solve_exact` plus one registry line.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from channels.fdma import equal_delay_shares, spectral_efficiency
from optim._validation import check_int, check_real, check_snr
from optim.bound import BoundConstants, scalar_bound_parts
from optim.p3 import solve_p3_exact

__all__ = ["SLOT_METHODS", "SlotSolution", "solve_affine_slot", "solve_slot"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, eq=False)
class SlotSolution:
    """Decision for one round (slot) of the online stage (immutable; ``==`` is identity).

    Attributes:
        sparsification: O^t in [O_min, 1], fraction of LoRA entries each client uploads.
        shares: (K,) bandwidth shares b_k^t of eq. (31), summing to 1.
        delay_s: planned round delay D^t [s]; with eq. (31) every scheduled client finishes then.
        bound: gamma^t (eq. 14) at (r, O^t, K).
        objective: Q^t D^t + V gamma^t, the P3 objective (eq. 29a) at the decision; with an
            energy price Pi^t, (Q^t + Pi^t) D^t + V gamma^t (eq. E2 of
            :mod:`optim.energy_queue` without the O-independent sum_k Z_k E_comp,k).
        method: the solver that produced the decision (``"exact"`` or ``"cvxpy"``). A
            ``"cvxpy"`` request with Q c = 0 or V a = 0 (closed-form optimum O = 1 or O_min, a
            degenerate conic problem) is answered by the exact solver and reports ``"exact"``.
        fell_back: True when ``"cvxpy"`` was asked for, did not report optimal, and the exact
            solver answered instead.
        queue_before: Q^t [s] the decision was made with.
        queue_after: Q^{t+1} [s] after eq. (21) with ``delay_s``; only set by
            :meth:`optim.controller.LyapunovController.step` (``None`` from ``decide`` and
            ``solve_slot``, which do not touch the queue).
        fallbacks: solvers that failed before one answered: 0 when the first answered; with
            ``"cvxpy"``, 1 when SCS rescued CLARABEL and 2 when both failed and the exact
            solver answered (``fell_back``).
        energy_price_jw: the energy price Pi^t = sum_k Z_k^t P_k [J·W] the decision was made
            with (0: no energy budget; see :mod:`optim.energy_queue`).
    """

    sparsification: float
    shares: NDArray[np.float64]
    delay_s: float
    bound: float
    objective: float
    method: str
    fell_back: bool
    queue_before: float
    queue_after: float | None = None
    fallbacks: int = 0
    energy_price_jw: float = 0.0


# A slot method maps (qc, va, o_min, cvxpy_problem) -> (O, method actually used, fallbacks):
# the solvers that failed before one answered (a bool counts as 0 or 1).
SlotMethod = Callable[[float, float, float, object], tuple[float, str, int]]


def _solve_exact(qc: float, va: float, o_min: float, problem: object) -> tuple[float, str, int]:
    return solve_p3_exact(qc=qc, va=va, o_min=o_min), "exact", 0


def _solve_cvxpy(qc: float, va: float, o_min: float, problem: object) -> tuple[float, str, int]:
    from optim import p3_cvxpy  # lazy: importing cvxpy costs ~1 s and the exact path needs none

    if qc <= 0.0 or va <= 0.0:
        # A zero weight makes P3 monotone (optimum O = 1 for Q c = 0, O_min for V a = 0) and the
        # conic problem degenerate (a cost-free epigraph variable); answer in closed form.
        return solve_p3_exact(qc=qc, va=va, o_min=o_min), "exact", 0
    prob = problem if problem is not None else p3_cvxpy.default_problem()
    if not isinstance(prob, p3_cvxpy.P3CvxpyProblem):
        raise ValueError(f"cvxpy_problem must be a P3CvxpyProblem; got {type(prob).__name__}")
    res = prob.solve(qc=qc, va=va, o_min=o_min)
    if res.sparsification is None:
        prob.warn_once(
            logger,
            "exact",
            "P3: CVXPY status %r (solver %s) is not optimal; falling back to the exact solver",
            res.status,
            res.solver,
        )
        return solve_p3_exact(qc=qc, va=va, o_min=o_min), "exact", max(1, res.failures)
    return res.sparsification, "cvxpy", res.failures


SLOT_METHODS: dict[str, SlotMethod] = {
    "exact": _solve_exact,
    "cvxpy": _solve_cvxpy,
}


def check_slot_config(
    *,
    rank: object,
    n_clients: object,
    params_per_rank: object,
    bits_per_value: object,
    bandwidth_hz: object,
    o_min: object,
    constants: object,
    method: object,
) -> tuple[int, int, float, float, float, float]:
    """Validate the per-run arguments of :func:`solve_slot`; return them as numbers.

    Returns:
        ``(rank, n_clients, params_per_rank, bits_per_value, bandwidth_hz, o_min)``.
    """
    if not isinstance(method, str) or method not in SLOT_METHODS:
        raise ValueError(f"method must be one of {sorted(SLOT_METHODS)}; got {method!r}")
    try:  # the per-run arguments rarely change between rounds: memoise their validation
        return _check_run_args_cached(
            rank, n_clients, params_per_rank, bits_per_value, bandwidth_hz, o_min, constants
        )
    except TypeError:  # unhashable argument: validate directly (raises a ValueError)
        return _check_run_args(
            rank, n_clients, params_per_rank, bits_per_value, bandwidth_hz, o_min, constants
        )


def _check_run_args(
    rank: object,
    n_clients: object,
    params_per_rank: object,
    bits_per_value: object,
    bandwidth_hz: object,
    o_min: object,
    constants: object,
) -> tuple[int, int, float, float, float, float]:
    if not isinstance(constants, BoundConstants):
        raise ValueError(f"constants must be a BoundConstants; got {type(constants).__name__}")
    return (
        check_int("rank", rank, low=1, high=constants.r_max),
        check_int("n_clients", n_clients, low=1),
        check_real("params_per_rank", params_per_rank, low=0.0, low_open=True),
        check_real("bits_per_value", bits_per_value, low=0.0, low_open=True),
        check_real("bandwidth_hz", bandwidth_hz, low=0.0, low_open=True),
        check_real("o_min", o_min, low=0.0, high=1.0, low_open=True, high_open=True),
    )


# typed=True: True and 1 (or 8 and 8.0) are cached separately, so a bool rank is still rejected.
# Exceptions are never cached; NaN never equals itself, so it always misses and is re-checked.
_check_run_args_cached = functools.lru_cache(maxsize=64, typed=True)(_check_run_args)
_bound_parts_cached = functools.lru_cache(maxsize=256)(
    lambda r, k, n, constants: scalar_bound_parts(
        rank=r, n_scheduled=k, n_clients=n, constants=constants
    )
)


def solve_slot(
    *,
    queue: float,
    V: float,
    snr: ArrayLike,
    rank: int,
    n_clients: int,
    params_per_rank: float,
    bits_per_value: float,
    bandwidth_hz: float,
    o_min: float,
    constants: BoundConstants,
    method: str = "exact",
    cvxpy_problem: object | None = None,
    energy_price_jw: float = 0.0,
) -> SlotSolution:
    """Solve the per-slot problem P3 (eq. 29) with the equal-delay shares of eq. (31).

    D^t(O) = v O r p sum_{j in K} 1 / (B log2(1 + SNR_j)) and the decision minimises
    Q^t D^t(O) + V gamma^t(O) over O in [O_min, 1]; with an energy price Pi^t it minimises
    (Q^t + Pi^t) D^t(O) + V gamma^t(O), the energy-budget extension (E2) of
    :mod:`optim.energy_queue` (each scheduled client k spends E_comp,k + P_k D^t(O)).

    Args:
        queue: virtual queue Q^t [s], >= 0 (eq. 21).
        V: Lyapunov penalty weight, >= 0 (eq. 24); larger V favours a smaller bound.
        snr: (K,) linear SNRs of the K scheduled clients, finite and > 0; K <= n_clients.
        rank: LoRA rank r, integer in [1, constants.r_max].
        n_clients: N, the population size (enters gamma^t through N/K).
        params_per_rank: p = sum_l (d_l + l_l) over the adapted layers [values per unit rank].
        bits_per_value: v [bit] per transmitted value.
        bandwidth_hz: total uplink band B [Hz] shared by the scheduled clients.
        o_min: O_min in (0, 1).
        constants: the Theorem 1 constants.
        method: ``"exact"`` (monotone Newton, :func:`optim.p3.solve_p3_exact`) or ``"cvxpy"``
            (DPP problem re-solved with CLARABEL, falling back to exact if not optimal).
        cvxpy_problem: a :class:`optim.p3_cvxpy.P3CvxpyProblem` to re-use instead of the
            module-level one (the controller keeps its own).
        energy_price_jw: Pi^t = sum_{k in K} Z_k^t P_k >= 0 [J·W], the energy queues [J] times
            the scheduled clients' transmit powers [W] (:meth:`optim.EnergyQueues.price`); it
            adds to Q^t [s] as plain numbers (the Lyapunov function weighs 1 J like 1 s).
            0 (default): P3 exactly as in the paper.

    Returns:
        :class:`SlotSolution` (``queue_after`` is ``None``).

    Raises:
        ValueError: any argument out of range; an SNR <= 0 (infinite delay) among the scheduled.
    """
    r, n, p, v, bw, omin = check_slot_config(
        rank=rank,
        n_clients=n_clients,
        params_per_rank=params_per_rank,
        bits_per_value=bits_per_value,
        bandwidth_hz=bandwidth_hz,
        o_min=o_min,
        constants=constants,
        method=method,
    )
    q = check_real("queue", queue, low=0.0)
    vv = check_real("V", V, low=0.0)
    price = check_real("energy_price_jw", energy_price_jw, low=0.0)
    s = check_snr("snr", snr)
    k = s.size
    if k > n:
        raise ValueError(f"len(snr) (K) must be <= n_clients={n}; got K={k}")
    return _solve_checked(q, vv, s, r, n, p, v, bw, omin, constants, method, cvxpy_problem, price)


def _solve_checked(
    q: float,
    V: float,
    s: NDArray[np.float64],
    r: int,
    n: int,
    p: float,
    v: float,
    bw: float,
    omin: float,
    constants: BoundConstants,
    method: str,
    cvxpy_problem: object | None,
    energy_price_jw: float = 0.0,
) -> SlotSolution:
    k = s.size
    sum_inv = float((1.0 / spectral_efficiency(s)).sum())  # sum_j 1 / log2(1 + SNR_j)
    shares = equal_delay_shares(s)  # eq. (31)
    # D^t(O) = c O with c = v r p sum_j 1 / (B log2(1 + SNR_j)) [s]: linear in O (docs/solvers.md).
    c = v * r * p * sum_inv / bw
    offset, a = _bound_parts_cached(r, k, n, constants)  # eq. (14) split, memoised per K
    return _solve_affine(
        q, V, c, 0.0, offset, a, omin, method, cvxpy_problem, energy_price_jw, shares
    )


def _solve_affine(
    q: float,
    V: float,
    c: float,
    c0: float,
    offset: float,
    a: float,
    omin: float,
    method: str,
    cvxpy_problem: object | None,
    energy_price_jw: float,
    shares: NDArray[np.float64],
) -> SlotSolution:
    """P3 with D(O) = c0 + c O and gamma(O) = offset + a (1 - O)^2 / O^4 (validated inputs)."""
    # (Q + Pi) D(O) = (Q c + Pi c) O + const: the energy price only raises the linear coefficient
    # (eq. E2, optim/energy_queue.py); Pi = 0 adds an exact 0.0, so the paper's P3 is unchanged.
    # c0 is a constant of the objective: it moves D^t, never the optimal O.
    qc = q * c + energy_price_jw * c
    o, used, fallbacks = SLOT_METHODS[method](qc, V * a, omin, cvxpy_problem)
    fallbacks = int(fallbacks)
    delay = c0 + c * o  # c0 = 0.0 adds an exact 0.0: D^t = c O, as in the paper
    bound = offset + a * (1.0 - o) ** 2 / o**4  # gamma^t, eq. (14)
    return SlotSolution(
        sparsification=o,
        shares=shares,
        delay_s=delay,
        bound=bound,
        objective=q * delay + V * bound + energy_price_jw * delay,  # eq. (29a), (E2)
        method=used,
        fell_back=fallbacks > 0 and used != method,
        queue_before=q,
        fallbacks=fallbacks,
        energy_price_jw=energy_price_jw,
    )


def solve_affine_slot(
    *,
    queue: float,
    V: float,
    delay_per_ratio_s: float,
    fixed_delay_s: float = 0.0,
    offset: float,
    a: float,
    o_min: float,
    shares: ArrayLike,
    method: str = "exact",
    cvxpy_problem: object | None = None,
    energy_price_jw: float = 0.0,
) -> SlotSolution:
    """P3 for any payload affine in the ratio: minimise (Q^t + Pi^t) D(O) + V gamma(O).

    The generalisation of :func:`solve_slot` that the planners of other algorithms use: with
    bandwidth shares under which every scheduled client finishes together (eq. 31 for equal
    payloads, shares in proportion to bits / log2(1 + SNR_k) otherwise), the round's delay is
    D(O) = c0 + c O, c = sum_k v n_k / (B log2(1 + SNR_k)) over the values n_k the ratio
    scales and c0 the same sum over the values always sent; and any penalty of eq. (14)'s form
    gamma(O) = offset + a (1 - O)^2 / O^4 keeps P3 convex (docs/solvers.md).

    Args:
        queue: Q^t [s], >= 0.
        V: penalty weight, >= 0.
        delay_per_ratio_s: c [s], >= 0.
        fixed_delay_s: c0 [s], >= 0 (a constant of the objective: it moves D^t, not O^t).
        offset: the O-independent part of the penalty.
        a: the weight of (1 - O)^2 / O^4 in the penalty, >= 0.
        o_min: O_min in (0, 1).
        shares: (K,) the bandwidth shares (returned as they are).
        method: ``"exact"`` or ``"cvxpy"`` (as :func:`solve_slot`).
        cvxpy_problem: a :class:`optim.p3_cvxpy.P3CvxpyProblem` to re-use.
        energy_price_jw: Pi^t >= 0 [J W] (:func:`solve_slot`).

    Returns:
        :class:`SlotSolution` (``delay_s`` = c0 + c O^t, ``bound`` = gamma(O^t)).
    """
    if not isinstance(method, str) or method not in SLOT_METHODS:
        raise ValueError(f"method must be one of {sorted(SLOT_METHODS)}; got {method!r}")
    return _solve_affine(
        check_real("queue", queue, low=0.0),
        check_real("V", V, low=0.0),
        check_real("delay_per_ratio_s", delay_per_ratio_s, low=0.0),
        check_real("fixed_delay_s", fixed_delay_s, low=0.0),
        check_real("offset", offset),
        check_real("a", a, low=0.0),
        check_real("o_min", o_min, low=0.0, high=1.0, low_open=True, high_open=True),
        method,
        cvxpy_problem,
        check_real("energy_price_jw", energy_price_jw, low=0.0),
        np.asarray(shares, dtype=np.float64),
    )
