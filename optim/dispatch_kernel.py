"""The compiled kernel of the per-dispatch power and clock (docs/solvers.md, "Power and clock
per dispatch"): (D2), (D3) and (D4)'s bisection on the price of delay, per candidate, compiled
by numba like :mod:`optim.joint_kernel` (whose Lambert W it uses). :mod:`optim.dispatch_radio`
validates the inputs, derives the formulas and calls these functions; it imports this module
from inside them, so ``import optim`` does not load numba.
"""

from __future__ import annotations

import math

import numpy as np

from optim.joint_kernel import LN2, clip, jit, lambertw0, minimum

_E = math.e


@jit
def dispatch_clock_1(queue_s, weight, compute_s, cycles, kappa, f_min_hz, f_max_hz) -> float:
    """(D2): argmin over [f_min, f_max] of Q c f_max / f + w kappa C f^2 [Hz]."""
    if weight <= 0.0:
        return f_max_hz  # energy free: the fastest clock
    if cycles <= 0.0:
        return f_min_hz  # no cycles: the clock changes no time, the least energy
    free = np.cbrt(queue_s * compute_s * f_max_hz / (2.0 * weight * kappa * cycles))
    return clip(free if free == free else 0.0, f_min_hz, f_max_hz)


@jit
def dispatch_power_1(queue_s, weight, gain, p_max_w) -> float:
    """(D3): argmin over (0, P_max] of (Q + w p) / log2(1 + gain p) [W]."""
    if weight <= 0.0:
        return p_max_w
    rhs = queue_s * gain / weight - 1.0  # x (ln x - 1) = rhs, x = 1 + gain p
    lw = lambertw0(rhs / _E)
    x = math.exp(1.0 + lw) if abs(rhs) < 1.0 else rhs / lw  # e^(1+W) = rhs / W
    p = (x - 1.0) / gain
    return minimum(p if p == p else math.inf, p_max_w)


@jit
def dispatch_clocks(queue_s, weight, compute_s, cycles, kappa, f_min_hz, f_max_hz, out) -> None:
    """Fill (n,) ``out`` with (D2) per candidate (every argument (n,))."""
    for i in range(out.size):
        out[i] = dispatch_clock_1(
            queue_s[i], weight[i], compute_s[i], cycles[i], kappa[i], f_min_hz[i], f_max_hz[i]
        )


@jit
def dispatch_powers(queue_s, weight, gain, p_max_w, out) -> None:
    """Fill (n,) ``out`` with (D3) per candidate (every argument (n,))."""
    for i in range(out.size):
        out[i] = dispatch_power_1(queue_s[i], weight[i], gain[i], p_max_w[i])


def _compiled_p3():
    """:func:`optim.p3.p3_ratio` (pure float arithmetic) compiled as it stands: one
    implementation of P3's root, which the plain controllers run without numba."""
    from numba.extending import register_jitable  # noqa: PLC0415

    from optim import p3  # noqa: PLC0415

    register_jitable(p3._bisect_phi)  # its safeguard, called from inside
    return jit(p3.p3_ratio)


_p3_ratio = _compiled_p3()
_PRICE_STEPS = 64  # halvings of ln lambda: the bracket [1e-30, 1e30] (138 wide) to 7.5e-18
_LN_PRICE_LO, _LN_PRICE_HI = math.log(1.0e-30), math.log(1.0e30)


@jit
def dispatch_latency_1(
    price,
    v_a,
    o_min,
    per_bits,
    fixed_bits,
    gain,
    snr_per_w,
    share,
    band_hz,
    band_noise,
    p_max_w,
    compute_s,
    cycles,
    kappa,
    f_min_hz,
    f_max_hz,
    weight,
) -> float:
    """The latency [s] that (D1)-(D3) plan for one candidate at the delay price ``price``:
    compute at (D2)'s clock (c f_max / f) plus upload of s(O) bits at (D3)'s power on the
    share (rate b B log2(1 + snr p / b), or / 1 with the noise over the band: ``band_noise``;
    :func:`channels.fdma.rate_bps`), O of P3 with Q c = (price + w p) per_bits / rate."""
    p = dispatch_power_1(price, weight, gain, p_max_w)
    f = dispatch_clock_1(price, weight, compute_s, cycles, kappa, f_min_hz, f_max_hz)
    snr = snr_per_w * p
    rate = share * band_hz * math.log1p(snr if band_noise else snr / share) / LN2
    compute = compute_s if f == f_max_hz else compute_s / (f / f_max_hz)
    per_s = per_bits / rate
    ratio = _p3_ratio((price + weight * p) * per_s, v_a, o_min)
    return compute + fixed_bits / rate + per_s * ratio


@jit
def dispatch_price_1(
    budget_s,
    v_a,
    o_min,
    per_bits,
    fixed_bits,
    gain,
    snr_per_w,
    share,
    band_hz,
    band_noise,
    p_max_w,
    compute_s,
    cycles,
    kappa,
    f_min_hz,
    f_max_hz,
    weight,
) -> float:
    """(D4): the price lambda > 0 of delay whose planned latency is ``budget_s`` (latency falls
    as lambda grows; bisection on ln lambda over [1e-30, 1e30], the upper end where none
    reaches it); 1 where energy is free (full power and clock at any positive price)."""
    if weight <= 0.0:
        return 1.0
    lo, hi = _LN_PRICE_LO, _LN_PRICE_HI
    for _ in range(_PRICE_STEPS):
        mid = 0.5 * (lo + hi)
        latency = dispatch_latency_1(
            math.exp(mid),
            v_a,
            o_min,
            per_bits,
            fixed_bits,
            gain,
            snr_per_w,
            share,
            band_hz,
            band_noise,
            p_max_w,
            compute_s,
            cycles,
            kappa,
            f_min_hz,
            f_max_hz,
            weight,
        )
        if latency > budget_s:
            lo = mid
        else:
            hi = mid
    return math.exp(hi)


@jit
def dispatch_prices(
    budget_s,
    v_a,
    o_min,
    per_bits,
    fixed_bits,
    gain,
    snr_per_w,
    share,
    band_hz,
    band_noise,
    p_max_w,
    compute_s,
    cycles,
    kappa,
    f_min_hz,
    f_max_hz,
    weight,
    out,
) -> None:
    """Fill (n,) ``out`` with (D4)'s price per candidate (:func:`dispatch_price_1`; every
    per-candidate argument (n,))."""
    for i in range(out.size):
        out[i] = dispatch_price_1(
            budget_s,
            v_a[i],
            o_min,
            per_bits[i],
            fixed_bits[i],
            gain[i],
            snr_per_w[i],
            share,
            band_hz,
            band_noise,
            p_max_w[i],
            compute_s[i],
            cycles[i],
            kappa[i],
            f_min_hz[i],
            f_max_hz[i],
            weight[i],
        )
