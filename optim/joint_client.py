"""One client's block of the joint power / CPU-frequency / bandwidth problems (docs/solvers.md,
"Joint power, frequency, bandwidth and ratio"). The formulas run compiled, one client at a
time, in :mod:`optim.joint_kernel`; these functions take and give arrays over the clients.

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
from dataclasses import dataclass, field
from types import ModuleType

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "ClientBlock",
    "column",
    "kernel",
    "split_slope",
    "split_slope_and_curvature",
    "split_value",
    "upload_slope",
    "upload_slope_and_curvature",
]

LN2 = math.log(2.0)
_FloatArray = NDArray[np.float64]


def kernel() -> ModuleType:
    """:mod:`optim.joint_kernel`, imported on first use: numba loads there only (0.4-0.7 s
    at start-up, which a run that decides no power or clock does not pay)."""
    from optim import joint_kernel  # noqa: PLC0415

    return joint_kernel


@dataclass(frozen=True, slots=True, eq=False)
class ClientBlock:
    """The per-client data of one round, shape (K,) each, validated by
    :func:`optim.energy_min.client_block`.

    Attributes:
        bits: s_k [bit]. cycles: C_k [cycle]. snr_per_w: g_k / (N0 B) [1/W].
        f_min_hz, f_max_hz: CPU range [Hz]. kappa: [J/(cycle Hz^2)]. p_max_w: [W].
        bandwidth_hz: B [Hz] (a float).
        table: (7, K) the seven arrays stacked, rows in the order above (the kernel's input).
    """

    bits: _FloatArray
    cycles: _FloatArray
    snr_per_w: _FloatArray
    f_min_hz: _FloatArray
    f_max_hz: _FloatArray
    kappa: _FloatArray
    p_max_w: _FloatArray
    bandwidth_hz: float
    table: _FloatArray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        rows = (self.bits, self.cycles, self.snr_per_w, self.f_min_hz, self.f_max_hz)
        table = np.stack([*rows, self.kappa, self.p_max_w]).astype(float)
        object.__setattr__(self, "table", np.ascontiguousarray(table))

    def fastest_compute_s(self) -> _FloatArray:
        """C / f_max [s]."""
        return self.cycles / self.f_max_hz

    def slowest_compute_s(self) -> _FloatArray:
        """C / f_min [s]."""
        return self.cycles / self.f_min_hz

    def upload_floor_s(self) -> _FloatArray:
        """ln2 s / (B p_max snr) [s]: no share sends faster at p_max (b ln(1 + a/b) < a)."""
        return LN2 * self.bits / (self.bandwidth_hz * self.p_max_w * self.snr_per_w)


def column(values: ArrayLike) -> _FloatArray:
    """``values`` as a C-contiguous float64 array (a copy only where needed): the one array
    layout the kernel is compiled for."""
    return np.ascontiguousarray(values, dtype=float)


def _per_client(block: ClientBlock, value: ArrayLike) -> _FloatArray:
    """(K,) float64 copy of a per-client argument (scalars broadcast)."""
    return np.array(np.broadcast_to(np.asarray(value, dtype=float), block.bits.shape))


def split_value(
    block: ClientBlock,
    deadline_s: float,
    upload_s: ArrayLike,
    price: ArrayLike,
    weight: ArrayLike,
) -> tuple[_FloatArray, _FloatArray]:
    """(value, product y) of one client at upload time t (compute time deadline - t), (K,) each.

    value = weight (E_cmp + E_up(y)) + price y / t, with y the least-energy product of the
    stationarity of E_up(y) + (price / weight) y / t: snr E_up'(y) = -((z - 1) e^z + 1) with
    z = ln2 s / (y B) equal to -snr price / (w t), so z = 1 + W_0((snr price / (w t) - 1) / e)
    and y = ln2 s / (B z); raised to the power limit's t b_min(t) (weight 0: y = t b_min(t)).
    b_min(t), the least share that sends s bits in t at p_max: b ln(1 + a / b) = ln2 s / (t B)
    with a = p_max snr, so x = a / b solves ln(1 + x) = c x, c = ln2 s / (t B a) < 1, and
    1 + x = -W_{-1}(-c e^{-c}) / c (c >= 1: no share is fast enough, b_min = inf).
    """
    value, y = np.empty(block.bits.size), np.empty(block.bits.size)
    kernel().split_values(
        block.table,
        block.bandwidth_hz,
        float(deadline_s),
        _per_client(block, upload_s),
        _per_client(block, price),
        _per_client(block, weight),
        value,
        y,
    )
    return value, y


def split_slope(
    block: ClientBlock,
    deadline_s: float,
    upload_s: ArrayLike,
    price: ArrayLike,
    weight: ArrayLike,
) -> _FloatArray:
    """(K,) d value / d t of :func:`split_value` at upload time t: 2 w kappa C^3 / tau^3 plus
    :func:`upload_slope` (tau = deadline - t). Increasing in t (the value is convex)."""
    return split_slope_and_curvature(block, deadline_s, upload_s, price, weight)[0]


def split_slope_and_curvature(
    block: ClientBlock,
    deadline_s: float,
    upload_s: ArrayLike,
    price: ArrayLike,
    weight: ArrayLike,
) -> tuple[_FloatArray, _FloatArray]:
    """(K,) :func:`split_slope` and its derivative in t [J/s^2] (>= 0): 6 w kappa C^3 / tau^4
    plus h''(t) of :func:`upload_slope_and_curvature`."""
    slope, curvature = np.empty(block.bits.size), np.empty(block.bits.size)
    kernel().split_slopes(
        block.table,
        block.bandwidth_hz,
        float(deadline_s),
        _per_client(block, upload_s),
        _per_client(block, price),
        _per_client(block, weight),
        slope,
        curvature,
    )
    return slope, curvature


def upload_slope(
    block: ClientBlock, upload_s: ArrayLike, price: ArrayLike, weight: ArrayLike
) -> _FloatArray:
    """(K,) h'(t) [J/s] of h(t) = min_y w E_up(y) + price y / t, y >= t b_min(t) (<= 0).

    Free power (y the best product): h' = -price y / t^2 (envelope). Power at its limit
    (y = t b_min(t), E_up = p_max t): h' = w p_max + price b_min'(t) with
    b_min' = -r / (t^2 (ln(1 + a/b) - a / (a + b))), r = ln2 s / B, a = p_max snr (the
    derivative of b ln(1 + a/b) = r / t). Minus this is the multiplier of tau + t <= deadline.
    """
    return upload_slope_and_curvature(block, upload_s, price, weight)[0]


def upload_slope_and_curvature(
    block: ClientBlock, upload_s: ArrayLike, price: ArrayLike, weight: ArrayLike
) -> tuple[_FloatArray, _FloatArray]:
    """(K,) h'(t) of :func:`upload_slope` [J/s] and h''(t) [J/s^2].

    Free power: y = r / z, z = 1 + W_0(q), q = (snr price / (w t) - 1) / e, so with
    dW/dq = 1 / (e^W (1 + W)): y' = r snr (price / w) / (t^2 z^3 e^z) and
    h'' = price (2 y / t^3 - y' / t^2). Power at its limit, x = a / b_min with
    ln(1 + x) / x = c = r / (t a): x' = c x^2 / (t bend), bend = ln(1 + x) - x / (1 + x), and
    h'' = price r (2 / (t^3 bend) + c x^3 / ((1 + x)^2 t^3 bend^3)).
    """
    slope, curvature = np.empty(block.bits.size), np.empty(block.bits.size)
    kernel().upload_slopes(
        block.table,
        block.bandwidth_hz,
        _per_client(block, upload_s),
        _per_client(block, price),
        _per_client(block, weight),
        slope,
        curvature,
    )
    return slope, curvature
