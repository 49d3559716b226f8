"""What a round's uploads take on the FDMA band: the shares under which the scheduled clients
finish together, and the planned upload delay. No torch.

With payloads bits_k and spectral efficiencies log2(1 + SNR_k), the shares

    b_k = (bits_k / log2(1 + SNR_k)) / sum_j bits_j / log2(1 + SNR_j)

give every client the same upload time D = sum_j bits_j / (B log2(1 + SNR_j)), the least
possible max_k upload time (any other split lengthens some upload). With equal payloads they
are eq. (31)'s b_k = (1 / log2(1 + SNR_k)) / sum_j 1 / log2(1 + SNR_j), computed as eq. (31)
(``channels.equal_delay_shares``) so that SOFT's shares are the paper's to the last bit.
"""

from __future__ import annotations

import math

import numpy as np

from channels import equal_delay_shares, full_band_upload_s

__all__ = ["finish_together_shares", "planned_upload_s"]


def finish_together_shares(bits: np.ndarray, snr: np.ndarray) -> np.ndarray:
    """(K',) shares under which every client's upload of ``bits`` (K',) [bit] ends together
    (eq. 31 for equal payloads); eq. (31) too when nobody sends anything."""
    bits = np.asarray(bits, dtype=float)
    if bits.size == 0 or bool(np.all(bits == bits[0])) or not bits.any():
        return equal_delay_shares(snr)
    weight = bits / np.log1p(np.asarray(snr, dtype=float))
    return weight / weight.sum()


def planned_upload_s(
    bits: np.ndarray, shares: np.ndarray, bandwidth_hz: float, snr: np.ndarray
) -> float:
    """max_k bits_k / (b_k B log2(1 + SNR_k)) [s], as the simulator times each upload (a client
    sending 0 bits takes 0 s; one with bits and no share never finishes: inf)."""
    bits = np.asarray(bits, dtype=float)
    if bits.size == 0:
        return 0.0
    shares = np.asarray(shares, dtype=float)
    full_band = full_band_upload_s(bits, bandwidth_hz, snr)  # bits / (B log2(1 + SNR))
    upload = np.divide(full_band, shares, out=np.full(bits.size, math.inf), where=shares > 0)
    upload[bits == 0.0] = 0.0
    return float(upload.max())
