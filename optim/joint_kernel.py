"""The compiled kernel of the joint power / CPU-frequency / bandwidth solvers (docs/solvers.md,
"Joint power, frequency, bandwidth and ratio"): scalar loops over the clients, compiled by numba
(``njit``, cached next to this file). The maths is that of :mod:`optim.joint_client`,
:mod:`optim.energy_min` and :mod:`optim.joint_newton`, whose docstrings derive it; those modules
validate their inputs and call these functions.

numba is imported here only (and by :mod:`optim.dispatch_kernel`, which builds on this
module); both are imported from inside the solvers' functions, so ``import optim`` does not
load numba.

A round's clients arrive as ``table``, (7, K) rows :data:`BITS` ... :data:`P_MAX_W` of
:class:`optim.joint_client.ClientBlock`, and ``band_hz`` (B [Hz]). Floating-point errors follow
numpy's model (x / 0 is inf or nan, no exception).
"""

from __future__ import annotations

import math

import numba
import numpy as np

BITS, CYCLES, SNR_PER_W, F_MIN_HZ, F_MAX_HZ, KAPPA, P_MAX_W = range(7)
#: the per-client solvers of the price search (:func:`search_price`)
JOINT, MAX_FREQUENCY, MAX_POWER = range(3)
LN2 = math.log(2.0)
_E = math.e
_BRANCH_POINT = float(np.nextafter(-1.0 / math.e, 0.0))  # W_{-1} is nan at -1/e itself
_EPS = float(np.finfo(float).eps)
_W_STEPS = 32  # Halley steps of Lambert's W (it converges in 2 to 5)
_ROOT_STEPS = 200
_ROOT_RTOL = 1e-11
_GOLDEN = (math.sqrt(5.0) - 1.0) / 2.0
_GOLDEN_STEPS = 28  # 0.618^28 ~ 1e-6 of the bracket (values err at its square)
_BISECT_STEPS = 200
_LOG_PRICE_TOL = 1e-13
_NEWTON_STEPS = 40
_HALVINGS = 8
_SHARE_TOL = 1e-7  # |sum_k b_k - 1|; the price search at its D certifies the answer
_SLOPE_TOL = 1e-7  # |Q + dW/dD| / Q
_FD_REL = 1e-6  # relative step of the partial derivatives at fixed splits
_MAX_LOG_STEP = 2.0  # the price moves by at most e^2 per step

jit = numba.njit(cache=True, error_model="numpy", nogil=True)


# --- scalar helpers ----------------------------------------------------------------------------


@jit
def maximum(x: float, y: float) -> float:
    """np.maximum: nan if either is nan."""
    if x != x or y != y:
        return math.nan
    return x if x >= y else y


@jit
def minimum(x: float, y: float) -> float:
    """np.minimum: nan if either is nan."""
    if x != x or y != y:
        return math.nan
    return x if x <= y else y


@jit
def clip(x: float, lo: float, hi: float) -> float:
    """np.clip: nan stays nan."""
    return minimum(maximum(x, lo), hi)


@jit
def _halley(w: float, x: float) -> float:
    """w e^w = x by Halley's method from ``w``, to the last bits."""
    for _ in range(_W_STEPS):
        ew = math.exp(w)
        f = w * ew - x
        if f == 0.0:
            return w
        step = f / (ew * (w + 1.0) - (w + 2.0) * f / (2.0 * w + 2.0))
        if not math.isfinite(step):
            return w
        w -= step
        if abs(step) <= 1e-9 * abs(w):  # converged: the next error is below 1e-18 (cubic)
            return w
    return w


@jit
def lambertw0(x: float) -> float:
    """Lambert's W, principal branch, for real x >= -1/e (inf at inf; nan below -1/e, as at
    the float nearest -1/e, which lies below it: as scipy's, so that a price search meets the
    same nan at a vanishing price)."""
    if x != x or x < _BRANCH_POINT:
        return math.nan
    if x == math.inf:
        return math.inf
    if abs(x) < 1e-8:
        return x * (1.0 - x * (1.0 - 1.5 * x))  # the series, to 1e-32
    if x < -0.32:  # near the branch point: the series in p = sqrt(2 (e x + 1))
        p = math.sqrt(max(2.0 * (_E * x + 1.0), 0.0))
        w = -1.0 + p * (1.0 - p * (1.0 / 3.0 - p * 11.0 / 72.0))
    elif x < 3.0:
        w = math.log1p(x) * 0.8
    else:
        l1 = math.log(x)
        l2 = math.log(l1)
        w = l1 - l2 + l2 / l1
    return _halley(w, x)


