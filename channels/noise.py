"""Thermal noise power of a receiver."""

from __future__ import annotations

from channels._validation import as_float
from channels.units import dbm_to_watt

__all__ = ["THERMAL_NOISE_PSD_DBM_PER_HZ", "noise_power_w"]

#: Thermal noise density kT at T = 290 K, in dBm/Hz (10·log10(1.380649e-23 · 290 / 1e-3)).
THERMAL_NOISE_PSD_DBM_PER_HZ: float = -174.0


def noise_power_w(
    *,
    bandwidth_hz: float,
    noise_psd_dbm_per_hz: float = THERMAL_NOISE_PSD_DBM_PER_HZ,
    noise_figure_db: float = 0.0,
) -> float:
    """AWGN power σ² over a band: PSD × B × NF.

    Input: ``bandwidth_hz`` > 0 [Hz]; ``noise_psd_dbm_per_hz`` [dBm/Hz] (default kT at
    290 K, -174 dBm/Hz); ``noise_figure_db`` >= 0 [dB].
    Output: σ² [W] (e.g. 1 MHz at -174 dBm/Hz, NF 0 dB: 3.98e-15 W).
    """
    b = as_float("bandwidth_hz", bandwidth_hz, lower=0.0, lower_op=">")
    psd = as_float("noise_psd_dbm_per_hz", noise_psd_dbm_per_hz)
    nf = as_float("noise_figure_db", noise_figure_db, lower=0.0)
    return float(dbm_to_watt(psd + nf)) * b
