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
    with np.errstate(divide="ignore", invalid="ignore"):
        compute = np.where(
            block.cycles > 0.0,
            2.0 * weight * block.kappa * block.cycles**3 / (deadline_s - upload_s) ** 3,
            0.0,
        )
    return compute + upload_slope(block, upload_s, price, weight)


def upload_slope(
    block: ClientBlock, upload_s: _FloatArray, price: _FloatArray, weight: _FloatArray
) -> _FloatArray:
    """(K,) h'(t) [J/s] of h(t) = min_y w E_up(y) + price y / t, y >= t b_min(t) (<= 0).

    Free power (y the best product): h' = -price y / t^2 (envelope). Power at its limit
    (y = t b_min(t), E_up = p_max t): h' = w p_max + price b_min'(t) with
    b_min' = -r / (t^2 (ln(1 + a/b) - a / (a + b))), r = ln2 s / B, a = p_max snr (the
    derivative of b ln(1 + a/b) = r / t). Minus this is the multiplier of tau + t <= deadline.
    """
    a = block.p_max_w * block.snr_per_w
    r = LN2 * block.bits / block.bandwidth_hz
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        # x = a / b_min(t) of min_share, inline: 1 + x = -W_{-1}(-c e^{-c}) / c, c = r / (t a)
        c = r / (upload_s * a)
        ok = (c > 0.0) & (c < 1.0)  # c >= 1: no share is fast enough (x = 0, slope -inf)
        cc = np.where(ok, c, 0.5)
        arg = np.maximum(-cc * np.exp(-cc), _BRANCH_POINT)
        x = np.where(ok, -_lambertw(arg, -1).real / cc - 1.0, 0.0)
        # the best product of best_product_s, inline: y = r / z, z = 1 + W_0((snr p/(w t) - 1)/e)
        ratio = np.where(weight > 0.0, price / weight, 1.0)
        z = 1.0 + _lambertw((block.snr_per_w * ratio / upload_s - 1.0) / math.e, 0).real
        y_free = r / z
        free = (weight > 0.0) & (y_free * x > upload_s * a)  # above the floor t b_min = t a / x
        bend = np.log1p(x) - x / (1.0 + x)
        limited = weight * block.p_max_w - price * r / (upload_s**2 * bend)
        slope = np.where(free, -price * y_free / upload_s**2, limited)
    return np.where(block.bits > 0.0, slope, 0.0)


_ROOT_STEPS = 200


def increasing_root(
    fn,
    lo: _FloatArray,
    hi: _FloatArray,
    rtol: float = 1e-11,
    guess: _FloatArray | None = None,
) -> _FloatArray:
    """(K,) roots of K increasing functions on [lo_k, hi_k] (an end point where fn keeps one sign).

    Illinois false position in parallel, with a bisection step whenever false position leaves
    the bracket or meets an infinite slope; stops when every bracket is below rtol |hi|. A
    ``guess`` (a neighbouring problem's roots) starts from a bracket of 0.1 % of the range
    around it where the sign changes there, else from the part of the range beyond it.
    """
    if guess is None:
        a, b = lo.astype(float), hi.astype(float)
        fa, fb = fn(a), fn(b)
    else:
        a, b, fa, fb = _bracket_guess(fn, lo, hi, guess)
    at_hi = ~(fb > 0.0)  # fn <= 0 on the whole range (nan: treated as an end point)
    at_lo = ~at_hi & (fa >= 0.0)
    done = at_hi | at_lo
    side = np.zeros(a.size)
    tol = rtol * np.maximum(np.abs(hi), np.abs(lo))
    for _ in range(_ROOT_STEPS):
        if np.all(done | (b - a <= tol)):
            break
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            x = (a * fb - b * fa) / (fb - fa)
        bad = ~np.isfinite(x) | (x <= a) | (x >= b)
        x = np.where(bad, 0.5 * (a + b), x)
        fx = fn(x)
        right = fx > 0.0  # the root lies left of x
        fa = np.where(right & (side > 0), 0.5 * fa, fa)  # Illinois: an end kept twice
        fb = np.where(~right & (side < 0), 0.5 * fb, fb)
        a, fa = np.where(right, a, x), np.where(right, fa, fx)
        b, fb = np.where(right, x, b), np.where(right, fx, fb)
        side = np.where(right, 1.0, -1.0)
        a = np.where(fx == 0.0, x, a)
        b = np.where(fx == 0.0, x, b)
    root = 0.5 * (a + b)
    return np.where(at_hi, hi, np.where(at_lo, lo, root))


_GUESS_SPAN = 1e-3


def _bracket_guess(fn, lo: _FloatArray, hi: _FloatArray, guess: _FloatArray):
    """(a, b, fn(a), fn(b)) around ``guess``: [g - d, g + d] (d = 0.1 % of hi - lo) where fn
    changes sign there, else [lo, g - d] or [g + d, hi]."""
    span = _GUESS_SPAN * (hi - lo)
    g = np.clip(guess, lo, hi)
    a_try, b_try = np.maximum(g - span, lo), np.minimum(g + span, hi)
    fa_try, fb_try = fn(a_try), fn(b_try)
    below, above = fa_try >= 0.0, ~(fa_try >= 0.0) & ~(fb_try > 0.0)
    end = np.where(below, lo, hi)
    f_end = fn(end)
    a = np.where(below, lo, np.where(above, b_try, a_try))
    b = np.where(below, a_try, np.where(above, hi, b_try))
    fa = np.where(below, f_end, np.where(above, fb_try, fa_try))
    fb = np.where(below, fa_try, np.where(above, f_end, fb_try))
    return a, b, fa, fb


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