@jit
def lambertw_m1(x: float) -> float:
    """Lambert's W, branch -1, for real x in [-1/e, 0) (-inf at 0, nan outside)."""
    if x != x or x > 0.0 or x < _BRANCH_POINT:
        return math.nan
    if x == 0.0:
        return -math.inf
    if x < -0.25:  # near the branch point
        p = -math.sqrt(max(2.0 * (_E * x + 1.0), 0.0))
        w = -1.0 + p * (1.0 - p * (1.0 / 3.0 - p * 11.0 / 72.0))
    else:
        l1 = math.log(-x)
        l2 = math.log(-l1)
        w = l1 - l2 + l2 / l1
    return _halley(w, x)


# --- one client (joint_client.py's formulas, per client) --------------------------------------


@jit
def min_share_1(bits: float, upload_s: float, p_max_w: float, snr: float, band_hz: float) -> float:
    """The least share b that sends ``bits`` in ``upload_s`` [s] at p_max (inf if none does):
    b ln(1 + a/b) = ln2 s / (t B) with a = p_max snr, so x = a / b solves ln(1 + x) = c x,
    c = ln2 s / (t B a) < 1, and 1 + x = -W_{-1}(-c e^{-c}) / c (c >= 1: b ln(1 + a/b) < a)."""
    if not bits > 0.0:
        return 0.0
    a = p_max_w * snr
    c = LN2 * bits / (upload_s * band_hz * a)
    if not (c > 0.0 and c < 1.0):
        return math.inf
    arg = maximum(-c * math.exp(-c), _BRANCH_POINT)  # rounding near c = 1
    u = -lambertw_m1(arg) / c
    return a / (u - 1.0)


@jit
def _best_product_1(bits: float, upload_s: float, price: float, snr: float, band_hz: float):
    """y = t b [s] of least E_up(y) + price y / t at the upload time t: snr E_up'(y) =
    -((z - 1) e^z + 1) with z = ln2 s / (y B) equals -snr price / t, so
    z = 1 + W_0((snr price / t - 1) / e) and y = ln2 s / (B z) (price: lambda / Z [J])."""
    if not bits > 0.0:
        return 0.0
    rhs = snr * price / upload_s
    z = 1.0 + lambertw0((rhs - 1.0) / _E)
    return LN2 * bits / (band_hz * z)


@jit
def upload_energy_1(bits: float, product_s: float, snr: float, band_hz: float) -> float:
    """E_up(y) of (J1) [J]."""
    if not bits > 0.0:
        return 0.0
    z = LN2 * bits / (product_s * band_hz)
    return product_s * math.expm1(z) / snr


@jit
def _compute_energy_1(cycles: float, kappa: float, compute_s: float) -> float:
    """kappa C^3 / tau^2 [J]."""
    if not cycles > 0.0:
        return 0.0
    return kappa * cycles**3 / compute_s**2


@jit
def _floor_s(table, band_hz: float, i: int) -> float:
    """ln2 s / (B p_max snr) [s] (ClientBlock.upload_floor_s)."""
    return LN2 * table[BITS, i] / (band_hz * table[P_MAX_W, i] * table[SNR_PER_W, i])


@jit
def upload_range_1(table, band_hz: float, i: int, deadline_s: float):
    """(lo, hi): client i's least and greatest upload time [s] at round time ``deadline_s``:
    compute at f_min (or the upload floor, if later) and at f_max."""
    hi = deadline_s - table[CYCLES, i] / table[F_MAX_HZ, i]
    slow = deadline_s - table[CYCLES, i] / table[F_MIN_HZ, i]
    lo = maximum(slow, _floor_s(table, band_hz, i) * (1 + 1e-9))
    return minimum(lo, hi), hi


@jit
def split_value_1(table, band_hz: float, i: int, deadline_s: float, t: float, price, weight):
    """(value, y) of :func:`optim.joint_client.split_value` for client i."""
    bits, snr = table[BITS, i], table[SNR_PER_W, i]
    y_floor = t * min_share_1(bits, t, table[P_MAX_W, i], snr, band_hz)
    ratio = price / weight if weight > 0.0 else math.inf
    y = _best_product_1(bits, t, ratio, snr, band_hz) if math.isfinite(ratio) else 0.0
    y = maximum(y, y_floor)
    energy = _compute_energy_1(table[CYCLES, i], table[KAPPA, i], deadline_s - t) + upload_energy_1(
        bits, y, snr, band_hz
    )
    value = (weight * energy if weight > 0.0 else 0.0) + price * y / t
    return value, y


