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
1-D problem in t, the root of its closed-form slope (:func:`optim.joint_client.split_slope`, all
clients at once), with the share in closed form (Lambert W). The certificate is the duality
gap: the primal energy at the feasible side of the bracket minus the best dual value
sum_k phi_k(lambda) - lambda of its two ends.

Baselines (:data:`ENERGY_MIN_METHODS`), the same problem with one block fixed: ``equal_bandwidth``
(b_k = 1/K), ``max_power`` (p_k = p_max,k), ``max_frequency`` (f_k = f_max,k).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from optim._validation import check_nonneg_array, check_real
from optim.joint_client import (
    ClientBlock,
    golden_min,
    increasing_root,
    min_share,
    split_slope_and_curvature,
    split_value,
    upload_energy_j,
    upload_slope,
)

__all__ = [
    "ENERGY_MIN_METHODS",
    "DeadlineInfeasibleError",
    "EnergyMinSolution",
    "client_block",
    "min_feasible_deadline_s",
    "solve_energy_min",
]

ENERGY_MIN_METHODS = ("joint", "equal_bandwidth", "max_power", "max_frequency")
_BISECT_STEPS = 200
_LOG_PRICE_TOL = 1e-13
_EPS = np.finfo(float).eps
LN2 = math.log(2.0)
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
    by Brent's method and returned on its feasible side; with equal shares, max_k of each
    client's own least time at b = 1/K.
    """
    from scipy.optimize import brentq  # noqa: PLC0415 - 0.3 s at start-up

    tau = block.fastest_compute_s()
    if method == "equal_bandwidth":
        share = np.full(tau.size, 1.0 / tau.size)
        return float(np.max(tau + _max_power_upload_s(block, share)))
    lo = float(np.max(tau + np.where(block.bits > 0.0, block.upload_floor_s(), 0.0)))
    if not np.any(block.bits > 0.0):
        return lo

    def total_share(deadline: float) -> float:
        shares = min_share(
            block.bits, deadline - tau, block.p_max_w, block.snr_per_w, block.bandwidth_hz
        )
        return float(np.sum(shares))

    if total_share(lo) <= 1.0:  # the slowest client's floor decides
        return lo
    hi = 2.0 * lo + 1e-12
    while total_share(hi) > 1.0:
        lo, hi = hi, 2.0 * hi
    root = brentq(
        lambda d: 1.0 - 1.0 / total_share(d),
        lo,
        hi,  # finite at the floor (inf)
        xtol=1e-300,
        rtol=4 * _EPS,
    )
    for _ in range(_BISECT_STEPS):  # the feasible side of the root: sum_k b_min,k <= 1
        if total_share(root) <= 1.0:
            return root
        root = math.nextafter(root, math.inf) * (1.0 + _EPS)
    return hi  # pragma: no cover - hi is feasible


def least_time_solution(
    block: ClientBlock, deadline_s: float, weight: _FloatArray
) -> EnergyMinSolution:
    """Full power, f_max and the least shares for ``deadline_s`` (feasible from the least round
    time on; price nan: not priced, gap nan: not certified)."""
    upload = np.where(block.bits > 0.0, deadline_s - block.fastest_compute_s(), 1.0)
    share = min_share(block.bits, upload, block.p_max_w, block.snr_per_w, block.bandwidth_hz)
    return _solution(block, deadline_s, upload, upload * share, weight, math.nan, math.nan)


def _least_shares_fit(block: ClientBlock, deadline_s: float) -> bool:
    """Whether full power and f_max finish by ``deadline_s`` on shares summing to <= 1."""
    upload = deadline_s - block.fastest_compute_s()
    if np.any(upload < 0.0) or np.any(upload[block.bits > 0.0] <= 0.0):  # compute alone too slow
        return False
    shares = min_share(block.bits, upload, block.p_max_w, block.snr_per_w, block.bandwidth_hz)
    return float(np.sum(shares)) <= 1.0


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
    """
    if not (method != "equal_bandwidth" and _least_shares_fit(block, deadline_s * (1.0 + 1e-12))):
        least = min_feasible_deadline_s(block, method)
        if deadline_s < least * (1.0 - 1e-12):
            raise DeadlineInfeasibleError(deadline_s, least, method)
    if method == "equal_bandwidth":
        share = np.full(block.bits.size, 1.0 / block.bits.size)
        upload = _equal_share_upload_s(block, deadline_s, share, weight)
        return _solution(block, deadline_s, upload, share * upload, weight, math.nan, 0.0)
    per_client = _MAX_POWER if method == "max_power" else _priced(method == "joint")
    return _search_price(block, deadline_s, weight, per_client, price_hint, gap_rtol, upload_hint)


# --- per-client solvers at a bandwidth price: (block, T, price, weight, t guess) -> (t, y, value)

_PerClient = Callable[
    [ClientBlock, float, float, _FloatArray, "_FloatArray | None"],
    tuple[_FloatArray, _FloatArray, _FloatArray],
]


