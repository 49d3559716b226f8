"""What a round's uploads take on the FDMA band: the shares under which the scheduled clients
finish together, and the planned upload delay. No torch.

With payloads bits_k and spectral efficiencies log2(1 + SNR_k), the shares

    b_k = (bits_k / log2(1 + SNR_k)) / sum_j bits_j / log2(1 + SNR_j)

give every client the same upload time D = sum_j bits_j / (B log2(1 + SNR_j)), the least
possible max_k upload time (any other split lengthens some upload). With equal payloads they
are eq. (31)'s b_k = (1 / log2(1 + SNR_k)) / sum_j 1 / log2(1 + SNR_j), computed as eq. (31)
(``channels.equal_delay_shares``) so that SOFT's shares are the paper's to the last bit.

With the noise over each client's share (``channel.noise_bandwidth: share``) the rate is
b_k B log2(1 + SNR_k / b_k) and the finish-together shares have no closed form: they come from
``optim.minmax_bandwidth`` with no compute time (``optim.noise_share``; every upload ends
within a relative ~1e-12 of the others).
"""

from __future__ import annotations

import math

import numpy as np

from channels import equal_delay_shares, full_band_upload_s
from optim import minmax_bandwidth

__all__ = ["finish_together_shares", "planned_upload_s"]


def finish_together_shares(
    bits: np.ndarray,
    snr: np.ndarray,
    *,
    bandwidth_hz: float | None = None,
    noise_bandwidth: str = "band",
) -> np.ndarray:
    """(K',) shares under which every client's upload of ``bits`` (K',) [bit] ends together
    (eq. 31 for equal payloads under ``band``); eq. (31) too when nobody sends anything.
    ``noise_bandwidth: share`` needs ``bandwidth_hz`` B [Hz] (the shares depend on bits / B)."""
    bits = np.asarray(bits, dtype=float)
    if bits.size == 0 or not bits.any():
        return equal_delay_shares(snr)
    if noise_bandwidth == "share":
        if bandwidth_hz is None:
            raise ValueError("noise_bandwidth 'share' needs bandwidth_hz")
        return minmax_bandwidth(
            compute_s=0.0, bits=bits, snr=snr, bandwidth_hz=bandwidth_hz, noise_bandwidth="share"
        )
    if bool(np.all(bits == bits[0])):
        return equal_delay_shares(snr)
    weight = bits / np.log1p(np.asarray(snr, dtype=float))
    return weight / weight.sum()


def planned_upload_s(
    bits: np.ndarray,
    shares: np.ndarray,
    bandwidth_hz: float,
    snr: np.ndarray,
    *,
    noise_bandwidth: str = "band",
) -> float:
    """max_k bits_k / r_k [s], r_k = b_k B log2(1 + SNR_k) (``band``) or b_k B log2(1 + SNR_k /
    b_k) (``share``), as the simulator times each upload (a client sending 0 bits takes 0 s;
    one with bits and no share never finishes: inf)."""
    bits = np.asarray(bits, dtype=float)
    if bits.size == 0:
        return 0.0
    shares = np.asarray(shares, dtype=float)
    if noise_bandwidth == "share":  # SNR on the share: SNR_k / b_k
        snr = np.divide(snr, shares, out=np.ones(bits.size), where=shares > 0)
    full_band = full_band_upload_s(bits, bandwidth_hz, snr)  # bits / (B log2(1 + SNR))
    upload = np.divide(full_band, shares, out=np.full(bits.size, math.inf), where=shares > 0)
    upload[bits == 0.0] = 0.0
    return float(upload.max())