@jit
def upload_slope_1(table, band_hz: float, i: int, t: float, price: float, weight: float):
    """(h'(t), h''(t)) of :func:`optim.joint_client.upload_slope_and_curvature`."""
    bits = table[BITS, i]
    if not bits > 0.0:
        return 0.0, 0.0
    snr, p_max = table[SNR_PER_W, i], table[P_MAX_W, i]
    a = p_max * snr
    r = LN2 * bits / band_hz
    # x = a / b_min(t) of min_share_1: 1 + x = -W_{-1}(-c e^{-c}) / c, c = r / (t a)
    c = r / (t * a)
    x = 0.0  # c >= 1: no share is fast enough (slope -inf)
    if c > 0.0 and c < 1.0:
        x = -lambertw_m1(maximum(-c * math.exp(-c), _BRANCH_POINT)) / c - 1.0
    bend = math.log1p(x) - x / (1.0 + x)
    if weight > 0.0:  # the best product y = r / z, z = 1 + W_0((snr p / (w t) - 1) / e)
        ratio = price / weight
        z = 1.0 + lambertw0((snr * ratio / t - 1.0) / _E)
        y_free = r / z
        if y_free * x > t * a:  # above the floor t b_min = t a / x: power is free
            dy = r * snr * ratio / (t**2 * z**3 * math.exp(z))
            return -price * y_free / t**2, price * (2.0 * y_free / t**3 - dy / t**2)
    slope = weight * p_max - price * r / (t**2 * bend)
    curvature = (price * r / (t**3 * bend)) * (2.0 + c * x**3 / ((1.0 + x) ** 2 * bend**2))
    return slope, curvature


@jit
def _cubed(table, i: int, weight: float) -> float:
    """w kappa C^3 (0 without cycles)."""
    cycles = table[CYCLES, i]
    return weight * table[KAPPA, i] * cycles**3 if cycles > 0.0 else 0.0


@jit
def split_slope_1(table, band_hz: float, i: int, deadline_s: float, t: float, price, weight):
    """(g, g') of :func:`optim.joint_client.split_slope_and_curvature` for client i."""
    cubed = _cubed(table, i, weight)
    tau = deadline_s - t
    slope, curvature = upload_slope_1(table, band_hz, i, t, price, weight)
    return 2.0 * cubed / tau**3 + slope, 6.0 * cubed / tau**4 + curvature


@jit
def split_roots(table, band_hz, deadline_s, price, weight, guess, use_guess, upload) -> None:
    """Fill (K,) ``upload`` with each client's root of its increasing split slope on its
    range [lo, hi] (an end point where the slope keeps one sign); ``guess`` may be ``upload``.

    Newton's method from ``guess`` (else the middle of the range), safeguarded by the bracket of
    the points seen (at first the range, widened by the tolerance so that an end can be tried
    and confirmed): a bisection step where Newton's leaves the bracket, meets a non-finite
    value, or did not halve |f| on the same side of the root (as next to an infinite slope at
    the upload floor). Each Newton step goes one tolerance further, so that the bracket closes
    around the root; a client stops when its bracket is below two tolerances."""
    for i in range(table.shape[1]):
        w = weight[i]
        lo, hi = upload_range_1(table, band_hz, i, deadline_s)
        tol = _ROOT_RTOL * max(abs(hi), abs(lo))
        a, b = lo - tol, hi + tol
        x = clip(guess[i], lo, hi) if use_guess else 0.5 * (lo + hi)
        neg_last, abs_last = False, math.inf
        for _ in range(_ROOT_STEPS):
            f, slope = split_slope_1(table, band_hz, i, deadline_s, x, price, w)
            neg = f <= 0.0  # the root lies at or right of x (nan: left, bisect towards lo)
            if neg:
                a = x
            else:
                b = x
            if b - a <= 2.0 * tol:
                break
            newton = clip(x - f / slope, lo, hi)
            newton += math.copysign(tol, newton - x)
            abs_f = abs(f)
            good = newton > a and newton < b and (neg != neg_last or abs_f <= 0.5 * abs_last)
            x = newton if good else 0.5 * (a + b)
            neg_last, abs_last = neg, abs_f if good else math.inf
        upload[i] = clip(0.5 * (a + b), lo, hi)


# --- every client: the split at a price, the slope in the round time ---------------------------


@jit
def priced_split(table, band_hz, deadline_s, price, weight, guess, use_guess, upload, y, value):
    """Fill (K,) ``upload``, ``y``, ``value`` of :func:`optim.energy_min.priced_split`; returns
    sum_k value. ``guess`` may be ``upload`` itself (each client reads its own first)."""
    split_roots(table, band_hz, deadline_s, price, weight, guess, use_guess, upload)
    total = 0.0
    for i in range(table.shape[1]):
        value[i], y[i] = split_value_1(table, band_hz, i, deadline_s, upload[i], price, weight[i])
        total += value[i]
    return total