def upload_range_s(block: ClientBlock, deadline_s: float) -> tuple[_FloatArray, _FloatArray]:
    """(K,) least and greatest upload time [s] at round time ``deadline_s``: compute at f_min
    (or the upload floor, if later) and at f_max."""
    hi = deadline_s - block.fastest_compute_s()
    lo = np.maximum(deadline_s - block.slowest_compute_s(), block.upload_floor_s() * (1 + 1e-9))
    return np.minimum(lo, hi), hi


def priced_split(
    block: ClientBlock,
    deadline_s: float,
    price: float,
    weight: _FloatArray,
    guess: _FloatArray | None = None,
) -> tuple[_FloatArray, _FloatArray, _FloatArray]:
    """(upload time t [s], product y [s], value) of every client at bandwidth price ``price``:
    the root of the slope of :func:`optim.joint_client.split_value` in t (it is convex), all
    clients at once, from ``guess`` (the split at a neighbouring price or deadline) if given."""
    lo, hi = upload_range_s(block, deadline_s)
    upload = increasing_root(
        lambda t: split_slope_and_curvature(block, deadline_s, t, price, weight),
        lo,
        hi,
        guess=guess,
    )
    value, y = split_value(block, deadline_s, upload, price, weight)
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
    lo, _ = upload_range_s(block, deadline_s)
    floor_bound = (upload_s <= lo) & (lo > deadline_s - block.slowest_compute_s())
    compute_s = deadline_s - upload_s
    with np.errstate(divide="ignore", invalid="ignore"):
        compute = -2.0 * weight * block.kappa * block.cycles**3 / compute_s**3
    upload = upload_slope(block, upload_s, price, weight)
    return float(np.sum(np.where(floor_bound & (block.cycles > 0.0), compute, upload)))


def _priced(free_split: bool) -> _PerClient:
    if free_split:
        return priced_split

    def per_client(block, deadline_s, price, weight, guess=None):
        upload = upload_range_s(block, deadline_s)[1]  # compute at f_max, upload the rest
        value, y = split_value(block, deadline_s, upload, price, weight)
        return upload, y, value

    return per_client


def _max_power_upload_s(block: ClientBlock, share: _FloatArray) -> _FloatArray:
    """Upload time at p_max on ``share``: s / (b B log2(1 + p_max snr / b)) [s]."""
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = share * block.bandwidth_hz * np.log2(1.0 + block.p_max_w * block.snr_per_w / share)
        return np.where(block.bits > 0.0, block.bits / rate, 0.0)


def _max_power_value(block, deadline_s, share, price, weight):
    upload = _max_power_upload_s(block, share)
    compute = np.minimum(deadline_s - upload, block.slowest_compute_s())
    energy = block.compute_energy_j(compute) + block.p_max_w * upload
    return weight * energy + price * share, upload


def _max_power_client(block, deadline_s, price, weight, guess=None):
    tau = block.fastest_compute_s()
    lo = min_share(block.bits, deadline_s - tau, block.p_max_w, block.snr_per_w, block.bandwidth_hz)
    start = _max_power_value(block, deadline_s, lo, price, weight)[0]
    hi = lo + start / price + 1e-300
    share = golden_min(lambda b: _max_power_value(block, deadline_s, b, price, weight)[0], lo, hi)
    share = np.where(block.bits > 0.0, share, 0.0)
    value, upload = _max_power_value(block, deadline_s, share, price, weight)
    return upload, upload * share, value


_MAX_POWER: _PerClient = _max_power_client


def _equal_share_upload_s(block, deadline_s, share, weight) -> _FloatArray:
    tau_max = block.slowest_compute_s()
    hi = deadline_s - block.fastest_compute_s()
    lo = np.minimum(np.maximum(deadline_s - tau_max, _max_power_upload_s(block, share)), hi)

    def energy(t):
        return block.compute_energy_j(deadline_s - t) + upload_energy_j(
            block.bits, t * share, block.snr_per_w, block.bandwidth_hz
        )

    return golden_min(energy, lo, hi)


