"""Least round energy under a completion-time limit, and the three baselines (docs/solvers.md,
"Joint power, frequency, bandwidth and ratio").

The per-round problem of Yang et al., "Energy Efficient Federated Learning Over Wireless
Communication Networks" (Z. Yang, M. Chen, W. Saad, C. S. Hong, M. Shikh-Bahaei, IEEE TWC 2021,
arXiv:1911.02417), at a fixed payload s_k:

    minimise_{p, f, b}  sum_k w_k (kappa_k C_k f_k^2 + p_k t_k)
    s.t.  C_k / f_k + t_k <= T,  t_k = s_k / (b_k B log2(1 + p_k snr_k / b_k)),
          sum_k b_k <= 1,  0 < p_k <= p_max,k,  f_min,k <= f_k <= f_max,k.

With y_k = t_k b_k the upload energy is the convex decreasing E_up(y_k) of
:mod:`optim.joint_client` (J1), jointly convex in (t_k, b_k), and the compute energy is
kappa C^3 / tau^2 with tau = T - t (every client uses the whole round: both energies fall with
time). The coupling sum_k b_k <= 1 takes a price lambda, the root of the decreasing
sum_k b_k(lambda) - 1 in log lambda (Illinois false position); each client then solves a convex
1-D problem in t, the root of its closed-form slope (:func:`optim.joint_client.split_slope`),
with the share in closed form (Lambert W). The certificate is the duality gap: the primal
energy at the feasible side of the bracket minus the best dual value
sum_k phi_k(lambda) - lambda of its two ends. The searches run compiled
(:mod:`optim.joint_kernel`); this module validates and assembles.

Baselines (:data:`ENERGY_MIN_METHODS`), the same problem with one block fixed: ``equal_bandwidth``
(b_k = 1/K), ``max_power`` (p_k = p_max,k), ``max_frequency`` (f_k = f_max,k).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from optim._validation import check_nonneg_array, check_real
from optim.joint_client import ClientBlock, column, kernel

__all__ = [
    "ENERGY_MIN_METHODS",
    "DeadlineInfeasibleError",
    "EnergyMinSolution",
    "client_block",
    "min_feasible_deadline_s",
    "solve_energy_min",
]

ENERGY_MIN_METHODS = ("joint", "equal_bandwidth", "max_power", "max_frequency")
_FloatArray = NDArray[np.float64]


class DeadlineInfeasibleError(ValueError):
    """The completion-time limit is below the least achievable round time."""

    def __init__(self, deadline_s: float, min_deadline_s: float, method: str) -> None:
        super().__init__(
            f"deadline_s = {deadline_s!r} is infeasible for method {method!r}: the least "
            f"achievable round time is {min_deadline_s!r} s"
        )
        self.min_deadline_s = min_deadline_s


@dataclass(frozen=True, slots=True, eq=False)
class EnergyMinSolution:
    """Decisions and costs of one round, arrays of shape (K,).

    Attributes:
        power_w: p_k [W]. frequency_hz: f_k [Hz]. share: b_k (sum <= 1).
        compute_s, upload_s: C_k / f_k and the upload time [s].
        compute_energy_j, upload_energy_j: kappa C f^2 and p t [J].
        round_s: max_k (compute + upload) [s].
        energy_j: sum_k (compute + upload energy) [J] (unweighted).
        objective: sum_k w_k (compute + upload energy) [J].
        price: lambda, the bandwidth price [J per unit share] (nan when not priced).
        gap: duality gap certificate [J] (0 when no coupling is dualised).
    """

    power_w: _FloatArray
    frequency_hz: _FloatArray
    share: _FloatArray
    compute_s: _FloatArray
    upload_s: _FloatArray
    compute_energy_j: _FloatArray
    upload_energy_j: _FloatArray
    round_s: float
    energy_j: float
    objective: float
    price: float
    gap: float


def client_block(
    *,
    bits: ArrayLike,
    cycles: ArrayLike,
    snr_per_w: ArrayLike,
    f_min_hz: ArrayLike,
    f_max_hz: ArrayLike,
    kappa: ArrayLike,
    p_max_w: ArrayLike,
    bandwidth_hz: float,
) -> ClientBlock:
    """Validate the (K,) per-client inputs (scalars broadcast) into a :class:`ClientBlock`."""
    s = check_nonneg_array("bits", np.atleast_1d(np.asarray(bits, dtype=float)))
    k = s.size

    def arr(name: str, value: ArrayLike, positive: bool) -> _FloatArray:
        out = check_nonneg_array(name, np.broadcast_to(np.asarray(value, dtype=float), (k,)))
        if positive and out.min() <= 0.0:
            raise ValueError(f"{name} must hold values > 0; got {out.min()!r}")
        return np.array(out)

    block = ClientBlock(
        bits=s,
        cycles=arr("cycles", cycles, False),
        snr_per_w=arr("snr_per_w", snr_per_w, True),
        f_min_hz=arr("f_min_hz", f_min_hz, True),
        f_max_hz=arr("f_max_hz", f_max_hz, True),
        kappa=arr("kappa", kappa, False),
        p_max_w=arr("p_max_w", p_max_w, True),
        bandwidth_hz=check_real("bandwidth_hz", bandwidth_hz, low=0.0, low_open=True),
    )
    if np.any(block.f_min_hz > block.f_max_hz):
        raise ValueError("f_min_hz must be <= f_max_hz for every client")
    return block


def min_feasible_deadline_s(block: ClientBlock, method: str = "joint") -> float:
    """The least round time T any decision of ``method`` achieves [s].

    Fastest CPU and full power: sum_k b_min,k(T - C_k / f_max,k) <= 1 (decreasing in T), found
    by bisection to adjacent floats and returned on its feasible side; with equal shares,
    max_k of each client's own least time at b = 1/K.
    """
    return float(
        kernel().min_feasible_deadline(block.table, block.bandwidth_hz, method == "equal_bandwidth")
    )


def least_time_solution(
    block: ClientBlock, deadline_s: float, weight: _FloatArray
) -> EnergyMinSolution:
    """Full power, f_max and the least shares for ``deadline_s`` (feasible from the least round
    time on; price nan: not priced, gap nan: not certified)."""
    upload, product = np.empty(block.bits.size), np.empty(block.bits.size)
    kernel().least_time_split(block.table, block.bandwidth_hz, deadline_s, upload, product)
    return _solution(block, deadline_s, upload, product, weight, math.nan, math.nan)


def solve_energy_min(
    *,
    deadline_s: float,
    method: str = "joint",
    weight: ArrayLike = 1.0,
    **clients: ArrayLike,
) -> EnergyMinSolution:
    """Least weighted round energy under the completion-time limit ``deadline_s`` [s].

    Args:
        deadline_s: T > 0 [s].
        method: one of :data:`ENERGY_MIN_METHODS`.
        weight: (K,) or scalar w_k >= 0 on each client's energy (1: Yang et al.'s sum).
        **clients: the arguments of :func:`client_block` (bits, cycles, snr_per_w, f_min_hz,
            f_max_hz, kappa, p_max_w, bandwidth_hz).

    Raises:
        DeadlineInfeasibleError: T below :func:`min_feasible_deadline_s` (the message names it).
        ValueError: an unknown method or malformed inputs.
    """
    if method not in ENERGY_MIN_METHODS:
        raise ValueError(f"method must be one of {ENERGY_MIN_METHODS}; got {method!r}")
    block = client_block(**clients)  # type: ignore[arg-type]
    t_round = check_real("deadline_s", deadline_s, low=0.0, low_open=True)
    w = check_nonneg_array("weight", np.broadcast_to(np.asarray(weight, float), block.bits.shape))
    return solve_block(block, t_round, np.array(w), method)


def solve_block(
    block: ClientBlock,
    deadline_s: float,
    weight: _FloatArray,
    method: str,
    price_hint: float | None = None,
    gap_rtol: float = 1e-10,
    upload_hint: _FloatArray | None = None,
) -> EnergyMinSolution:
    """:func:`solve_energy_min` on a validated block (the joint step calls it per deadline).

    ``price_hint``: a bandwidth price near the answer (a neighbouring deadline's), to start the
    bracket from, and ``upload_hint`` (K,) the splits there [s], to start each client's root
    from. ``gap_rtol``: the price search stops at a duality gap below this share of the
    energy (the default certifies; a loose one gives a starting price).

    The price lambda: sum_k b_k(lambda) = y_k / t_k falls as lambda rises. The root of
    sum_k b_k = 1 in log lambda is bracketed outwards from the hint (steps doubling from 2 %,
    or from ln 2 without one) and closed by Illinois false position until the duality gap
    (primal at the feasible end minus the better dual value of the two ends) is below
    ``gap_rtol`` of the energy. At a price each client's split is, by method: ``joint`` the
    root of its slope (:func:`optim.joint_client.split_slope`, Newton's method safeguarded by
    the bracket of the points seen), ``max_frequency`` compute at f_max and upload the rest,
    ``max_power`` the share at p_max of least value by golden section; ``equal_bandwidth``
    takes b_k = 1/K and each upload time by golden section (no price).
    """
    kn, weight = kernel(), column(weight)
    fits = kn.least_shares_fit(block.table, block.bandwidth_hz, deadline_s * (1.0 + 1e-12))
    if not (method != "equal_bandwidth" and fits):
        least = min_feasible_deadline_s(block, method)
        if deadline_s < least * (1.0 - 1e-12):
            raise DeadlineInfeasibleError(deadline_s, least, method)
    if method == "equal_bandwidth":
        share = np.full(block.bits.size, 1.0 / block.bits.size)
        upload = np.empty(block.bits.size)
        kn.equal_share_upload(block.table, block.bandwidth_hz, deadline_s, share, upload)
        return _solution(block, deadline_s, upload, share * upload, weight, math.nan, 0.0)
    mode = {"joint": kn.JOINT, "max_frequency": kn.MAX_FREQUENCY, "max_power": kn.MAX_POWER}
    hint = upload_hint is not None
    ok, price, gap, upload, product = kn.search_price(
        mode[method],
        block.table,
        block.bandwidth_hz,
        deadline_s,
        weight,
        math.nan if price_hint is None else float(price_hint),
        gap_rtol,
        column(upload_hint) if hint else block.bits,
        hint,
    )
    if not ok:  # pragma: no cover - T >= the least round time, so a high enough price fits
        raise DeadlineInfeasibleError(deadline_s, min_feasible_deadline_s(block), method)
    return _solution(block, deadline_s, upload, product, weight, price, gap)


def priced_split(
    block: ClientBlock,
    deadline_s: float,
    price: float,
    weight: _FloatArray,
    guess: _FloatArray | None = None,
) -> tuple[_FloatArray, _FloatArray, _FloatArray]:
    """(upload time t [s], product y [s], value) of every client, (K,) each, at bandwidth
    price ``price``: the root of the slope of :func:`optim.joint_client.split_value` in t (it
    is convex) on the client's range (compute at f_min, or the upload floor if later, to compute
    at f_max), from ``guess`` (the split at a neighbouring price or deadline) if given.

    Newton's method, safeguarded by the bracket of the points seen (at first the range, widened
    by 1e-11 of it so that an end can be tried and confirmed): a bisection step where Newton's
    leaves the bracket, meets a non-finite value, or did not halve |slope| on the same side of
    the root (as next to the infinite slope at the upload floor, where Newton's steps are tiny
    but the root is far); each Newton step goes one tolerance further, so that the bracket
    closes around the root.
    """
    k = block.bits.size
    upload, y, value = np.empty(k), np.empty(k), np.empty(k)
    start = block.bits if guess is None else column(guess)
    kernel().priced_split(
        block.table,
        block.bandwidth_hz,
        float(deadline_s),
        float(price),
        column(weight),
        start,
        guess is not None,
        upload,
        y,
        value,
    )
    return upload, y, value


def round_slope(
    block: ClientBlock,
    deadline_s: float,
    upload_s: _FloatArray,
    price: float,
    weight: _FloatArray,
) -> float:
    """dW/dD [J/s] of the least weighted energy at the round time ``deadline_s`` (J4, <= 0):
    sum_k h_k'(t_k) at the optimal price (the envelope theorem), except that a client whose
    upload sits at its floor below T - C/f_min (one without bits and T < C/f_min) gains from D
    through its compute time: -2 w kappa C^3 / tau^3."""
    return float(
        kernel().round_slope(
            block.table,
            block.bandwidth_hz,
            float(deadline_s),
            column(upload_s),
            float(price),
            column(weight),
        )
    )


def _solution(block, deadline_s, upload, product, weight, price, gap) -> EnergyMinSolution:
    """The decisions and costs at the splits ``upload`` [s] and products ``product`` [s]."""
    fields = np.empty((7, block.bits.size))
    round_s, energy_j, objective = kernel().solution_fields(
        block.table,
        block.bandwidth_hz,
        deadline_s,
        column(upload),
        column(product),
        column(weight),
        fields,
    )
    return EnergyMinSolution(*fields, float(round_s), float(energy_j), float(objective), price, gap)