@jit
def round_slope(table, band_hz, deadline_s, upload, price, weight) -> float:
    """dW/dD of :func:`optim.energy_min.round_slope` (J4)."""
    total = 0.0
    for i in range(table.shape[1]):
        lo, _ = upload_range_1(table, band_hz, i, deadline_s)
        slow = deadline_s - table[CYCLES, i] / table[F_MIN_HZ, i]
        if upload[i] <= lo and lo > slow and table[CYCLES, i] > 0.0:  # at the upload floor
            total += -2.0 * _cubed(table, i, weight[i]) / (deadline_s - upload[i]) ** 3
        else:
            total += upload_slope_1(table, band_hz, i, upload[i], price, weight[i])[0]
    return total


# --- the per-client solvers at a bandwidth price, and the price search -------------------------


@jit
def _max_power_upload_1(table, band_hz: float, i: int, share: float) -> float:
    """Upload time at p_max on ``share``: s / (b B log2(1 + p_max snr / b)) [s]."""
    if not table[BITS, i] > 0.0:
        return 0.0
    gain = table[P_MAX_W, i] * table[SNR_PER_W, i] / share
    return table[BITS, i] / (share * band_hz * math.log2(1.0 + gain))


@jit
def _max_power_value_1(table, band_hz, i, deadline_s, share, price, weight):
    """(value, upload time) of client i at p_max on ``share``: compute in the rest of the round
    (at f_min at the slowest)."""
    upload = _max_power_upload_1(table, band_hz, i, share)
    compute = minimum(deadline_s - upload, table[CYCLES, i] / table[F_MIN_HZ, i])
    energy = _compute_energy_1(table[CYCLES, i], table[KAPPA, i], compute)
    energy += table[P_MAX_W, i] * upload
    return weight * energy + price * share, upload


_GOLDEN_SHARE, _GOLDEN_TIME = range(2)  # what golden section minimises over


@jit
def _golden_value(of, table, band_hz, i, deadline_s, price, weight, share, x) -> float:
    """``of`` = _GOLDEN_SHARE: the max-power value at share x; _GOLDEN_TIME: the energy at
    upload time x on the fixed ``share``."""
    if of == _GOLDEN_SHARE:
        return _max_power_value_1(table, band_hz, i, deadline_s, x, price, weight)[0]
    cmp = _compute_energy_1(table[CYCLES, i], table[KAPPA, i], deadline_s - x)
    return cmp + upload_energy_1(table[BITS, i], x * share, table[SNR_PER_W, i], band_hz)


@jit
def _golden_min_1(of, table, band_hz, i, deadline_s, price, weight, share, lo, hi) -> float:
    """The minimiser of a convex 1-D function on [lo, hi] by golden section; an end point when
    it is lower than the middle of the last bracket (a monotone function)."""
    a, b = lo, hi
    x1 = b - _GOLDEN * (b - a)
    x2 = a + _GOLDEN * (b - a)
    f1 = _golden_value(of, table, band_hz, i, deadline_s, price, weight, share, x1)
    f2 = _golden_value(of, table, band_hz, i, deadline_s, price, weight, share, x2)
    for _ in range(_GOLDEN_STEPS):
        if f1 <= f2:  # the minimum lies in [a, x2]
            b = x2
            x2, f2 = x1, f1
            x1 = b - _GOLDEN * (b - a)
            f1 = _golden_value(of, table, band_hz, i, deadline_s, price, weight, share, x1)
        else:
            a = x1
            x1, f1 = x2, f2
            x2 = a + _GOLDEN * (b - a)
            f2 = _golden_value(of, table, band_hz, i, deadline_s, price, weight, share, x2)
    best, best_value = 0.5 * (a + b), math.inf
    for x in (0.5 * (a + b), lo, hi):
        value = _golden_value(of, table, band_hz, i, deadline_s, price, weight, share, x)
        value = value if value == value else math.inf
        if value < best_value:
            best, best_value = x, value
    return best


@jit
def _max_power_split_1(table, band_hz, i, deadline_s, price, weight):
    """(t, y, value) of client i at p_max and f_max-or-slower: the share by golden section on
    [b_min, b_min + value(b_min) / price]."""
    bits, snr, p_max = table[BITS, i], table[SNR_PER_W, i], table[P_MAX_W, i]
    tau = table[CYCLES, i] / table[F_MAX_HZ, i]
    lo = min_share_1(bits, deadline_s - tau, p_max, snr, band_hz)
    start = _max_power_value_1(table, band_hz, i, deadline_s, lo, price, weight)[0]
    hi = lo + start / price + 1e-300
    share = _golden_min_1(_GOLDEN_SHARE, table, band_hz, i, deadline_s, price, weight, 0.0, lo, hi)
    share = share if bits > 0.0 else 0.0
    value, upload = _max_power_value_1(table, band_hz, i, deadline_s, share, price, weight)
    return upload, upload * share, value


