"""Shares when the noise is over the client's own share (``channel.noise_bandwidth: share``).

Client k on share b of the band B [Hz], with whole-band SNR s = SNR_k, uploads at
B h(b) [bit/s] with h(b) = b log2(1 + s / b) (Yang et al., "Energy efficient federated
learning over wireless communication networks", IEEE TWC 2021, arXiv:1911.02417, eq. (3)).

h is increasing and concave on b > 0 (s > 0): with x = s / b,

    h'(b)  = (ln(1 + x) - x / (1 + x)) / ln 2 > 0   (ln(1 + x) > x / (1 + x) for x > 0),
    h''(b) = -s² / (b (b + s)² ln 2) < 0,

h(0+) = 0 and h(1) = log2(1 + s). Hence on [0, 1] the chord lies below: h(b) >= b h(1), so the
share that sends bits_k within D [s], the root b_k(D) of bits_k = D B h(b), is at most the
``band`` share bits_k / (D B log2(1 + s)) (equality at b = 1): noise on the share never needs
more bandwidth. There is no closed form in elementary functions (it is a Lambert-W expression),
so :func:`share_for_upload` finds it by Newton's method: on a concave increasing h, Newton
from the left of the root rises monotonically to it; a bracket [0, band share] with bisection
guards the first steps. :func:`deadline_shares` then finds the common finish time T with
sum_k b_k(T - c_k) = 1 (Newton on T with the same safeguard); with c_k = 0 these are the
equal-delay shares, the ``share`` counterpart of eq. (31).

Tolerances: b_k to a relative 1e-13 (:data:`SHARE_RTOL`); T to 1e-12 in sum_k b_k(T) = 1
(:data:`SUM_TOL`) or to the last bits of T, the residual then given to the largest share so
that the shares sum to 1. Every client ends within ~1e-12 T of T, plus the rounding of
T - c_k.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

__all__ = ["SHARE_RTOL", "SUM_TOL", "deadline_shares", "share_for_upload"]

_LN2 = math.log(2.0)
#: relative tolerance on each client's share b_k(D)
SHARE_RTOL = 1e-13
#: tolerance on sum_k b_k(T) = 1
SUM_TOL = 1e-12
_MAX_ITER = 200


def _h(b: np.ndarray, snr: np.ndarray) -> np.ndarray:
    """h(b) = b log2(1 + s / b) [bit/s/Hz], b > 0."""
    return b * np.log1p(snr / b) / _LN2


def _h_prime(b: np.ndarray, snr: np.ndarray) -> np.ndarray:
    """h'(b) = (ln(1 + s / b) - s / (b + s)) / ln 2 > 0."""
    return (np.log1p(snr / b) - snr / (b + snr)) / _LN2


def share_for_upload(
    bits: NDArray[np.float64],
    snr: NDArray[np.float64],
    bandwidth_hz: float,
    upload_s: NDArray[np.float64] | float,
) -> NDArray[np.float64]:
    """The share b_k in (0, 1] on which ``bits`` take exactly ``upload_s`` under noise on the
    share: the root of bits_k = upload_s_k B b log2(1 + SNR_k / b) (no validation).

    Input: ``bits`` (K,) > 0 [bit]; ``snr`` (K,) > 0 linear (whole band); ``bandwidth_hz`` B > 0
    [Hz]; ``upload_s`` (K,) or scalar > 0 [s], at least each client's whole-band time
    bits_k / (B log2(1 + SNR_k)).
    Output: (K,) shares to a relative :data:`SHARE_RTOL`.

    Raises:
        ValueError: some client cannot send its bits in ``upload_s`` even on the whole band.
    """
    snr = np.asarray(snr, dtype=np.float64)
    upload = np.asarray(upload_s, dtype=np.float64)
    need = np.asarray(bits, dtype=np.float64) / (upload * bandwidth_hz)  # [bit/s/Hz]
    full = np.log1p(snr) / _LN2  # h(1)
    hi = need / full  # the band share: h(hi) >= need by concavity
    if np.any(hi > 1.0 + 1e-12):
        i = int(np.argmax(hi))
        raise ValueError(
            f"client {i} needs {need[i]:g} bit/s/Hz, more than the whole band's {full[i]:g}"
        )
    hi = np.minimum(hi, 1.0)
    lo = np.zeros_like(hi)
    b = hi.copy()
    for _ in range(_MAX_ITER):
        gap = _h(b, snr) - need
        hi = np.where(gap >= 0.0, b, hi)
        lo = np.where(gap <= 0.0, b, lo)
        step = b - gap / _h_prime(b, snr)
        inside = (step > lo) & (step < hi) & np.isfinite(step)
        new = np.where(inside, step, 0.5 * (lo + hi))
        done = np.abs(new - b) <= SHARE_RTOL * b
        b = new
        if done.all():
            break
    return b


