"""One client's block of the joint power / CPU-frequency / bandwidth problems (docs/solvers.md,
"Joint power, frequency, bandwidth and ratio"). Pure numpy/scipy, vectorised over clients.

Client k sends s_k bits in t_k seconds on share b_k of the band B [Hz] at power p_k, over a
channel whose whole-band SNR at 1 W is snr_k = g_k / (N0 B) [1/W]; rate b B log2(1 + p snr / b).
With y = t b [s] (the client's time-bandwidth product) the least power that sends s bits is
p = (b / snr)(2^(s / (y B)) - 1), so the upload energy is

    E_up(y) = p t = (y / snr)(2^(s / (y B)) - 1)                       [J]   (J1)

a function of y alone, convex and decreasing (the perspective of 2^x - 1). Computing C_k
cycles in tau seconds at f = C / tau costs E_cmp = kappa C f^2 = kappa C^3 / tau^2 (CMOS).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "ClientBlock",
    "best_product_s",
    "golden_min",
    "increasing_root",
    "min_share",
    "split_slope",
    "split_value",
    "upload_energy_j",
    "upload_slope",
]

LN2 = math.log(2.0)


def _lambertw(x: NDArray[np.float64] | float, k: int) -> NDArray[np.complex128]:
    """scipy's Lambert W, branch ``k`` (imported here: 0.15 s at start-up, which a run that
    decides no power or clock does not pay)."""
    from scipy.special import lambertw  # noqa: PLC0415

    return lambertw(x, k=k)


_BRANCH_POINT = float(np.nextafter(-1.0 / math.e, 0.0))  # W_{-1} is nan at -1/e itself
_FloatArray = NDArray[np.float64]


def upload_energy_j(
    bits: _FloatArray, product_s: _FloatArray, snr_per_w: _FloatArray, bandwidth_hz: float
) -> _FloatArray:
    """(K,) E_up(y) of (J1) [J] for y = t b [s]; 0 for zero bits, inf for y = 0 with bits."""
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        z = LN2 * bits / (product_s * bandwidth_hz)
        e = product_s * np.expm1(z) / snr_per_w
    return np.where(bits > 0.0, e, 0.0)


def min_share(
    bits: _FloatArray,
    upload_s: _FloatArray,
    p_max_w: _FloatArray,
    snr_per_w: _FloatArray,
    bandwidth_hz: float,
) -> _FloatArray:
    """(K,) least share b that sends ``bits`` in ``upload_s`` at power p_max (inf if none does).

    b ln(1 + a / b) = r with a = p_max snr and r = ln2 s / (t B): x = a / b solves
    ln(1 + x) = c x, c = r / a < 1, so 1 + x = -W_{-1}(-c e^{-c}) / c (the non-trivial branch
    of Lambert's W); c >= 1 means even an infinite share is too slow (b ln(1 + a/b) < a).
    """
    a = p_max_w * snr_per_w
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        c = LN2 * bits / (upload_s * bandwidth_hz * a)
        ok = (c > 0.0) & (c < 1.0)
        cc = np.where(ok, c, 0.5)
        arg = np.maximum(-cc * np.exp(-cc), _BRANCH_POINT)  # rounding near c = 1
        u = -_lambertw(arg, -1).real / cc
        share = a / (u - 1.0)
    share = np.where(ok, share, np.inf)
    return np.where(bits > 0.0, share, 0.0)


def best_product_s(
    bits: _FloatArray,
    upload_s: _FloatArray,
    price: _FloatArray,
    snr_per_w: _FloatArray,
    bandwidth_hz: float,
) -> _FloatArray:
    """(K,) y = t b minimising E_up(y) + price y / t for a fixed upload time t (price > 0).

    Stationarity: snr E_up'(y) = -((z - 1) e^z + 1) with z = ln2 s / (y B), equal to
    -snr price / t, so z = 1 + W_0((snr price / t - 1) / e) and y = ln2 s / (B z).
    ``price`` is the bandwidth price over the energy weight, lambda / Z [J].
    """
    with np.errstate(divide="ignore", invalid="ignore"):  # t = 0 for a client with no bits
        rhs = snr_per_w * price / upload_s
        z = 1.0 + _lambertw((rhs - 1.0) / math.e, 0).real
        y = LN2 * bits / (bandwidth_hz * z)
    return np.where(bits > 0.0, y, 0.0)


_GOLDEN = (math.sqrt(5.0) - 1.0) / 2.0
_GOLDEN_STEPS = 28  # 0.618^28 ~ 1e-6 of the bracket (values err at its square)


@dataclass(frozen=True, slots=True, eq=False)
class ClientBlock:
    """The per-client data of one round, shape (K,) each, validated by
    :func:`optim.energy_min.client_block`.

    Attributes:
        bits: s_k [bit]. cycles: C_k [cycle]. snr_per_w: g_k / (N0 B) [1/W].
        f_min_hz, f_max_hz: CPU range [Hz]. kappa: [J/(cycle Hz^2)]. p_max_w: [W].
        bandwidth_hz: B [Hz] (a float).
    """

    bits: _FloatArray
    cycles: _FloatArray
    snr_per_w: _FloatArray
    f_min_hz: _FloatArray
    f_max_hz: _FloatArray
    kappa: _FloatArray
    p_max_w: _FloatArray
    bandwidth_hz: float

    def compute_energy_j(self, compute_s: _FloatArray) -> _FloatArray:
        """kappa C^3 / tau^2 [J] (CMOS, f = C / tau)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(self.cycles > 0.0, self.kappa * self.cycles**3 / compute_s**2, 0.0)

    def fastest_compute_s(self) -> _FloatArray:
        """C / f_max [s]."""
        return self.cycles / self.f_max_hz

    def slowest_compute_s(self) -> _FloatArray:
        """C / f_min [s]."""
        return self.cycles / self.f_min_hz

    def upload_floor_s(self) -> _FloatArray:
        """ln2 s / (B p_max snr) [s]: no share sends faster at p_max (b ln(1 + a/b) < a)."""
        return LN2 * self.bits / (self.bandwidth_hz * self.p_max_w * self.snr_per_w)


def split_value(
    block: ClientBlock,
    deadline_s: float,
    upload_s: _FloatArray,
    price: _FloatArray,
    weight: _FloatArray,
) -> tuple[_FloatArray, _FloatArray]:
    """(value, product y) of one client at upload time t (compute time deadline - t).

    value = weight (E_cmp + E_up(y)) + price y / t with y the best product of
    :func:`best_product_s`, raised to the power limit's t b_min(t) (weight 0: y = t b_min(t)).
    """
    y_floor = upload_s * min_share(
        block.bits, upload_s, block.p_max_w, block.snr_per_w, block.bandwidth_hz
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(weight > 0.0, price / weight, np.inf)
    y = np.where(
        np.isfinite(ratio),
        best_product_s(
            block.bits,
            upload_s,
            np.where(np.isfinite(ratio), ratio, 1.0),
            block.snr_per_w,
            block.bandwidth_hz,
        ),
        0.0,
    )
    y = np.maximum(y, y_floor)
    energy = block.compute_energy_j(deadline_s - upload_s) + upload_energy_j(
        block.bits, y, block.snr_per_w, block.bandwidth_hz
    )
    with np.errstate(invalid="ignore"):
        value = np.where(weight > 0.0, weight * energy, 0.0) + price * y / upload_s
    return value, y


def split_slope(
    block: ClientBlock,
    deadline_s: float,
    upload_s: _FloatArray,
    price: _FloatArray,
    weight: _FloatArray,
) -> _FloatArray:
    """(K,) d value / d t of :func:`split_value` at upload time t: 2 w kappa C^3 / tau^3 plus
    :func:`upload_slope` (tau = deadline - t). Increasing in t (the value is convex)."""
    return split_slope_and_curvature(block, deadline_s, upload_s, price, weight)[0]


def split_slope_and_curvature(
    block: ClientBlock,
    deadline_s: float,
    upload_s: _FloatArray,
    price: _FloatArray,
    weight: _FloatArray,
) -> tuple[_FloatArray, _FloatArray]:
    """(K,) :func:`split_slope` and its derivative in t [J/s^2] (>= 0): 6 w kappa C^3 / tau^4
    plus h''(t) of :func:`upload_slope_and_curvature`."""
    with np.errstate(divide="ignore", invalid="ignore"):
        cubed = np.where(block.cycles > 0.0, weight * block.kappa * block.cycles**3, 0.0)
        tau = deadline_s - upload_s
        compute, compute_curvature = 2.0 * cubed / tau**3, 6.0 * cubed / tau**4
    slope, curvature = upload_slope_and_curvature(block, upload_s, price, weight)
    return compute + slope, compute_curvature + curvature


def upload_slope(
    block: ClientBlock, upload_s: _FloatArray, price: _FloatArray, weight: _FloatArray
) -> _FloatArray:
    """(K,) h'(t) [J/s] of h(t) = min_y w E_up(y) + price y / t, y >= t b_min(t) (<= 0).

    Free power (y the best product): h' = -price y / t^2 (envelope). Power at its limit
    (y = t b_min(t), E_up = p_max t): h' = w p_max + price b_min'(t) with
    b_min' = -r / (t^2 (ln(1 + a/b) - a / (a + b))), r = ln2 s / B, a = p_max snr (the
    derivative of b ln(1 + a/b) = r / t). Minus this is the multiplier of tau + t <= deadline.
    """
    return upload_slope_and_curvature(block, upload_s, price, weight)[0]


def upload_slope_and_curvature(
    block: ClientBlock, upload_s: _FloatArray, price: _FloatArray, weight: _FloatArray
) -> tuple[_FloatArray, _FloatArray]:
    """(K,) h'(t) of :func:`upload_slope` [J/s] and h''(t) [J/s^2].

    Free power: y = r / z, z = 1 + W_0(q), q = (snr price / (w t) - 1) / e, so with
    dW/dq = 1 / (e^W (1 + W)): y' = r snr (price / w) / (t^2 z^3 e^z) and
    h'' = price (2 y / t^3 - y' / t^2). Power at its limit, x = a / b_min with
    ln(1 + x) / x = c = r / (t a): x' = c x^2 / (t bend), bend = ln(1 + x) - x / (1 + x), and
    h'' = price r (2 / (t^3 bend) + c x^3 / ((1 + x)^2 t^3 bend^3)).
    """
    a = block.p_max_w * block.snr_per_w
    r = LN2 * block.bits / block.bandwidth_hz
    t = upload_s
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        # x = a / b_min(t) of min_share, inline: 1 + x = -W_{-1}(-c e^{-c}) / c, c = r / (t a)
        c = r / (t * a)
        ok = (c > 0.0) & (c < 1.0)  # c >= 1: no share is fast enough (x = 0, slope -inf)
        cc = np.where(ok, c, 0.5)
        arg = np.maximum(-cc * np.exp(-cc), _BRANCH_POINT)
        x = np.where(ok, -_lambertw(arg, -1).real / cc - 1.0, 0.0)
        # the best product of best_product_s, inline: y = r / z, z = 1 + W_0((snr p/(w t) - 1)/e)
        ratio = np.where(weight > 0.0, price / weight, 1.0)
        z = 1.0 + _lambertw((block.snr_per_w * ratio / t - 1.0) / math.e, 0).real
        y_free = r / z
        free = (weight > 0.0) & (y_free * x > t * a)  # above the floor t b_min = t a / x
        bend = np.log1p(x) - x / (1.0 + x)
        limited = weight * block.p_max_w - price * r / (t**2 * bend)
        slope = np.where(free, -price * y_free / t**2, limited)
        dy = r * block.snr_per_w * ratio / (t**2 * z**3 * np.exp(z))
        free_curvature = price * (2.0 * y_free / t**3 - dy / t**2)
        limited_curvature = (price * r / (t**3 * bend)) * (
            2.0 + c * x**3 / ((1.0 + x) ** 2 * bend**2)
        )
        curvature = np.where(free, free_curvature, limited_curvature)
    has_bits = block.bits > 0.0
    return np.where(has_bits, slope, 0.0), np.where(has_bits, curvature, 0.0)


_ROOT_STEPS = 200


def increasing_root(
    fn,
    lo: _FloatArray,
    hi: _FloatArray,
    rtol: float = 1e-11,
    guess: _FloatArray | None = None,
) -> _FloatArray:
    """(K,) roots of K increasing functions on [lo_k, hi_k] (an end point where fn keeps one sign).

    ``fn(x)`` returns (f(x), f'(x)), each (K,). Newton's method in parallel from ``guess`` (a
    neighbouring problem's roots; the middle of the range without one), safeguarded by the
    bracket of the points seen (at first the range, widened by the tolerance so that an end can
    be tried and confirmed): a bisection step where Newton's leaves the bracket, meets a
    non-finite value, or did not halve |f| on the same side of the root (as next to an infinite
    slope at the upload floor, where Newton's steps are tiny but the root is far). Each Newton
    step goes one tolerance (rtol |hi|) further, so that the bracket closes around the root;
    the search stops when every bracket is below two tolerances.
    """
    tol = rtol * np.maximum(np.abs(hi), np.abs(lo))
    a, b = lo - tol, hi + tol
    x = 0.5 * (lo + hi) if guess is None else np.clip(guess, lo, hi)
    neg_last, abs_last = np.zeros(x.size, dtype=bool), np.full(x.size, np.inf)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        for _ in range(_ROOT_STEPS):
            f, slope = fn(x)
            neg = f <= 0.0  # the root lies at or right of x (nan: left, bisect towards lo)
            a, b = np.where(neg, x, a), np.where(neg, b, x)
            if np.all(b - a <= 2.0 * tol):
                break
            newton = np.clip(x - f / slope, lo, hi)
            newton += np.copysign(tol, newton - x)
            abs_f = np.abs(f)
            good = (newton > a) & (newton < b) & ((neg != neg_last) | (abs_f <= 0.5 * abs_last))
            x = np.where(good, newton, 0.5 * (a + b))
            neg_last, abs_last = neg, np.where(good, abs_f, np.inf)
    return np.clip(0.5 * (a + b), lo, hi)


def golden_min(fn, lo: _FloatArray, hi: _FloatArray) -> _FloatArray:
    """(K,) minimisers of K convex 1-D functions on [lo_k, hi_k], golden section in parallel."""
    a, b = lo.copy(), hi.copy()
    x1 = b - _GOLDEN * (b - a)
    x2 = a + _GOLDEN * (b - a)
    f1, f2 = fn(x1), fn(x2)
    for _ in range(_GOLDEN_STEPS):
        left = f1 <= f2  # the minimum lies in [a, x2]
        b = np.where(left, x2, b)
        a = np.where(left, a, x1)
        x_new = np.where(left, b - _GOLDEN * (b - a), a + _GOLDEN * (b - a))
        f_new = fn(x_new)
        x2, f2, x1, f1 = (
            np.where(left, x1, x_new),
            np.where(left, f1, f_new),
            np.where(left, x_new, x2),
            np.where(left, f_new, f2),
        )
    mid = 0.5 * (a + b)
    ends = np.stack([mid, lo, hi])  # a minimum on an end point (monotone fn) is taken exactly
    values = np.nan_to_num(np.stack([fn(mid), fn(lo), fn(hi)]), nan=np.inf)
    return ends[np.argmin(values, axis=0), np.arange(mid.size)]