@jit
def per_client(mode, table, band_hz, deadline_s, price, weight, guess, use_guess, upload, y):
    """Fill (K,) ``upload`` and ``y`` of every client at the bandwidth price ``price`` by
    ``mode`` (:data:`JOINT`: the split's root; :data:`MAX_FREQUENCY`: compute at f_max, upload
    the rest; :data:`MAX_POWER`: the share at p_max); returns (sum_k value, sum_k b_k)."""
    if mode == JOINT:
        split_roots(table, band_hz, deadline_s, price, weight, guess, use_guess, upload)
    total, shares = 0.0, 0.0
    for i in range(table.shape[1]):
        w = weight[i]
        if mode == MAX_POWER:
            upload[i], y[i], value = _max_power_split_1(table, band_hz, i, deadline_s, price, w)
        else:
            if mode == MAX_FREQUENCY:  # compute at f_max, upload the rest
                upload[i] = upload_range_1(table, band_hz, i, deadline_s)[1]
            value, y[i] = split_value_1(table, band_hz, i, deadline_s, upload[i], price, w)
        total += value
        shares += y[i] / upload[i] if table[BITS, i] > 0.0 else 0.0
    return total, shares


@jit
def solution_fields(table, band_hz, deadline_s, upload, product, weight, out):
    """Fill ``out`` (7, K): power [W], clock [Hz], share, compute and upload time [s], compute
    and upload energy [J] of :func:`optim.energy_min._solution`; returns (round time [s],
    energy [J], weighted energy [J])."""
    round_s, energy_j, objective = -math.inf, 0.0, 0.0
    for i in range(table.shape[1]):
        bits, cycles = table[BITS, i], table[CYCLES, i]
        fast = cycles / table[F_MAX_HZ, i]
        slow = cycles / table[F_MIN_HZ, i]
        if bits > 0.0:
            share = product[i] / upload[i]
            up_energy = upload_energy_1(bits, product[i], table[SNR_PER_W, i], band_hz)
            power = up_energy / upload[i]
            compute = clip(deadline_s - upload[i], fast, slow)
            up_s = upload[i]
        else:  # no upload: compute all round
            share, up_energy, power, up_s = 0.0, 0.0, 0.0, 0.0
            compute = clip(deadline_s, fast, slow)
        cmp_energy = _compute_energy_1(cycles, table[KAPPA, i], compute)
        out[0, i], out[2, i], out[3, i], out[4, i] = power, share, compute, up_s
        out[1, i] = cycles / compute if cycles > 0.0 else table[F_MAX_HZ, i]
        out[5, i], out[6, i] = cmp_energy, up_energy
        energy = cmp_energy + up_energy
        round_s = maximum(round_s, compute + up_s)
        energy_j += energy
        objective += weight[i] * energy
    return round_s, energy_j, objective


@jit
def _pick(dual_lo: float, dual_hi: float) -> float:
    """Python's max(dual_lo, dual_hi) (the first unless the second is larger)."""
    return dual_hi if dual_hi > dual_lo else dual_lo