def deadline_shares(
    compute_s: NDArray[np.float64],
    bits: NDArray[np.float64],
    snr: NDArray[np.float64],
    bandwidth_hz: float,
) -> tuple[NDArray[np.float64], float]:
    """Shares under which every client ends compute + upload at one time T, and T [s], under
    noise on the share (no validation).

    Input: ``compute_s`` (K,) >= 0 [s] before each upload; ``bits`` (K,) > 0 [bit]; ``snr``
    (K,) > 0 linear (whole band); ``bandwidth_hz`` B > 0 [Hz].
    Output: ((K,) shares summing to 1, T [s]); b_k = b_k(T - c_k) of :func:`share_for_upload`.

    T is bracketed by [max_k (c_k + w_k), max_k c_k + sum_k w_k], w_k = bits_k / (B log2(1 +
    SNR_k)) the whole-band upload time: at the left end the slowest client needs the whole
    band (sum >= 1); at the right end b_k(T - c_k) <= w_k / (T - c_k) <= w_k / sum_j w_j (the
    ``band`` share bounds the ``share`` one), so the sum is <= 1. sum_k b_k(T) decreases in T;
    db_k/dT = -h(b_k) / ((T - c_k) h'(b_k)).
    """
    compute_s = np.asarray(compute_s, dtype=np.float64)
    bits = np.asarray(bits, dtype=np.float64)
    snr = np.asarray(snr, dtype=np.float64)
    w = bits / (bandwidth_hz * np.log1p(snr) / _LN2)
    lo = float(np.max(compute_s + w))
    hi = float(np.max(compute_s) + np.sum(w))
    t = lo
    shares = np.ones_like(w)
    for _ in range(_MAX_ITER):
        upload = np.maximum(t - compute_s, w)  # round-off: never below the whole-band time
        shares = share_for_upload(bits, snr, bandwidth_hz, upload)
        total = float(shares.sum())
        if abs(total - 1.0) <= SUM_TOL:
            break
        if total > 1.0:
            lo = t
        else:
            hi = t
        slope = -float(np.sum(_h(shares, snr) / (upload * _h_prime(shares, snr))))
        t_new = t - (total - 1.0) / slope
        if not (lo < t_new < hi) or not math.isfinite(t_new):
            t_new = 0.5 * (lo + hi)
        if abs(t_new - t) <= 2.0 * np.spacing(t):  # T to the last bits
            break
        t = t_new
    return _absorb_residual(shares), t


def _absorb_residual(shares: NDArray[np.float64]) -> NDArray[np.float64]:
    """The shares with 1 - sum_k b_k added to the largest one, so that they sum to 1.

    Scaling every share by 1 / sum would move each upload by the same relative amount, a
    long upload (a tiny share) by much in seconds; the largest share b_max >= 1 / K moves by a
    relative K |1 - sum| at most, and its upload time by no more (h'(b) b <= h(b), concavity).
    """
    out = shares.copy()
    i = int(np.argmax(out))
    out[i] = 1.0 - (out.sum() - out[i])
    return out
