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

Policy ``optimal_fading`` keeps one Lagrange multiplier per device
(:mod:`channels.aircomp_fading`): each round's powers use them, then they move by one dual
step; they are part of the run's checkpoint (:meth:`AirUplink.state`).
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
from channels.aircomp_fading import dual_update, fading_power

__all__ = ["AirUplink"]


@dataclass
class AirUplink:
    """The AirComp policy of a run: ``policy``, ``threshold_snr`` (linear, None: per round),
    ``average_power_w`` (None: none) and ``dual_step`` of ``channel.aircomp``, the band B [Hz],
    and, for ``optimal_fading``, the (N,) multipliers λ_k [1/W] (zero at the start)."""

    policy: str
    threshold_snr: float | None
    bandwidth_hz: float
    average_power_w: float | None = None
    dual_step: float = 0.05
    multiplier_per_w: np.ndarray | None = None

    def __post_init__(self) -> None:
        self.fading = self.policy == "optimal_fading"
        #: the round's mean price λ_k P̄ over the clients in the policy (optimal_fading)
        self._round_price = math.nan

    def start(self, n_clients: int) -> None:
        """Zero multipliers for the N devices (``optimal_fading``; else nothing)."""
        if self.fading:
            self.multiplier_per_w = np.zeros(n_clients)

    def state(self) -> dict:
        """The checkpointed state: the multipliers (empty for the other policies)."""
        if self.multiplier_per_w is None:
            return {}
        return {"aircomp_multiplier_per_w": self.multiplier_per_w.tolist()}

    def restore(self, state: dict) -> None:
        """The multipliers of :meth:`state` (``optimal_fading``; else nothing)."""
        if self.fading:
            self.multiplier_per_w = np.asarray(state["aircomp_multiplier_per_w"], dtype=float)

    def power(
        self,
        snr: np.ndarray,
        peak_power_w: np.ndarray,
        mean_snr: np.ndarray,
        clients: np.ndarray,
    ) -> AirPower:
        """The policy on (k,) SNRs at (k,) peak powers [W] of the devices ``clients`` (k,),
        their (k,) mean SNRs at those powers bounding the received SNR by their average
        power (``truncated``); ``optimal_fading`` then moves the clients' multipliers."""
        if self.fading:
            assert self.multiplier_per_w is not None and self.average_power_w is not None
            lam = self.multiplier_per_w[clients]
            air = fading_power(snr, peak_power_w, lam)
            self._round_price = float(np.mean(lam)) * self.average_power_w
            self.multiplier_per_w[clients] = dual_update(
                lam, air.tx_power_w, self.average_power_w, self.dual_step
            )
            return air
        if self.average_power_w is None or self.threshold_snr is None:
            return air_power(self.policy, snr, peak_power_w, self.threshold_snr)
        eta = average_power_denoising(
            self.threshold_snr, mean_snr, peak_power_w, self.average_power_w
        )
        return truncated_inversion(snr, peak_power_w, self.threshold_snr, eta)

    def upload_s(self, n_values: np.ndarray) -> np.ndarray:
        """(m,) analog transmission times [s] of messages of ``n_values`` dense values."""
        return analog_upload_s(n_values, self.bandwidth_hz)

    def record(self, air: AirPower | None, excluded: int) -> dict[str, float]:
        """The round's AirComp columns (NaN when every scheduled client was in outage), and
        ``aircomp_mean_price`` with ``optimal_fading``."""
        price = {"aircomp_mean_price": math.nan if air is None else self._round_price}
        return {
            "aircomp_mse": math.nan if air is None else air.mse,
            "aircomp_snr_db": (
                10.0 * math.log10(air.denoising)
                if air is not None and air.denoising > 0
                else math.nan
            ),
            "aircomp_excluded": excluded,
        } | (price if self.fading else {})