@jit
def search_price(mode, table, band_hz, deadline_s, weight, price_hint, gap_rtol, hint, use_hint):
    """The bandwidth price of :func:`optim.energy_min.solve_block` (its docstring): returns
    (ok, price, gap, upload (K,), product (K,)); ok False when no price within 2^200 steps
    fits (the round time is infeasible)."""
    k = table.shape[1]
    ups, ys = np.empty((3, k)), np.empty((3, k))
    none_priced = True
    for i in range(k):
        if weight[i] > 0.0 and table[BITS, i] > 0.0:
            none_priced = False
    if none_priced:  # energy is free (price 1: every client takes its least share) or the
        price = 1.0 if weight.max() <= 0.0 else 0.0  # band is never scarce (price 0)
        per_client(mode, table, band_hz, deadline_s, price, weight, hint, False, ups[0], ys[0])
        return True, 0.0, 0.0, ups[0], ys[0]
    scale = 0.0
    for i in range(k):
        scale += weight[i] * table[P_MAX_W, i] * deadline_s
    hinted = math.isfinite(price_hint) and price_hint > 0.0
    u = math.log(price_hint if hinted else scale)
    step = 0.02 if hinted else LN2
    cur, new = 0, 1
    val_u, b_u = per_client(
        mode, table, band_hz, deadline_s, math.exp(u), weight, hint, use_hint, ups[cur], ys[cur]
    )
    ex_u = b_u - 1.0
    direction = 1.0 if ex_u > 0.0 else -1.0  # towards the root
    found = False
    for _ in range(_BISECT_STEPS):
        u_new = u + direction * step
        val_new, b_new = per_client(
            mode,
            table,
            band_hz,
            deadline_s,
            math.exp(u_new),
            weight,
            ups[cur],
            True,
            ups[new],
            ys[new],
        )
        ex_new = b_new - 1.0
        if (ex_new > 0.0) != (direction > 0.0):
            found = True
            break
        u, val_u, ex_u, step = u_new, val_new, ex_new, 2.0 * step
        cur, new = new, cur
    if not found:
        return False, math.nan, math.nan, ups[0], ys[0]
    last, spare = new, 3 - cur - new
    if direction > 0.0:
        u_lo, ex_lo, val_lo, lo = u, ex_u, val_u, cur
        u_hi, ex_hi, val_hi, hi = u_new, ex_new, val_new, new
    else:
        u_lo, ex_lo, val_lo, lo = u_new, ex_new, val_new, new
        u_hi, ex_hi, val_hi, hi = u, ex_u, val_u, cur
    f_lo, f_hi = ex_lo, ex_hi  # Illinois' working values
    side, repeats = 0, 0
    for _ in range(_BISECT_STEPS):
        primal_hi = val_hi - math.exp(u_hi) * (ex_hi + 1.0)
        dual = _pick(val_lo - math.exp(u_lo), val_hi - math.exp(u_hi))
        if primal_hi - dual <= gap_rtol * primal_hi or u_hi - u_lo <= _LOG_PRICE_TOL:
            break
        x = (u_lo * f_hi - u_hi * f_lo) / (f_hi - f_lo)
        if repeats >= 2 or not u_lo < x < u_hi:  # a bisection step when one end stalls
            x = 0.5 * (u_lo + u_hi)
        val_x, b_x = per_client(
            mode,
            table,
            band_hz,
            deadline_s,
            math.exp(x),
            weight,
            ups[last],
            True,
            ups[spare],
            ys[spare],
        )
        f_x = b_x - 1.0
        new_side = -1 if f_x > 0.0 else 1  # -1: x is below the root
        repeats = repeats + 1 if new_side == side else 0
        last = spare
        if new_side < 0:
            u_lo, f_lo, ex_lo, val_lo, lo, spare = x, f_x, f_x, val_x, spare, lo
            f_hi = 0.5 * f_hi if side < 0 else f_hi  # Illinois: an end kept twice
        else:
            u_hi, f_hi, ex_hi, val_hi, hi, spare = x, f_x, f_x, val_x, spare, hi
            f_lo = 0.5 * f_lo if side > 0 else f_lo
        side = new_side
    fields = np.empty((7, k))
    objective = solution_fields(table, band_hz, deadline_s, ups[hi], ys[hi], weight, fields)[2]
    gap = objective - _pick(val_lo - math.exp(u_lo), val_hi - math.exp(u_hi))
    return True, math.exp(u_hi), gap if not gap < 0.0 else 0.0, ups[hi], ys[hi]


@jit
def equal_share_upload(table, band_hz, deadline_s, share, out) -> None:
    """Fill (K,) ``out`` with each client's upload time [s] on the fixed ``share`` (K,): least
    energy by golden section between its fastest upload (or the f_min end) and f_max's end."""
    for i in range(table.shape[1]):
        hi = deadline_s - table[CYCLES, i] / table[F_MAX_HZ, i]
        slow = deadline_s - table[CYCLES, i] / table[F_MIN_HZ, i]
        lo = minimum(maximum(slow, _max_power_upload_1(table, band_hz, i, share[i])), hi)
        out[i] = _golden_min_1(
            _GOLDEN_TIME, table, band_hz, i, deadline_s, 0.0, 1.0, share[i], lo, hi
        )


# --- the least round time -----------------------------------------------------------------------


@jit
def _total_share(table, band_hz, deadline_s) -> float:
    """sum_k b_min,k(T - C_k / f_max,k) at p_max."""
    total = 0.0
    for i in range(table.shape[1]):
        upload = deadline_s - table[CYCLES, i] / table[F_MAX_HZ, i]
        total += min_share_1(
            table[BITS, i], upload, table[P_MAX_W, i], table[SNR_PER_W, i], band_hz
        )
    return total


