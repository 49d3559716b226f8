"""FDMA bandwidth shares for the scheduled clients.

Client k on share b_k of the band B [Hz] uploads at b_k B log2(1 + SNR_k) [bit/s] (paper
section II-C). Two allocations:

- :func:`equal_delay_bandwidth`: eq. (31), b_k proportional to 1 / log2(1 + SNR_k), which gives
  every scheduled client the same upload delay when they send the same number of bits (SOFT's
  payload is v O r (d + l) for everyone);
- :func:`minmax_bandwidth`: the shares that minimise the round's completion time
  max_k (c_k + bits_k / (b_k B log2(1 + SNR_k))) for heterogeneous compute times c_k and payloads.

Both take the noise rule (``noise_bandwidth``, ``channels.NOISE_BANDWIDTHS``): ``band`` (the
default, the rates above) or ``share``, the rate b_k B log2(1 + SNR_k / b_k) with the noise
over the share; there the shares have no closed form and :mod:`optim.noise_share` finds them
by safeguarded Newton (equal-delay shares then depend on the payloads and B, not only on the
SNRs).

Conventions: a scheduled client with SNR <= 0 and a positive payload can never finish, so both
functions raise :class:`ValueError` for it (the simulator filters outage clients before calling);
in :func:`minmax_bandwidth` a client with zero bits gets a zero share whatever its SNR.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from channels.fdma import (
    check_noise_bandwidth,
    equal_delay_shares,
    full_band_upload_s,
    spectral_efficiency,
)
from optim._validation import check_nonneg_array, check_real, check_snr
from optim.noise_share import deadline_shares

__all__ = ["completion_times_s", "equal_delay_bandwidth", "minmax_bandwidth", "minmax_deadline_s"]


def equal_delay_bandwidth(
    snr: ArrayLike,
    *,
    bits: ArrayLike | None = None,
    bandwidth_hz: float | None = None,
    noise_bandwidth: str = "band",
) -> NDArray[np.float64]:
    """Equal-delay shares: every client's upload of ``bits`` ends together.

    ``band``: eq. (31), b_k = (1 / log2(1 + SNR_k)) / sum_j 1 / log2(1 + SNR_j) (equal
    payloads; ``bits`` and ``bandwidth_hz`` are not needed). ``share``: the shares b_k(D) with
    bits_k = D B b_k log2(1 + SNR_k / b_k) and sum_k b_k(D) = 1 (:mod:`optim.noise_share`;
    the sum to 1e-12, every delay equal to a relative ~1e-12).

    Args:
        snr: (K,) linear SNRs (whole band) of the scheduled clients, finite and > 0.
        bits: (K,) or scalar payload [bit], > 0 (``share`` only).
        bandwidth_hz: total band B [Hz], > 0 (``share`` only).
        noise_bandwidth: ``band`` or ``share``.

    Returns:
        (K,) shares in (0, 1] summing to 1.

    Raises:
        ValueError: if ``snr`` is not a non-empty 1-D array of finite positive values, an
            unknown rule, or ``share`` without positive ``bits`` and ``bandwidth_hz``.
    """
    s = check_snr("snr", snr)
    if check_noise_bandwidth(noise_bandwidth) == "band":
        return equal_delay_shares(s)
    if bits is None or bandwidth_hz is None:
        raise ValueError("noise_bandwidth 'share' needs bits and bandwidth_hz (no closed form)")
    payload = np.broadcast_to(np.asarray(bits, dtype=np.float64), s.shape)
    if not np.all(check_nonneg_array("bits", payload, length=s.size) > 0.0):
        raise ValueError("bits must be > 0 for every client under noise_bandwidth 'share'")
    bw = check_real("bandwidth_hz", bandwidth_hz, low=0.0, low_open=True)
    return deadline_shares(np.zeros(s.size), payload, s, bw)[0]


def completion_times_s(
    *,
    compute_s: ArrayLike,
    bits: ArrayLike,
    snr: ArrayLike,
    bandwidth_hz: float,
    shares: ArrayLike,
    noise_bandwidth: str = "band",
) -> NDArray[np.float64]:
    """Per-client completion times c_k + bits_k / r_k [s], r_k = b_k B log2(1 + SNR_k)
    (``band``) or b_k B log2(1 + SNR_k / b_k) (``share``).

    Args:
        compute_s: (K,) or scalar compute time before the upload starts [s], >= 0.
        bits: (K,) payload [bit], >= 0.
        snr: (K,) linear SNRs, >= 0.
        bandwidth_hz: total band B [Hz], > 0.
        shares: (K,) bandwidth shares b_k, >= 0.
        noise_bandwidth: ``band`` or ``share`` (``channels.NOISE_BANDWIDTHS``).

    Returns:
        (K,) completion times [s]; c_k for zero-bit clients, inf where bits > 0 but the share or
        the SNR is 0.
    """
    b = check_nonneg_array("bits", bits)
    k = b.size
    c = _compute_array(compute_s, k)
    s = check_snr("snr", snr, length=k, strictly_positive=False)
    sh = check_nonneg_array("shares", shares, length=k)
    bw = check_real("bandwidth_hz", bandwidth_hz, low=0.0, low_open=True)
    if check_noise_bandwidth(noise_bandwidth) == "band":
        rate = sh * bw * spectral_efficiency(s)
    else:  # b B log2(1 + SNR / b), 0 at b = 0
        per_hz = np.divide(s, sh, out=np.zeros(k), where=sh > 0.0)
        rate = sh * bw * spectral_efficiency(per_hz)
    with np.errstate(divide="ignore", invalid="ignore"):
        upload = np.where(b > 0.0, b / rate, 0.0)
    return c + upload


def _compute_array(compute_s: ArrayLike, k: int) -> NDArray[np.float64]:
    c = np.asarray(compute_s, dtype=np.float64)
    if c.ndim == 0:
        c = np.full(k, float(c))
    return check_nonneg_array("compute_s", c, length=k)


def _minmax(
    compute_s: ArrayLike,
    bits: ArrayLike,
    snr: ArrayLike,
    bandwidth_hz: float,
    noise_bandwidth: str = "band",
) -> tuple[NDArray[np.float64], float]:
    b = check_nonneg_array("bits", bits)
    k = b.size
    c = _compute_array(compute_s, k)
    s = check_snr("snr", snr, length=k, strictly_positive=False)
    bw = check_real("bandwidth_hz", bandwidth_hz, low=0.0, low_open=True)
    active = b > 0.0
    if not np.any(active):
        raise ValueError("bits must have at least one positive entry (nobody to give bandwidth to)")
    if np.any(s[active] <= 0.0):
        i = int(np.flatnonzero(active & (s <= 0.0))[0])
        raise ValueError(
            f"snr must be > 0 for every client with bits > 0 (it could never finish); got "
            f"{s[i]!r} at index {i}"
        )
    ca = c[active]
    if check_noise_bandwidth(noise_bandwidth) == "share":
        shares = np.zeros(k)
        shares[active], deadline_s = deadline_shares(ca, b[active], s[active], bw)
        return shares, deadline_s
    # w_k = bits_k / (B log2(1 + SNR_k)): the upload time on the whole band [s].
    w = full_band_upload_s(b[active], bw, s[active])
    # b_k(T) = w_k / (T - c_k); find T with S(T) = sum_k b_k(T) = 1 on T > max c_k. S is convex
    # and decreasing there, and h(T) = 1 / S(T) - 1 is concave and increasing (1/S is the
    # "parallel sum" of the linear (T - c_k) / w_k), and exactly linear when all c_k are equal.
    # Newton on a concave increasing h started left of the root never overshoots: the iterates
    # rise monotonically to T*. Start: at T = max_k(c_k + w_k) one term alone is >= 1, so S >= 1
    # (left of the root); T = max c_k + sum w_k has S <= 1 (right of it) and caps the bracket.
    lo = float(np.max(ca + w))
    hi = float(np.max(ca) + np.sum(w))
    t = lo
    for _ in range(200):
        gaps = t - ca
        terms = w / gaps
        s_val = float(terms.sum())
        if s_val <= 1.0:
            hi = t
            if s_val == 1.0:
                break
        else:
            lo = t
        # Newton on h: h / h' = (1/S - 1) S^2 / D = S (1 - S) / D, with D = -S'(T) = sum w/gap^2
        d = float((terms / gaps).sum())
        t_new = t - s_val * (1.0 - s_val) / d
        if not (lo <= t_new <= hi) or not math.isfinite(t_new):
            t_new = 0.5 * (lo + hi)  # safeguard (round-off only): bisect the bracket
        if abs(t_new - t) <= 1e-15 * abs(t):
            t = t_new
            break
        t = t_new
    shares = np.zeros(k)
    alloc = w / (t - ca)
    shares[active] = alloc / alloc.sum()  # renormalise away the last round-off: sum(b) = 1
    return shares, t


def minmax_bandwidth(
    *,
    compute_s: ArrayLike,
    bits: ArrayLike,
    snr: ArrayLike,
    bandwidth_hz: float,
    noise_bandwidth: str = "band",
) -> NDArray[np.float64]:
    """Shares minimising the round time max_k (c_k + bits_k / (b_k B log2(1 + SNR_k))).

    s.t. sum_k b_k = 1, b_k >= 0. At the optimum every client with bits > 0 finishes at the same
    deadline T*, b_k = bits_k / ((T* - c_k) B log2(1 + SNR_k)), and T* is the root of
    sum_k b_k(T) = 1 on T > max c_k, found to machine precision by Newton's method on the
    concave 1/S(T) - 1 (monotone from the left, ~5 iterations; a bracket with bisection guards
    against round-off). With ``noise_bandwidth = share`` the rate is b_k B log2(1 + SNR_k /
    b_k), still increasing in b_k, so the optimum again has every client finish at T*, now
    b_k = b_k(T* - c_k) of :func:`optim.noise_share.share_for_upload` (sum to 1e-12).

    Args:
        compute_s: (K,) or scalar compute time of each client before its upload [s], >= 0.
        bits: (K,) payload of each client [bit], >= 0; clients with 0 bits get share 0.
        snr: (K,) linear SNRs, >= 0 (must be > 0 where bits > 0).
        bandwidth_hz: total band B [Hz], > 0.
        noise_bandwidth: ``band`` or ``share`` (``channels.NOISE_BANDWIDTHS``).

    Returns:
        (K,) shares summing to 1.

    Raises:
        ValueError: malformed arrays, a client with bits > 0 and SNR 0, all bits 0, B <= 0,
            an unknown rule.
    """
    return _minmax(compute_s, bits, snr, bandwidth_hz, noise_bandwidth)[0]


def minmax_deadline_s(
    *,
    compute_s: ArrayLike,
    bits: ArrayLike,
    snr: ArrayLike,
    bandwidth_hz: float,
    noise_bandwidth: str = "band",
) -> float:
    """The optimal round time T* [s] of :func:`minmax_bandwidth` (same arguments).

    Counts only clients with bits > 0; a zero-bit client with a longer compute time c_k would
    make the round last max(T*, c_k) under any allocation.
    """
    return _minmax(compute_s, bits, snr, bandwidth_hz, noise_bandwidth)[1]
