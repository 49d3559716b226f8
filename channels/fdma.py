"""FDMA uplink rates, shares and upload delays (paper section II-C): the one place they are
computed (``optim``'s solvers and the simulator call these).

Client k on share b_k of the band B with SNR_k = |h_k|²/σ² (σ² = N0 B, the noise of the whole
band) gets, by the noise rule (``channel.noise_bandwidth``, :data:`NOISE_BANDWIDTHS`):

- ``band``: r_k = b_k · B · log2(1 + SNR_k) [bit/s] (the paper's FDMA model: the receiver sees
  the noise of the whole band whatever the share; the SNR per hertz does not grow with a
  narrower share);
- ``share``: r_k = b_k · B · log2(1 + SNR_k / b_k) [bit/s]: the noise N0 b_k B of the share
  alone, so the same power on a narrower share has a higher SNR (Yang et al., "Energy
  efficient federated learning over wireless communication networks", IEEE TWC 2021,
  arXiv:1911.02417, eq. (3)); r_k → 0 as b_k → 0 and r_k = B log2(1 + SNR_k) at b_k = 1.

A client needs D_k = bits_k / r_k [s] to upload. Under ``band`` the equal-delay shares of
eq. (31), b_k ∝ 1 / log2(1 + SNR_k), make every client that sends the same payload finish
together (under ``share`` they have no closed form: ``optim.bandwidth``).

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
    "NOISE_BANDWIDTHS",
    "check_noise_bandwidth",
    "equal_delay_shares",
    "full_band_upload_s",
    "rate_bps",
    "spectral_efficiency",
    "upload_delay_s",
]

_LN2 = math.log(2.0)

#: ``channel.noise_bandwidth``: the noise over the whole band B, or over the client's share b B
NOISE_BANDWIDTHS = ("band", "share")


def check_noise_bandwidth(noise_bandwidth: str) -> str:
    """``noise_bandwidth`` if it is one of :data:`NOISE_BANDWIDTHS`, else ``ValueError``."""
    if noise_bandwidth not in NOISE_BANDWIDTHS:
        raise ValueError(
            f"noise_bandwidth must be one of {', '.join(NOISE_BANDWIDTHS)}, got {noise_bandwidth!r}"
        )
    return noise_bandwidth


def rate_bps(
    share: ArrayLike, bandwidth_hz: float, snr: ArrayLike, *, noise_bandwidth: str = "band"
) -> float | np.ndarray:
    """Shannon rate on an FDMA share [bit/s]: b·B·log2(1 + SNR) (``band``) or
    b·B·log2(1 + SNR / b) (``share``; 0 at b = 0).

    Input: ``share`` b in [0, 1] (sum <= 1 along the last axis), ``snr`` >= 0 linear, the SNR
    on the whole band; broadcast together, e.g. (rounds, clients); ``bandwidth_hz`` B > 0 [Hz];
    ``noise_bandwidth`` one of :data:`NOISE_BANDWIDTHS`.
    Output: float64 rate [bit/s] of the broadcast shape (float for scalar inputs).
    """
    b = check_shares("share", share)
    bw = as_float("bandwidth_hz", bandwidth_hz, lower=0.0, lower_op=">")
    s = as_float_array("snr", snr, lower=0.0)
    return scalar_or_array(_rate(b, bw, s, check_noise_bandwidth(noise_bandwidth)))


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


def _rate(
    share: np.ndarray, bandwidth_hz: float, snr: np.ndarray, noise_bandwidth: str = "band"
) -> np.ndarray:
    """b·B·log2(1 + SNR) (``band``) or b·B·log2(1 + SNR / b) (``share``) on validated inputs."""
    if noise_bandwidth == "band":
        out = np.log1p(snr)
        out *= bandwidth_hz / _LN2
        return out * share
    share, snr = np.broadcast_arrays(share, snr)
    with np.errstate(divide="ignore", invalid="ignore"):
        per_share = np.log1p(np.divide(snr, share, out=np.zeros(share.shape), where=share > 0))
    return share * per_share * (bandwidth_hz / _LN2)


def upload_delay_s(
    bits: ArrayLike,
    share: ArrayLike,
    bandwidth_hz: float,
    snr: ArrayLike,
    *,
    scheduled: ArrayLike | None = None,
    noise_bandwidth: str = "band",
) -> float | np.ndarray:
    """Upload delay bits / r [s], r the rate of :func:`rate_bps` under ``noise_bandwidth``
    (see the module docstring for 0 and inf).

    Input: ``bits`` >= 0 (payload per client); ``share`` b in [0, 1] (sum <= 1 along the last
    axis); ``snr`` >= 0 linear (whole band); ``scheduled`` bool (default ``share > 0``); all
    broadcast together, e.g. (rounds, clients); ``bandwidth_hz`` B > 0 [Hz];
    ``noise_bandwidth`` one of :data:`NOISE_BANDWIDTHS`.
    Output: float64 delay [s] of the broadcast shape: 0 for unscheduled clients, ``inf`` for
    scheduled clients with zero rate and a non-zero payload.
    """
    bits_a = as_float_array("bits", bits, lower=0.0)
    b = check_shares("share", share)
    bw = as_float("bandwidth_hz", bandwidth_hz, lower=0.0, lower_op=">")
    snr_a = as_float_array("snr", snr, lower=0.0)
    rate = _rate(b, bw, snr_a, check_noise_bandwidth(noise_bandwidth))
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