@jit
def min_feasible_deadline(table, band_hz, equal_shares) -> float:
    """:func:`optim.energy_min.min_feasible_deadline_s` [s]: with equal shares, max_k of each
    client's least time at b = 1/K; else the least float T at which the least shares at p_max
    and f_max sum to <= 1 (decreasing in T), by bisection to adjacent floats."""
    k = table.shape[1]
    lo, any_bits = -math.inf, False
    for i in range(k):
        tau = table[CYCLES, i] / table[F_MAX_HZ, i]
        if equal_shares:
            lo = maximum(lo, tau + _max_power_upload_1(table, band_hz, i, 1.0 / k))
        elif table[BITS, i] > 0.0:
            any_bits = True
            lo = maximum(lo, tau + _floor_s(table, band_hz, i))
        else:
            lo = maximum(lo, tau)
    if equal_shares or not any_bits or _total_share(table, band_hz, lo) <= 1.0:
        return lo  # with shares free: the slowest client's floor decides
    hi = 2.0 * lo + 1e-12
    while _total_share(table, band_hz, hi) > 1.0:
        lo, hi = hi, 2.0 * hi
    # g(T) = 1 - 1 / sum_k b_min,k(T) falls through 0 (finite where a share is inf): Illinois
    # false position to 4 ulps, then bisection to adjacent floats, g(lo) > 0 >= g(hi)
    g_lo = 1.0 - 1.0 / _total_share(table, band_hz, lo)
    g_hi = 1.0 - 1.0 / _total_share(table, band_hz, hi)
    side = 0
    while True:
        mid = 0.5 * (lo + hi)
        if not lo < mid < hi:
            return hi
        x = (lo * g_hi - hi * g_lo) / (g_hi - g_lo)
        if hi - lo > 4.0 * _EPS * hi and lo < x < hi:
            mid = x
        g = 1.0 - 1.0 / _total_share(table, band_hz, mid)
        if g > 0.0:
            lo, g_lo = mid, g
            g_hi = 0.5 * g_hi if side > 0 else g_hi  # Illinois: an end kept twice
            side = 1
        else:
            hi, g_hi = mid, g
            g_lo = 0.5 * g_lo if side < 0 else g_lo
            side = -1


@jit
def least_shares_fit(table, band_hz, deadline_s) -> bool:
    """Whether full power and f_max finish by ``deadline_s`` on shares summing to <= 1."""
    for i in range(table.shape[1]):
        upload = deadline_s - table[CYCLES, i] / table[F_MAX_HZ, i]
        if upload < 0.0 or (table[BITS, i] > 0.0 and upload <= 0.0):  # compute alone too slow
            return False
    return _total_share(table, band_hz, deadline_s) <= 1.0


@jit
def least_time_split(table, band_hz, deadline_s, upload, product) -> None:
    """Fill (K,) ``upload`` and ``product`` at full power, f_max and the least shares."""
    for i in range(table.shape[1]):
        bits = table[BITS, i]
        upload[i] = deadline_s - table[CYCLES, i] / table[F_MAX_HZ, i] if bits > 0.0 else 1.0
        share = min_share_1(bits, upload[i], table[P_MAX_W, i], table[SNR_PER_W, i], band_hz)
        product[i] = upload[i] * share


# --- Newton's method on (log lambda, D) (optim.joint_newton) ------------------------------------


@jit
def _finite(x: float) -> float:
    """x, or 0 where it is not finite (a client at its floor has inf or nan partials)."""
    return x if math.isfinite(x) else 0.0


@jit
def _residual_and_jacobian(table, band_hz, weight, queue_s, d, price, upload, y, out) -> None:
    """Fill ``out`` (6,): F_1, F_2 and dF/d(log lambda, D) row by row of
    :mod:`optim.joint_newton` at the splits ``upload`` [s] and products ``y`` [s]."""
    shares = 0.0
    j00 = j01 = j10 = j11 = 0.0
    lam_step = price * _FD_REL
    for i in range(table.shape[1]):
        w, t = weight[i], upload[i]
        has_bits = table[BITS, i] > 0.0
        share = y[i] / t if has_bits else 0.0
        shares += share
        # partial derivatives at the fixed splits
        g, g_t = split_slope_1(table, band_hz, i, d, t, price, w)
        g_up = split_slope_1(table, band_hz, i, d, t, price * (1.0 + _FD_REL), w)[0]
        g_lam = (g_up - g) / lam_step  # = dh'/dlambda: the compute part has no lambda
        y_lam = split_value_1(table, band_hz, i, d, t, price * (1.0 + _FD_REL), w)[1]
        b_lam = (y_lam / t - share) / lam_step if has_bits else 0.0
        t_up = t * (1.0 + _FD_REL)
        y_t = split_value_1(table, band_hz, i, d, t_up, price, w)[1]
        b_t = (y_t / t_up - share) / (t * _FD_REL) if has_bits else 0.0
        g_d = -6.0 * _cubed(table, i, w) / (d - t) ** 4  # d/dD of 2 w kappa C^3 / tau^3
        h_t = g_t + g_d  # the upload part of the curvature
        # how the split moves: inside its range by the implicit function theorem
        lo, hi = upload_range_1(table, band_hz, i, d)
        slow = d - table[CYCLES, i] / table[F_MIN_HZ, i]
        inside = lo < t < hi
        follows_d = t >= hi or (t <= lo and lo == slow)  # an end set by f_max or f_min
        dt_du = -g_lam * price / g_t if inside else 0.0
        dt_dd = -g_d / g_t if inside else (1.0 if follows_d else 0.0)
        # round_slope's clients at the upload floor count -2 w kappa C^3 / tau^3 instead of h'
        floor_bound = t <= lo and lo > slow and table[CYCLES, i] > 0.0
        df2_du = 0.0 if floor_bound or not has_bits else h_t * dt_du + g_lam * price
        df2_dd = -g_d if floor_bound else (h_t * dt_dd if has_bits else 0.0)
        j00 += _finite(b_t * dt_du + b_lam * price)
        j01 += _finite(b_t * dt_dd)
        j10 += _finite(df2_du)
        j11 += _finite(df2_dd)
    slope = round_slope(table, band_hz, d, upload, price, weight)
    out[0], out[1] = shares - 1.0, (queue_s + slope) / queue_s
    out[2], out[3], out[4], out[5] = j00, j01, j10 / queue_s, j11 / queue_s


