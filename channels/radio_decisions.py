"""Transmit power and CPU frequency as per-round decisions: their effect on rate, time, energy.

A controller may choose, per scheduled client k, a transmit power p_k <= P_max,k and a CPU
clock f_k in [f_min,k, f_max,k] (the joint communication-computation decision of Yang et al.,
"Energy efficient federated learning over wireless communication networks", IEEE TWC 2021,
arXiv:1911.02417, eqs. (3)-(5)). The channel is observed at the power-control power p̄_k:

- SNR at power p: SNR_k(p) = SNR_k · p / p̄_k (:func:`snr_at_power`), i.e. the SNR per watt
  SNR_k / p̄_k = g_k / (N0 B) does not depend on p. With the noise over the whole band B (the
  default) the rate on share b_k is b_k B log2(1 + SNR_k(p_k)); with it over the share (Yang
  et al.) b_k B log2(1 + p_k g_k / (N0 b_k B)) = b_k B log2(1 + SNR_k(p_k) / b_k)
  (:func:`channels.fdma.rate_bps`, ``noise_bandwidth``);
- compute time at clock f: the device's sustained speed flops_per_s is reached at f_max, and
  at f it computes at flops_per_s · f / f_max, so the time is FLOPs / (flops_per_s · f / f_max)
  (:func:`compute_delay_at_clock_s`); its CMOS energy is κ f² cycles
  (:class:`channels.energy.CmosEnergy` with ``cpu_hz``).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from channels._validation import as_float_array, scalar_or_array

__all__ = ["compute_delay_at_clock_s", "snr_at_power"]


def snr_at_power(
    snr: ArrayLike, tx_power_w: ArrayLike, reference_power_w: ArrayLike
) -> float | np.ndarray:
    """SNR at transmit power p of a channel observed as ``snr`` at ``reference_power_w`` p̄.

    Input: ``snr`` linear SNR at p̄ (>= 0); ``tx_power_w`` p >= 0 [W]; ``reference_power_w``
    p̄ > 0 [W]; broadcasting.
    Output: SNR · p / p̄ (linear), broadcast shape (float for scalars); exactly ``snr`` where
    p = p̄.
    """
    s = as_float_array("snr", snr, lower=0.0)
    p = as_float_array("tx_power_w", tx_power_w, lower=0.0)
    ref = as_float_array("reference_power_w", reference_power_w, lower=0.0, lower_op=">")
    return scalar_or_array(np.where(p == ref, s, s * (p / ref)))


def compute_delay_at_clock_s(
    flops: ArrayLike, flops_per_s: ArrayLike, cpu_hz: ArrayLike, cpu_hz_max: ArrayLike
) -> float | np.ndarray:
    """Local compute time at clock f of a device whose sustained speed at f_max is flops_per_s.

    Input: ``flops`` >= 0 [FLOP]; ``flops_per_s`` > 0 [FLOP/s] at f_max; ``cpu_hz`` f > 0 and
    ``cpu_hz_max`` f_max > 0 [Hz]; broadcasting.
    Output: FLOPs / (flops_per_s · f / f_max) [s] (float for scalars); exactly
    FLOPs / flops_per_s where f = f_max.
    """
    work = as_float_array("flops", flops, lower=0.0)
    speed = as_float_array("flops_per_s", flops_per_s, lower=0.0, lower_op=">")
    f = as_float_array("cpu_hz", cpu_hz, lower=0.0, lower_op=">")
    f_max = as_float_array("cpu_hz_max", cpu_hz_max, lower=0.0, lower_op=">")
    at_max = work / speed
    return scalar_or_array(np.where(f == f_max, at_max, work / (speed * (f / f_max))))
