"""The synchronous round's over-the-air uplink (``channel.uplink: aircomp``; docs/simulator.md,
"Over-the-air aggregation").

Before training, the server runs the power control policy (``channel.aircomp.policy``,
:mod:`channels.aircomp`) on the scheduled clients it knows can send (not in outage; dropouts
and unavailable clients it learns of only when they stay silent), at their power-control
powers P_k and SNRs q_k. Clients the policy excludes do not train (``excluded`` in
``clients.csv``). The others start their analog transmission together once the last of them
has computed, each sending its message's dense values n_k in n_k / B seconds
(:func:`channels.aircomp.analog_upload_s`) at its policy power p_k, so the round's upload time
does not grow with K. The learner gets each arriving client's received coefficient c_k and the
denoising factor η (:class:`~wirelessfl.learners.base.AirRound`) and adds the receiver noise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from channels.aircomp import (
    AirPower,
    air_power,
    analog_upload_s,
    average_power_denoising,
    truncated_inversion,
)

__all__ = ["AirUplink"]


@dataclass
class AirUplink:
    """The AirComp policy of a run: ``policy``, ``threshold_snr`` (linear, None: per round) and
    ``average_power_w`` (None: none) of ``channel.aircomp``, and the band B [Hz]."""

    policy: str
    threshold_snr: float | None
    bandwidth_hz: float
    average_power_w: float | None = None

    def power(self, snr: np.ndarray, peak_power_w: np.ndarray, mean_snr: np.ndarray) -> AirPower:
        """The policy on (k,) SNRs at (k,) peak powers [W], the clients' (k,) mean SNRs at
        those powers bounding the received SNR by their average power."""
        if self.average_power_w is None or self.threshold_snr is None:
            return air_power(self.policy, snr, peak_power_w, self.threshold_snr)
        eta = average_power_denoising(
            self.threshold_snr, mean_snr, peak_power_w, self.average_power_w
        )
        return truncated_inversion(snr, peak_power_w, self.threshold_snr, eta)

    def upload_s(self, n_values: np.ndarray) -> np.ndarray:
        """(m,) analog transmission times [s] of messages of ``n_values`` dense values."""
        return analog_upload_s(n_values, self.bandwidth_hz)

    @staticmethod
    def record(air: AirPower | None, excluded: int) -> dict[str, float]:
        """The round's AirComp columns (NaN when every scheduled client was in outage)."""
        return {
            "aircomp_mse": math.nan if air is None else air.mse,
            "aircomp_snr_db": (
                10.0 * math.log10(air.denoising)
                if air is not None and air.denoising > 0
                else math.nan
            ),
            "aircomp_excluded": excluded,
        }
