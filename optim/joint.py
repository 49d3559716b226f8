"""The joint Lyapunov step: ratio, transmit power, CPU frequency and bandwidth in one round
(docs/solvers.md, "Joint power, frequency, bandwidth and ratio"). The searches at a fixed ratio
run compiled (:mod:`optim.joint_kernel`, numba); the search over the ratio is scipy's.

    minimise  V gamma(O) + Q D + sum_k Z_k E_k                                          (J2)
    over O in [O_min, 1], p_k in (0, p_max,k], f_k in [f_min,k, f_max,k], b_k >= 0,
    s.t. sum_k b_k <= 1 and D >= C_k / f_k + bits_k(O) / rate_k for every k,

with bits_k(O) = fixed_bits_k + per_ratio_bits_k O, rate_k = b_k B log2(1 + p_k snr_k / b_k),
E_k = kappa_k C_k f_k^2 + p_k (upload time), gamma(O) = offset + a (1 - O)^2 / O^4 (eq. 14).

Structure. For fixed (O, D) the rest is the weighted energy problem of :mod:`optim.energy_min`
(weights Z_k, deadline D), convex and solved by a search on the bandwidth price with a duality
gap as certificate. Its optimal value W(O, D) is convex and decreasing in D (a partial minimum of
a jointly convex problem in which D enters only the linear constraints), with the slope
dW/dD = sum_k h_k'(t_k) of the envelope theorem (J4, :func:`optim.joint_client.upload_slope`),
so for fixed O the best D is the root of Q + dW/dD on [D_min(O), D_min(O) + E_least / Q] (beyond
that Q D alone exceeds the value of the least round time's own decisions, energy E_least). It
is found with the price by Newton's method on (log lambda, D) (:mod:`optim.joint_newton`),
warm-started from the previous ratio, and certified by a price search at its D; Brent's root of
the slope with a price search per D is the fallback. W is not jointly convex in (O, D) (docs),
so the outer search over O is a grid followed by bounded Brent around the best grid point: a
local refinement, checked against brute force in the tests. With ``ratio_rtol`` a branch and
bound on the monotone bound (J5) of :mod:`optim.joint_certificate` certifies it globally.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import ArrayLike, NDArray

from optim._validation import check_nonneg_array, check_real
from optim.energy_min import (
    EnergyMinSolution,
    client_block,
    least_time_solution,
    min_feasible_deadline_s,
    round_slope,
    solve_block,
)
from optim.joint_certificate import certify_ratio
from optim.joint_newton import newton_round

__all__ = ["JointSolution", "search_ratio", "solve_joint_step"]

_RATIO_GRID = 5
_XTOL = 1e-4  # relative; the objective errs at its square (a smooth minimum)
_D_RTOL = 1e-7  # relative bracket on D at which the root of the slope in D stops
_START_GAP_RTOL = 1e-3  # a price that restarts Newton's method need not be certified
_D_STEP = 0.02  # first step, relative, of the search for a bracket around the last best D
_D_SLACK = 1e-9  # relative: at the least round time itself every share is at its floor
# The first ratio's Newton starts from a crude price up to this K (at K = 10: 9 root solves for
# a fixed ratio instead of 17), from a loosely searched one above (at K = 1,000 Newton from the
# crude price takes 17 root solves, from the searched one 8, after the search's 9)
_CRUDE_START_MAX_K = 100
_START_INSIDE = 1e-3  # Newton's first D is at least this share of [D_min, D_max] from its ends
_FloatArray = NDArray[np.float64]


@dataclass(frozen=True, slots=True, eq=False)
class JointSolution:
    """The decisions of (J2) for K scheduled clients.

    Attributes:
        ratio: O in [O_min, 1] (1 when no client's payload depends on it).
        round_s: D, the slowest client's compute plus upload time [s].
        penalty: gamma(O).
        objective: V gamma(O) + Q D + sum_k Z_k E_k of (J2).
        clients: the per-client decisions and costs at (O, D) (:class:`EnergyMinSolution`:
            power_w, frequency_hz, share, times and energies, each (K,)).
        gap: duality gap of the inner bandwidth-price bisection [J-weighted units].
        ratio_gap: with ``ratio_rtol``, the objective minus a lower bound on (J2) over every
            O in [O_min, 1] (:func:`optim.joint_certificate.certify_ratio`, (J5)); NaN
            without it.
    """

    ratio: float
    round_s: float
    penalty: float
    objective: float
    clients: EnergyMinSolution
    gap: float
    ratio_gap: float = math.nan


def solve_joint_step(
    *,
    queue_s: float,
    V: float,
    energy_queue_j: ArrayLike,
    offset: float,
    a: float,
    o_min: float,
    fixed_bits: ArrayLike,
    per_ratio_bits: ArrayLike = 0.0,
    cycles: ArrayLike,
    snr_per_w: ArrayLike,
    f_min_hz: ArrayLike,
    f_max_hz: ArrayLike,
    kappa: ArrayLike,
    p_max_w: ArrayLike,
    bandwidth_hz: float,
    ratio_rtol: float | None = None,
) -> JointSolution:
    """Solve (J2) (module docstring) for one round.

    Args:
        queue_s: Q >= 0 [s] (must be > 0 when any Z_k > 0: energy falls without end as D grows).
        V: penalty weight >= 0.
        energy_queue_j: (K,) or scalar Z_k >= 0 [J].
        offset, a: gamma(O) = offset + a (1 - O)^2 / O^4, a >= 0.
        o_min: O_min in (0, 1].
        fixed_bits, per_ratio_bits: (K,) bits_k(O) = fixed + per_ratio O [bit], >= 0.
        cycles: (K,) C_k [cycle]. snr_per_w: (K,) g_k / (N0 B) [1/W].
        f_min_hz, f_max_hz: (K,) CPU range [Hz]. kappa: (K,) [J/(cycle Hz^2)].
        p_max_w: (K,) [W]. bandwidth_hz: B [Hz].
        ratio_rtol: None (default): the ratio search alone. A number > 0: then certify the
            ratio globally by branch and bound on (J5) until the gap is at most ratio_rtol
            times the objective (or 200 ratios are solved), and take its best ratio
            (``JointSolution.ratio_gap``).

    Returns:
        :class:`JointSolution`.
    """
    from scipy.optimize import brentq  # noqa: PLC0415 - 0.3 s at start-up

    q = check_real("queue_s", queue_s, low=0.0)
    v = check_real("V", V, low=0.0)
    omin = check_real("o_min", o_min, low=0.0, high=1.0, low_open=True)
    off = check_real("offset", offset)
    a_coef = check_real("a", a, low=0.0)
    fixed = check_nonneg_array("fixed_bits", np.atleast_1d(np.asarray(fixed_bits, float)))
    k = fixed.size
    per = check_nonneg_array(
        "per_ratio_bits", np.broadcast_to(np.asarray(per_ratio_bits, float), (k,))
    )
    z = check_nonneg_array(
        "energy_queue_j", np.broadcast_to(np.asarray(energy_queue_j, float), (k,))
    )
    z = np.array(z)
    if q == 0.0 and z.max() > 0.0:
        raise ValueError("queue_s must be > 0 when any energy_queue_j is > 0; got queue_s = 0.0")
    base = client_block(
        bits=fixed,
        cycles=cycles,
        snr_per_w=snr_per_w,
        f_min_hz=f_min_hz,
        f_max_hz=f_max_hz,
        kappa=kappa,
        p_max_w=p_max_w,
        bandwidth_hz=bandwidth_hz,
    )

    def penalty(o: float) -> float:
        return off + a_coef * (1.0 - o) ** 2 / o**4  # eq. (14)'s form

    seen: dict[float, tuple[float, float, EnergyMinSolution]] = {}

    def at_ratio(o: float) -> tuple[float, float, EnergyMinSolution]:
        """(objective, D, clients) of the best D for this O (each O solved once)."""
        if o not in seen:
            seen[o] = best_round(o)
        return seen[o]

    last_price = [None]  # warm starts: the price and the best D vary smoothly with D and O
    last_offset: list[float | None] = [None]  # the best D's height above D_min
    last_upload: list = [None]  # the clients' splits there: each root starts from them
    block_of: list = [None]  # the block of the ratio being solved, and its D_min

    def best_round(o: float) -> tuple[float, float, EnergyMinSolution]:
        block = replace(base, bits=fixed + per * o)  # validated: base's, bits >= 0
        d_min = min_feasible_deadline_s(block) * (1.0 + _D_SLACK)  # strictly feasible
        block_of[0] = (block, d_min)
        fixed_part = v * penalty(o)
        first = least_time_solution(block, d_min, z)  # feasible: W(d_min) <= its energy
        if z.max() == 0.0 or first.objective == 0.0:
            first = solve_block(block, d_min, z, "joint", last_price[0])
            return fixed_part + q * d_min + first.objective, d_min, first
        d_max = d_min + first.objective / q
        tried = {d_min: first}
        found = None
        if last_offset[0] is None:  # a first ratio: Newton from the middle of the range
            d_mid = math.sqrt(d_min * d_max)
            last_offset[0] = d_mid - d_min
            if k <= _CRUDE_START_MAX_K:  # from the price search's first price
                crude = float(np.sum(z * block.p_max_w)) * d_mid
                found = newton_round(block, z, q, (d_min, d_max), (d_mid, crude))
            if found is None:  # from the price at D_mid, searched to a loose gap
                started = solve_block(block, d_mid, z, "joint", gap_rtol=_START_GAP_RTOL)
                last_price[0], last_upload[0] = started.price, started.upload_s
        inside = _START_INSIDE * (d_max - d_min)  # Newton starts strictly inside the range
        d_start = d_min + min(max(last_offset[0], inside), d_max - d_min - inside)
        if found is None and last_price[0] is not None:
            start = (d_start, last_price[0])
            found = newton_round(block, z, q, (d_min, d_max), start, last_upload[0])
        if found is not None:  # certified by the price search at this D
            tried[found[0]] = solve_block(
                block, found[0], z, "joint", found[1], upload_hint=found[2]
            )
            return finish(tried, fixed_part)

        def slope(key: float) -> float:
            """Q + dW/dD = Q + sum_k h_k'(t_k) (the envelope theorem, docs), increasing in D."""
            if key not in tried or math.isnan(tried[key].price):  # D_min's candidate: price it
                tried[key] = solve_block(
                    block, key, z, "joint", last_price[0], upload_hint=last_upload[0]
                )
                last_price[0], last_upload[0] = tried[key].price, tried[key].upload_s
            sol = tried[key]
            return max(q + round_slope(block, key, sol.upload_s, sol.price, z), -1e300)

        lo, hi = _bracket_root(slope, d_min, d_max, d_start)
        if lo < hi:
            brentq(slope, lo, hi, xtol=_D_RTOL * d_max, rtol=_D_RTOL)
        return finish(tried, fixed_part)

    def finish(tried: dict, fixed_part: float) -> tuple[float, float, EnergyMinSolution]:
        """The best of the round times tried; it warm-starts the next ratio."""
        d_best = min(tried, key=lambda d: q * d + tried[d].objective)
        block, d_min = block_of[0]
        if math.isnan(tried[d_best].price):  # the least round time: certify it too
            tried[d_best] = solve_block(
                block, d_best, z, "joint", last_price[0], upload_hint=last_upload[0]
            )
        last_offset[0], last_price[0] = d_best - d_min, tried[d_best].price
        last_upload[0] = tried[d_best].upload_s
        best = tried[d_best]
        return fixed_part + q * d_best + best.objective, d_best, best

    o_low = omin if per.max() > 0.0 else 1.0
    o_best = search_ratio(lambda o: at_ratio(o)[0], o_low)
    ratio_gap = math.nan
    if ratio_rtol is not None:
        rtol = check_real("ratio_rtol", ratio_rtol, low=0.0, low_open=True)
        grid = [float(o) for o in np.linspace(o_low, 1.0, _RATIO_GRID)] if o_low < 1.0 else []
        found = certify_ratio(
            lambda o: at_ratio(o)[0] - v * penalty(o), penalty, v, [*grid, o_best, 1.0], rtol
        )
        o_best, ratio_gap = found.ratio, found.gap
    objective, d_best, clients = at_ratio(o_best)
    return JointSolution(
        ratio=o_best,
        round_s=max(d_best, clients.round_s),
        penalty=penalty(o_best),
        objective=objective,
        clients=clients,
        gap=clients.gap if math.isfinite(clients.gap) else 0.0,
        ratio_gap=ratio_gap,
    )


def search_ratio(objective_of: Callable[[float], float], o_min: float) -> float:
    """The ratio O in [O_min, 1] of least ``objective_of(O)``: a grid of 5 points, then bounded
    Brent between the neighbours of the best (a local refinement; O = 1 when O_min = 1).

    Shared by :func:`solve_joint_step` and :mod:`optim.joint_cvxpy`, so that both search O
    alike. ``o_min = 1`` also stands for a payload without a ratio knob (gamma falls to its
    floor at O = 1).
    """
    from scipy.optimize import minimize_scalar  # noqa: PLC0415 - 0.3 s at start-up

    ratios = list(np.linspace(o_min, 1.0, _RATIO_GRID)) if o_min < 1.0 else [1.0]
    values = [objective_of(float(o)) for o in ratios]
    i = int(np.argmin(values))
    o_best, val_best = float(ratios[i]), values[i]
    if len(ratios) > 1:
        lo, hi = ratios[max(i - 1, 0)], ratios[min(i + 1, len(ratios) - 1)]
        found = minimize_scalar(
            lambda o: objective_of(float(o)),
            bounds=(lo, hi),
            method="bounded",
            options={"xatol": _XTOL},
        )
        if found.fun < val_best:
            o_best = float(found.x)
    return o_best


def _bracket_root(slope, lo: float, hi: float, guess: float | None) -> tuple[float, float]:
    """[a, b] within [lo, hi] where the increasing ``slope`` changes sign, searched outwards from
    ``guess`` (steps doubling from 2 %); (lo, lo) or (hi, hi) when it keeps one sign."""
    if slope(lo) >= 0.0:
        return lo, lo
    if guess is None or not lo < guess < hi:
        return (lo, hi) if slope(hi) > 0.0 else (hi, hi)
    step = _D_STEP * guess
    if slope(guess) > 0.0:  # the root lies below the guess
        b = guess
        while (a := max(b - step, lo)) > lo and slope(a) > 0.0:
            b, step = a, 2.0 * step
        return a, b
    a = guess
    while (b := min(a + step, hi)) < hi and slope(b) <= 0.0:
        a, step = b, 2.0 * step
    return (a, b) if slope(b) > 0.0 else (hi, hi)
