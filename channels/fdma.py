"""FDMA uplink rates, shares and upload delays (paper section II-C): the one place they are
computed (``optim``'s solvers and the simulator call these).

Client k on share b_k of the band B with SNR_k = |h_k|²/σ² gets
r_k = b_k · B · log2(1 + SNR_k) [bit/s] and needs D_k = bits_k / r_k [s] to upload. The
equal-delay shares of eq. (31), b_k ∝ 1 / log2(1 + SNR_k), make every client that sends the
same payload finish together.

Conventions for :func:`upload_delay_s` (the paper: a_k = 0 ⇒ D_k = 0):

- an *unscheduled* client (``scheduled`` False) has delay 0, whatever its share or SNR;
- a *scheduled* client with zero rate (share 0 or SNR 0) has delay ``inf``;
- a scheduled client with 0 bits has delay 0;
- by default ``scheduled = share > 0``: a client without bandwidth is taken as unscheduled.
  Pass ``scheduled`` explicitly to turn "selected but given no bandwidth" into ``inf``.

Shares are checked to lie in [0, 1] and to sum to at most 1 (+1e-9) along the last axis, so
``share`` of shape (rounds, clients) is one allocation per round.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from channels._validation import as_float, as_float_array, check_shares, scalar_or_array

__all__ = [
    "equal_delay_shares",
    "full_band_upload_s",
    "rate_bps",
    "spectral_efficiency",
    "upload_delay_s",
]

_LN2 = math.log(2.0)


def rate_bps(share: ArrayLike, bandwidth_hz: float, snr: ArrayLike) -> float | np.ndarray:
    """Shannon rate on an FDMA share, b·B·log2(1 + SNR) [bit/s].

    Input: ``share`` b in [0, 1] (sum <= 1 along the last axis), ``snr`` >= 0 linear;
    broadcast together, e.g. (rounds, clients); ``bandwidth_hz`` B > 0 [Hz].
    Output: float64 rate [bit/s] of the broadcast shape (float for scalar inputs).
    """
    b = check_shares("share", share)
    bw = as_float("bandwidth_hz", bandwidth_hz, lower=0.0, lower_op=">")
    s = as_float_array("snr", snr, lower=0.0)
    return scalar_or_array(_rate(b, bw, s))


def spectral_efficiency(snr: ArrayLike) -> np.ndarray:
    """log2(1 + SNR) [bit/s/Hz] of linear SNRs (no validation: callers validate).

    Input: ``snr`` >= 0, any shape. Output: float64 array of the same shape.
    """
    return np.log1p(np.asarray(snr, dtype=np.float64)) / _LN2


def full_band_upload_s(bits: ArrayLike, bandwidth_hz: float, snr: ArrayLike) -> np.ndarray:
    """bits / (B log2(1 + SNR)) [s]: the upload time on the whole band (no validation).

    Input: ``bits`` >= 0 and ``snr`` > 0, broadcast together; ``bandwidth_hz`` B > 0 [Hz].
    Output: float64 array of the broadcast shape.
    """
    return np.asarray(bits, dtype=np.float64) / (bandwidth_hz * spectral_efficiency(snr))


def equal_delay_shares(snr: ArrayLike) -> np.ndarray:
    """Eq. (31): b_k = (1 / log2(1 + SNR_k)) / sum_j 1 / log2(1 + SNR_j) (no validation).

    Input: ``snr`` (K,) > 0. Output: (K,) shares summing to 1 (the ln 2 cancels: computed
    from 1 / ln(1 + SNR)).
    """
    inv = 1.0 / np.log1p(np.asarray(snr, dtype=np.float64))
    return inv / inv.sum()


def _rate(share: np.ndarray, bandwidth_hz: float, snr: np.ndarray) -> np.ndarray:
    """b·B·log2(1 + SNR) on validated inputs."""
    out = np.log1p(snr)
    out *= bandwidth_hz / _LN2
    return out * share


def upload_delay_s(
    bits: ArrayLike,
    share: ArrayLike,
    bandwidth_hz: float,
    snr: ArrayLike,
    *,
    scheduled: ArrayLike | None = None,
) -> float | np.ndarray:
    """Upload delay bits / (b·B·log2(1 + SNR)) [s] (see the module docstring for 0 and inf).

    Input: ``bits`` >= 0 (payload per client); ``share`` b in [0, 1] (sum <= 1 along the last
    axis); ``snr`` >= 0 linear; ``scheduled`` bool (default ``share > 0``); all broadcast
    together, e.g. (rounds, clients); ``bandwidth_hz`` B > 0 [Hz].
    Output: float64 delay [s] of the broadcast shape: 0 for unscheduled clients, ``inf`` for
    scheduled clients with zero rate and a non-zero payload.
    """
    bits_a = as_float_array("bits", bits, lower=0.0)
    b = check_shares("share", share)
    bw = as_float("bandwidth_hz", bandwidth_hz, lower=0.0, lower_op=">")
    rate = _rate(b, bw, as_float_array("snr", snr, lower=0.0))
    if scheduled is None:
        sched = b > 0.0
    else:
        sched = np.asarray(scheduled)
        if sched.dtype != np.bool_:
            if not np.isin(sched, (0, 1)).all():
                raise ValueError("scheduled must be boolean (or 0/1), got other values")
            sched = sched.astype(bool)
    with np.errstate(divide="ignore", invalid="ignore"):
        delay = np.asarray(np.divide(bits_a, rate), dtype=np.float64)
    if (bits_a == 0.0).any():
        delay = np.where(bits_a == 0.0, 0.0, delay)
    if not sched.all():
        delay = np.where(sched, delay, 0.0)
    elif sched.shape != delay.shape:
        delay = np.array(np.broadcast_to(delay, np.broadcast_shapes(delay.shape, sched.shape)))
    return scalar_or_array(delay)
