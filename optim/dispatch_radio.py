"""Power and clock of a dispatched client (docs/solvers.md, "Power and clock per dispatch").
Vectorised over candidates.

A client k dispatched at share b of the band B, with whole-band SNR per watt g_k / (N0 B)
(``snr_per_w``), computes at clock f in [f_min,k, f_max,k] for c_k f_max,k / f seconds
(:func:`channels.radio_decisions.compute_delay_at_clock_s`) at the CMOS energy
kappa_k C_k f^2 [J], and uploads s_k(O) bits at power p in (0, P_max,k] and the rate
b B log2(1 + p snr_per_w / b) (noise over the share, :func:`channels.fdma.rate_bps`). With the
energy weight w_k = omega Z_k + mu [J/J] the per-dispatch step is

    min_{O, p, f}  V gamma_k(O) + Q (c_k f_max / f + u_k(O, p)) + w_k (kappa C f^2 + p u_k(O, p))

and u_k(O, p) = s_k(O) / rate(p) factors into bits times seconds per bit, so the power's part
(Q + w p) s_k(O) / rate(p) is minimised by the same p for every O, and the clock's part does not
involve O at all:

    f_k = clip((Q c_k f_max / (2 w kappa C_k))^(1/3), f_min, f_max)     (f_max where w = 0)  (D2)
    p_k = min(P_max, (x* - 1) / a),  a = snr_per_w / b,
          x* (ln x* - 1) = Q a / w - 1,  x* = exp(1 + W_0((Q a / w - 1) / e))  (P_max at w = 0) (D3)

after which (D1) of :mod:`optim.dispatch` at power p_k, compute time and energy at f_k, and
energy queue w_k is the problem left in O (:func:`solve_dispatch_radio`). (D2), (D3) and (D4)'s
bisection run compiled (:mod:`optim.dispatch_kernel`, numba).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType

import numpy as np
from numpy.typing import ArrayLike, NDArray

from channels.fdma import rate_bps
from channels.radio_decisions import compute_delay_at_clock_s, snr_at_power
from optim._validation import check_real
from optim.dispatch import DispatchSolution, delay_price, solve_dispatch

__all__ = ["DispatchRadioSolution", "dispatch_clock_hz", "dispatch_power_w", "solve_dispatch_radio"]

_FloatArray = NDArray[np.float64]


def _kernel() -> ModuleType:
    """:mod:`optim.dispatch_kernel`, imported on first use (numba loads there)."""
    from optim import dispatch_kernel  # noqa: PLC0415

    return dispatch_kernel


def _nonneg(name: str, value: ArrayLike, *, positive: bool = False) -> _FloatArray:
    arr = np.asarray(value, dtype=float)
    ok = np.isfinite(arr) & ((arr > 0.0) if positive else (arr >= 0.0))
    if not ok.all():
        raise ValueError(f"{name} must hold finite values {'>' if positive else '>='} 0")
    return arr


def dispatch_clock_hz(
    queue_s: float,
    weight: ArrayLike,
    compute_s: ArrayLike,
    cycles: ArrayLike,
    kappa: ArrayLike,
    f_min_hz: ArrayLike,
    f_max_hz: ArrayLike,
) -> _FloatArray:
    """(n,) clocks f_k of (D2) [Hz]: argmin over [f_min, f_max] of
    Q c_k f_max / f + w_k kappa_k C_k f^2 (convex in f > 0).

    Args:
        queue_s: Q >= 0 [s]. weight: w_k >= 0 (energy weight, omega Z_k + mu).
        compute_s: c_k >= 0, the compute time at f_max [s]. cycles: C_k >= 0 [cycle].
        kappa: kappa_k > 0 [J/(cycle Hz^2)]. f_min_hz, f_max_hz: 0 < f_min <= f_max [Hz].
    """
    q = delay_price("queue_s", queue_s)
    w, c, cyc = (
        _nonneg(n, x) for n, x in (("weight", weight), ("compute_s", compute_s), ("cycles", cycles))
    )
    k = _nonneg("kappa", kappa, positive=True)
    lo, hi = (
        _nonneg("f_min_hz", f_min_hz, positive=True),
        _nonneg("f_max_hz", f_max_hz, positive=True),
    )
    columns = _columns(q, w, c, cyc, k, lo, hi)
    out = np.empty(columns[0].shape)
    _kernel().dispatch_clocks(*(col.ravel() for col in columns), out.ravel())
    return out


def dispatch_power_w(
    queue_s: float,
    weight: ArrayLike,
    snr_per_w: ArrayLike,
    share: float,
    p_max_w: ArrayLike,
    noise_bandwidth: str = "share",
) -> _FloatArray:
    """(n,) powers p_k of (D3) [W]: argmin over (0, P_max] of (Q + w_k p) / log2(1 + a_k p),
    a_k = snr_per_w_k / b (quasi-convex: a positive affine over a positive concave function).

    Args:
        queue_s: Q >= 0 [s]; Q = 0 with w_k > 0 has no minimiser (p -> 0): a ValueError.
        weight: w_k >= 0. snr_per_w: g_k / (N0 B) > 0 [1/W]. share: b in (0, 1].
        p_max_w: P_max,k > 0 [W].
        noise_bandwidth: ``share`` (a_k = snr_per_w / b) or ``band`` (rate b B log2(1 + p
            snr_per_w): a_k = snr_per_w, the same problem).
    """
    q = delay_price("queue_s", queue_s)
    b = check_real("share", share, low=0.0, high=1.0, low_open=True)
    w = _nonneg("weight", weight)
    a = _nonneg("snr_per_w", snr_per_w, positive=True) / (b if noise_bandwidth == "share" else 1.0)
    p_max = _nonneg("p_max_w", p_max_w, positive=True)
    q, w, a, p_max = _columns(q, w, a, p_max)
    if ((q == 0.0) & (w > 0.0)).any():
        raise ValueError("queue_s = 0 with an energy weight > 0: (D3) has no minimiser (p -> 0)")
    out = np.empty(q.shape)
    _kernel().dispatch_powers(q.ravel(), w.ravel(), a.ravel(), p_max.ravel(), out.ravel())
    return out


def _columns(*values: ArrayLike) -> list[_FloatArray]:
    """The arguments broadcast together, each a C-contiguous float64 copy."""
    return [np.array(x, dtype=float) for x in np.broadcast_arrays(*values)]


@dataclass(frozen=True, slots=True, eq=False)
class DispatchRadioSolution:
    """(D1)-(D3) solved for n candidates (arrays of shape (n,)).

    Attributes:
        tx_power_w: p_k of (D3) [W]. cpu_hz: f_k of (D2) [Hz].
        compute_s: c_k f_max / f_k [s]. compute_energy_j: kappa_k C_k f_k^2 [J].
        rate_bps: the upload rate at p_k on the share b [bit/s].
        dispatch: (D1) in O at p_k and f_k (:class:`optim.dispatch.DispatchSolution`; its
            objective is the whole per-dispatch objective, energy weight w_k).
    """

    tx_power_w: _FloatArray
    cpu_hz: _FloatArray
    compute_s: _FloatArray
    compute_energy_j: _FloatArray
    rate_bps: _FloatArray
    dispatch: DispatchSolution


def solve_dispatch_radio(
    *,
    queue: float,
    V: float,
    o_min: float,
    offset: ArrayLike,
    a: ArrayLike,
    per_ratio_bits: ArrayLike,
    fixed_bits: ArrayLike,
    snr_per_w: ArrayLike,
    share: float,
    bandwidth_hz: float,
    p_max_w: ArrayLike,
    compute_s: ArrayLike,
    cycles: ArrayLike,
    kappa: ArrayLike,
    f_min_hz: ArrayLike,
    f_max_hz: ArrayLike,
    weight: ArrayLike,
    noise_bandwidth: str = "share",
    empty_queue_budget_s: float | None = None,
) -> DispatchRadioSolution:
    """The per-dispatch step over O, p_k and f_k (module docstring) for n candidates.

    Args:
        queue, V, o_min, offset, a: as :func:`optim.dispatch.solve_dispatch`.
        per_ratio_bits, fixed_bits: s_k(O) = fixed_k + per_ratio_k O [bit].
        snr_per_w, share, p_max_w: as :func:`dispatch_power_w`; bandwidth_hz: B > 0 [Hz].
        compute_s, cycles, kappa, f_min_hz, f_max_hz: as :func:`dispatch_clock_hz`.
        weight: w_k = omega Z_k + mu >= 0.
        noise_bandwidth: ``share`` or ``band`` (:func:`dispatch_power_w`).
        empty_queue_budget_s: D_th [s]; at Q = 0 with a weight > 0 (no minimiser) each
            candidate is planned at the price lambda_k > 0 of delay that makes its planned
            latency D_th (full power and clock where even they take longer): (D4).
    """
    args = {k: v for k, v in locals().items() if k not in ("queue", "empty_queue_budget_s")}
    w = np.asarray(weight, dtype=float)
    if queue > 0.0 or not (w > 0.0).any():
        return _solve_at(queue, **args)
    if empty_queue_budget_s is None:
        raise ValueError("queue = 0 with an energy weight > 0 needs empty_queue_budget_s (D4)")
    budget = check_real("empty_queue_budget_s", empty_queue_budget_s, low=0.0, low_open=True)
    band_noise = noise_bandwidth != "share"
    gain = np.asarray(snr_per_w, dtype=float) / (1.0 if band_noise else share)
    v_a = check_real("V", V, low=0.0) * np.asarray(a, dtype=float)
    check_real("o_min", o_min, low=0.0, high=1.0, low_open=True, high_open=True)
    columns = _columns(
        offset,
        v_a,
        per_ratio_bits,
        fixed_bits,
        gain,
        snr_per_w,
        p_max_w,
        compute_s,
        cycles,
        kappa,
        f_min_hz,
        f_max_hz,
        w,
    )
    _, v_a, per, fixed, gain, snr, *device, w = (col.ravel() for col in columns)
    price = np.empty(w.size)
    _kernel().dispatch_prices(
        budget,
        v_a,
        o_min,
        per,
        fixed,
        gain,
        snr,
        share,
        bandwidth_hz,
        band_noise,
        *device,
        w,
        price,
    )
    return _solve_at(price.reshape(columns[0].shape), **args)


def _solve_at(
    queue: float | _FloatArray,
    *,
    V: float,
    o_min: float,
    offset: ArrayLike,
    a: ArrayLike,
    per_ratio_bits: ArrayLike,
    fixed_bits: ArrayLike,
    snr_per_w: ArrayLike,
    share: float,
    bandwidth_hz: float,
    p_max_w: ArrayLike,
    compute_s: ArrayLike,
    cycles: ArrayLike,
    kappa: ArrayLike,
    f_min_hz: ArrayLike,
    f_max_hz: ArrayLike,
    weight: ArrayLike,
    noise_bandwidth: str,
) -> DispatchRadioSolution:
    """(D1)-(D3) at the delay price ``queue`` > 0 (or (n,), one per candidate), or at Q = 0
    without energy weight."""
    p = dispatch_power_w(queue, weight, snr_per_w, share, p_max_w, noise_bandwidth)
    f = dispatch_clock_hz(queue, weight, compute_s, cycles, kappa, f_min_hz, f_max_hz)
    snr = snr_at_power(snr_per_w, p, 1.0)  # the whole-band SNR at p
    rate = np.asarray(
        rate_bps(share, bandwidth_hz, snr, noise_bandwidth=noise_bandwidth), dtype=float
    )
    c = np.asarray(compute_delay_at_clock_s(compute_s, 1.0, f, f_max_hz), dtype=float)
    e_comp = np.asarray(kappa, dtype=float) * np.asarray(cycles, dtype=float) * f**2
    solution = solve_dispatch(
        queue=queue,
        V=V,
        o_min=o_min,
        offset=offset,
        a=a,
        upload_per_ratio_s=np.asarray(per_ratio_bits, dtype=float) / rate,
        fixed_upload_s=np.asarray(fixed_bits, dtype=float) / rate,
        compute_s=c,
        energy_queue_j=weight,
        tx_power_w=p,
        compute_energy_j=e_comp,
    )
    return DispatchRadioSolution(p, f, c, e_comp, rate, solution)
