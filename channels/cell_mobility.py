"""Moving clients in a network of cells: every client-site link's gain over virtual time and
each client's large-scale state at its serving site. Numpy only.

Client k moves as the scenario's mobility model moves it around its home site (the cell it was
dropped in): its position is the home site's plus the model's position at that time (the
model's annulus ``d_min_m`` … ``d_max_m`` around the site; with ``d_max_m`` beyond the
hexagon's circumradius d/√3 the client travels into its neighbours' cells). Distances are taken
with the layout's wrap-around; each link keeps its LoS and shadowing draws as the client moves
(no spatial decorrelation, as the single cell's ``channels.large_scale``). The serving cell is
the caller's (``channels.handover``): :meth:`MovingCells.at` reads the array it is given.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from channels.large_scale import LargeScaleState
from channels.mobility import MobilityModel
from channels.multicell import link_gains
from channels.pathloss_3gpp import PathLossModel
from channels.power_control import PowerControl

__all__ = ["MovingCells"]


class MovingCells:
    """The links of N moving clients to C cells (module docstring).

    ``sites_m`` (C, 2), ``translations_m`` (W, 2) [m] and ``boresight_deg`` (C,) (sectors,
    else None) as the layout's; ``home`` (N,) each client's home cell; ``los_uniform`` and
    ``shadow_z`` (N, C) the links' draws; ``serving`` (N,) the serving cells, read at each
    :meth:`at` (the caller updates it in place).
    """

    moves = True

    def __init__(
        self,
        *,
        sites_m: np.ndarray,
        translations_m: np.ndarray,
        home: np.ndarray,
        mobility: MobilityModel,
        path_loss: PathLossModel,
        los_uniform: np.ndarray,
        shadow_z: np.ndarray,
        power: PowerControl,
        serving: np.ndarray,
        client_class: Sequence[str] | None = None,
        boresight_deg: np.ndarray | None = None,
    ) -> None:
        self.sites_m, self.translations_m = sites_m, translations_m
        self.home, self.mobility, self.path_loss = np.asarray(home, dtype=int), mobility, path_loss
        self.los_uniform, self.shadow_z = los_uniform, shadow_z
        self.power, self.serving, self.client_class = power, serving, client_class
        self.boresight_deg = boresight_deg
        self._cached: tuple[float, np.ndarray, np.ndarray, np.ndarray] | None = None

    def links_at(self, time_s: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """((N, C) distances [m], (N, C) power gains, (N, C) LoS) at virtual time ``time_s``
        [s] (the last time asked is kept)."""
        if self._cached is not None and self._cached[0] == time_s:
            return self._cached[1:]
        positions = self.sites_m[self.home] + self.mobility.positions_m(time_s)
        distances, gain = link_gains(
            positions,
            self.sites_m,
            self.translations_m,
            self.path_loss,
            self.los_uniform,
            self.shadow_z,
            self.boresight_deg,
        )
        los = self.los_uniform < np.asarray(self.path_loss.los_probability(distances))
        self._cached = (time_s, distances, gain, np.asarray(los, dtype=bool))
        return distances, gain, self._cached[3]

    def at(self, time_s: float) -> LargeScaleState:
        """Each client's large-scale state at its serving site at ``time_s`` [s]: distance,
        path gain and the power control's transmit power on that path loss."""
        distances, gain, los = self.links_at(time_s)
        rows = np.arange(len(self.serving))
        path_gain = gain[rows, self.serving]
        tx_w = self.power.watts(-10.0 * np.log10(path_gain), self.client_class)
        return LargeScaleState(
            distances[rows, self.serving], los[rows, self.serving], path_gain, tx_w
        )
