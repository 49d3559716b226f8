"""Large-scale gains over virtual time: client positions, path loss, shadowing, transmit power.

At virtual time τ client k is at distance d_k(τ) from the base station (a mobility model);
its transmit power P_k(τ) [W] and power gain g_k(τ) give the large-scale part of its SNR,

    SNR_k^t = P_k(τ_t) · g_k(τ_t) · |s_k^t|² / σ²,     g_k = 10^{(σ_SF(LoS_k) z_k - PL_k(d_k))/10},

with τ_t the broadcast time of round t, s the small-scale fading and σ² the noise power
(``channels.cell``). Each client draws once, from its own streams: a uniform u_k (stream
``"los"``: LoS while u_k < P_LoS(d_k), so the state changes consistently as it moves) and a
standard normal z_k (stream ``"shadowing"``, the draw ``Cell.from_geometry`` makes): shadowing
follows the client (no spatial decorrelation; docs/simulator.md). The transmit power is fixed,
per device class, or open-loop fractional power control on the path loss including shadowing
(``channels.power_control``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from channels.mobility import MobilityModel, Static
from channels.pathloss_3gpp import PathLossModel
from channels.power_control import PowerControl
from channels.streams import client_generators

__all__ = ["LargeScaleGains", "LargeScaleState"]


@dataclass(frozen=True)
class LargeScaleState:
    """The large-scale channel at one time; every field has shape (N,).

    ``distance_m`` 2-D distance [m]; ``los`` line of sight; ``path_gain`` g_k (path loss and
    shadowing, dimensionless); ``tx_power_w`` P_k [W]; ``power_gain`` P_k · g_k [W].
    """

    distance_m: np.ndarray
    los: np.ndarray
    path_gain: np.ndarray
    tx_power_w: np.ndarray

    @property
    def power_gain(self) -> np.ndarray:
        return self.tx_power_w * self.path_gain


class LargeScaleGains:
    """Large-scale state of N clients at any virtual time (see the module docstring).

    Args:
        path_loss: a ``channels.pathloss_3gpp.PathLossModel``.
        mobility: a ``channels.mobility.MobilityModel`` (its seed and N are the clients').
        power: each client's transmit power (``channels.power_control``).
        client_class: (N,) device class names (``power.kind == "per_class"``), else None.

    Deterministic in (seed, client, time): a static cell is computed once; a moving one at
    each time asked (the mobility model answers any time in any order).
    """

    def __init__(
        self,
        *,
        path_loss: PathLossModel,
        mobility: MobilityModel,
        power: PowerControl,
        client_class: Sequence[str] | None = None,
    ) -> None:
        self.path_loss, self.mobility, self.power = path_loss, mobility, power
        self.client_class = client_class
        n, seed = mobility.n_clients, mobility.seed
        self.los_uniform = np.array(
            [g.random() for g in client_generators(seed, range(n), stream="los")]
        )
        self.shadow_z = np.array(
            [g.standard_normal() for g in client_generators(seed, range(n), stream="shadowing")]
        )
        self._static = self._state(0.0) if isinstance(mobility, Static) else None

    @property
    def n_clients(self) -> int:
        return self.mobility.n_clients

    @property
    def moves(self) -> bool:
        """True when the state changes over time."""
        return self._static is None

    def at(self, time_s: float) -> LargeScaleState:
        """The large-scale state at virtual time ``time_s`` >= 0 [s]."""
        return self._static if self._static is not None else self._state(time_s)

    def _state(self, time_s: float) -> LargeScaleState:
        distance = self.mobility.distances_m(time_s)
        gain, los = self.path_loss.power_gain(distance, self.los_uniform, self.shadow_z)
        tx_w = self.power.watts(-10.0 * np.log10(gain), self.client_class)
        return LargeScaleState(distance, los, gain, tx_w)