@jit
def _newton_evaluate(table, band_hz, weight, queue_s, d, u, guess, use_guess, y, value, out):
    """The splits at (D, lambda = e^u) into ``guess`` (from it), F and its Jacobian into out."""
    price = math.exp(u)
    priced_split(table, band_hz, d, price, weight, guess, use_guess, guess, y, value)
    _residual_and_jacobian(table, band_hz, weight, queue_s, d, price, guess, y, out)


@jit
def _all_finite(values) -> bool:
    """Whether every entry of the 1-D ``values`` is finite."""
    return np.isfinite(values).all()


@jit
def newton_round(
    table, band_hz, weight, queue_s, d_lo, d_hi, d_start, price_start, splits, use_splits
):
    """:func:`optim.joint_newton.newton_round`: returns (ok, D [s], lambda) and leaves the
    splits there [s] in ``splits`` (K,) (read first as the splits at the start when
    ``use_splits``)."""
    if not (d_lo < d_start < d_hi and 0.0 < price_start < math.inf):
        return False, math.nan, math.nan
    k = table.shape[1]
    y, value = np.empty(k), np.empty(k)
    f, f_new = np.empty(6), np.empty(6)
    d, u = d_start, math.log(price_start)
    _newton_evaluate(table, band_hz, weight, queue_s, d, u, splits, use_splits, y, value, f)
    for _ in range(_NEWTON_STEPS):
        if not _all_finite(f):
            return False, math.nan, math.nan
        if abs(f[0]) <= _SHARE_TOL and abs(f[1]) <= _SLOPE_TOL:
            return True, d, math.exp(u)
        det = f[2] * f[5] - f[3] * f[4]
        if det == 0.0 or not math.isfinite(det):
            return False, math.nan, math.nan
        du = (f[3] * f[1] - f[5] * f[0]) / det  # Cramer's rule on jac @ step = -F
        dd = (f[4] * f[0] - f[2] * f[1]) / det
        du = min(max(du, -_MAX_LOG_STEP), _MAX_LOG_STEP)
        norm = math.hypot(f[0], f[1])
        accepted = False
        for _ in range(_HALVINGS):
            d_new = min(max(d + dd, 0.5 * (d + d_lo)), 0.5 * (d + d_hi))
            _newton_evaluate(
                table, band_hz, weight, queue_s, d_new, u + du, splits, True, y, value, f_new
            )
            finite = math.isfinite(f_new[0]) and math.isfinite(f_new[1])
            if finite and math.hypot(f_new[0], f_new[1]) < norm:
                d, u = d_new, u + du
                f[:] = f_new
                accepted = True
                break
            du, dd = 0.5 * du, 0.5 * dd
        if not accepted:
            return False, math.nan, math.nan
    return False, math.nan, math.nan


# --- the per-client formulas over every client (optim.joint_client's array functions) ----------


@jit
def split_values(table, band_hz, deadline_s, upload, price, weight, value, y) -> None:
    """Fill (K,) ``value`` and ``y`` of :func:`optim.joint_client.split_value`."""
    for i in range(table.shape[1]):
        value[i], y[i] = split_value_1(
            table, band_hz, i, deadline_s, upload[i], price[i], weight[i]
        )


@jit
def split_slopes(table, band_hz, deadline_s, upload, price, weight, slope, curvature) -> None:
    """Fill (K,) g and g' of :func:`optim.joint_client.split_slope_and_curvature`."""
    for i in range(table.shape[1]):
        slope[i], curvature[i] = split_slope_1(
            table, band_hz, i, deadline_s, upload[i], price[i], weight[i]
        )


@jit
def upload_slopes(table, band_hz, upload, price, weight, slope, curvature) -> None:
    """Fill (K,) h' and h'' of :func:`optim.joint_client.upload_slope_and_curvature`."""
    for i in range(table.shape[1]):
        slope[i], curvature[i] = upload_slope_1(table, band_hz, i, upload[i], price[i], weight[i])