def _search_price(
    block,
    deadline_s,
    weight,
    per_client: _PerClient,
    price_hint: float | None,
    gap_rtol: float,
    upload_hint: _FloatArray | None = None,
) -> EnergyMinSolution:
    """The bandwidth price lambda: sum_k b_k(lambda) = y_k / t_k falls as lambda rises.

    The root of sum_k b_k = 1 in log lambda is bracketed outwards from the hint (steps doubling
    from 2 %, or from ln 2 without one) and closed by Illinois false position until the duality
    gap (primal at the feasible end minus the better dual value of the two ends) is below
    ``gap_rtol`` of the energy.
    """
    if not np.any(weight > 0.0):  # energy is free: every client takes its least share
        upload, y, _ = per_client(block, deadline_s, 1.0, weight, None)
        return _solution(block, deadline_s, upload, y, weight, 0.0, 0.0)
    if not np.any((weight > 0.0) & (block.bits > 0.0)):  # the band is never scarce: price 0
        upload, y, _ = per_client(block, deadline_s, 0.0, weight, None)
        return _solution(block, deadline_s, upload, y, weight, 0.0, 0.0)
    scale = float(np.sum(weight * block.p_max_w * deadline_s))
    seen: dict[float, tuple[float, tuple]] = {}
    last_upload = [upload_hint]  # each client's split at the last price: the next starts there

    def excess(u: float) -> float:
        if u not in seen:
            guess = last_upload[0]
            upload, y, value = per_client(block, deadline_s, math.exp(u), weight, guess)
            last_upload[0] = upload
            with np.errstate(invalid="ignore", divide="ignore"):
                b = np.where(block.bits > 0.0, y / upload, 0.0)
            seen[u] = (float(np.sum(b)) - 1.0, (upload, y, float(np.sum(value))))
        return seen[u][0]

    hinted = price_hint is not None and math.isfinite(price_hint) and price_hint > 0.0
    u = math.log(price_hint if hinted else scale)  # type: ignore[arg-type]
    step = 0.02 if hinted else LN2
    direction = 1.0 if excess(u) > 0.0 else -1.0  # towards the root
    for _ in range(_BISECT_STEPS):
        if (excess(u + direction * step) > 0.0) != (direction > 0.0):
            break
        u, step = u + direction * step, 2.0 * step
    else:  # pragma: no cover - T >= the least round time, so a high enough price fits
        raise DeadlineInfeasibleError(deadline_s, min_feasible_deadline_s(block), "joint")
    u_lo, u_hi = sorted((u, u + direction * step))
    f_lo, f_hi = excess(u_lo), excess(u_hi)
    side, repeats = 0, 0
    for _ in range(_BISECT_STEPS):
        if (
            _gap(seen, u_lo, u_hi) <= gap_rtol * _primal(seen, u_hi)
            or u_hi - u_lo <= _LOG_PRICE_TOL
        ):
            break
        x = (u_lo * f_hi - u_hi * f_lo) / (f_hi - f_lo)  # f_lo, f_hi: Illinois' working values
        if repeats >= 2 or not u_lo < x < u_hi:  # a bisection step when one end stalls
            x = 0.5 * (u_lo + u_hi)
        f_x = excess(x)
        new_side = -1 if f_x > 0.0 else 1  # -1: x is below the root
        repeats = repeats + 1 if new_side == side else 0
        if new_side < 0:
            u_lo, f_lo = x, f_x
            f_hi = 0.5 * f_hi if side < 0 else f_hi  # Illinois: an end kept twice
        else:
            u_hi, f_hi = x, f_x
            f_lo = 0.5 * f_lo if side > 0 else f_lo
        side = new_side
    upload, y, _ = seen[u_hi][1]
    primal = _solution(block, deadline_s, upload, y, weight, math.exp(u_hi), 0.0)
    dual = max(_dual(seen, u_lo), _dual(seen, u_hi))
    return _with_gap(primal, max(primal.objective - dual, 0.0))


def _dual(seen: dict, u: float) -> float:
    """The dual value sum_k phi_k(lambda) - lambda at lambda = e^u."""
    return seen[u][1][2] - math.exp(u)


def _primal(seen: dict, u: float) -> float:
    """The weighted energy at lambda = e^u: sum_k phi_k - lambda sum_k b_k."""
    return seen[u][1][2] - math.exp(u) * (seen[u][0] + 1.0)


def _gap(seen: dict, u_lo: float, u_hi: float) -> float:
    """Primal energy at the feasible end minus the best dual value of the two ends."""
    return _primal(seen, u_hi) - max(_dual(seen, u_lo), _dual(seen, u_hi))


def _with_gap(sol: EnergyMinSolution, gap: float) -> EnergyMinSolution:
    fields = {name: getattr(sol, name) for name in EnergyMinSolution.__slots__}
    fields["gap"] = gap
    return EnergyMinSolution(**fields)


def _solution(block, deadline_s, upload, product, weight, price, gap) -> EnergyMinSolution:
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(block.bits > 0.0, product / upload, 0.0)
        up_energy = upload_energy_j(block.bits, product, block.snr_per_w, block.bandwidth_hz)
        power = np.where(block.bits > 0.0, up_energy / upload, 0.0)
    compute = np.clip(deadline_s - upload, block.fastest_compute_s(), block.slowest_compute_s())
    idle = np.clip(deadline_s, block.fastest_compute_s(), block.slowest_compute_s())
    compute = np.where(block.bits > 0.0, compute, idle)  # no upload: compute all round
    with np.errstate(invalid="ignore", divide="ignore"):
        freq = np.where(block.cycles > 0.0, block.cycles / compute, block.f_max_hz)
    cmp_energy = block.compute_energy_j(compute)
    energy = cmp_energy + up_energy
    upload = np.where(block.bits > 0.0, upload, 0.0)
    return EnergyMinSolution(
        power_w=power,
        frequency_hz=freq,
        share=share,
        compute_s=compute,
        upload_s=upload,
        compute_energy_j=cmp_energy,
        upload_energy_j=up_energy,
        round_s=float(np.max(compute + upload)),
        energy_j=float(np.sum(energy)),
        objective=float(np.sum(weight * energy)),
        price=price,
        gap=gap,
    )
