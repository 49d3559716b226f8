"""FDMA in one cell of a multi-cell network (``cells``): the uploads go at the rate of their
SINR with the other cells' simultaneous uploads, which the network computes each round
(:mod:`wirelessfl.sim.cell_interference`) and hands this uplink before the uploads
(:meth:`CellFdmaUplink.set_round`).

The controllers plan through the FDMA planners on the interference-free SNR (what an edge
server knows of its own clients; docs/simulator.md, "Many cells"), so ``planned_delay_s``
against ``delay_s`` is what interference costs. Each client's row of ``clients.csv`` gains its
cell, SINR and interference power.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from wirelessfl.uplinks.fdma import FdmaUplink

__all__ = ["CELL_CLIENT_COLUMNS", "CellFdmaUplink"]

#: the columns this uplink adds to clients.csv
CELL_CLIENT_COLUMNS = {
    "cell": "the client's serving cell (cells: the site of least coupling loss)",
    "sinr_db": "SINR of the upload [dB]: its SNR with the other cells' uploads on overlapping "
    "band (cells.interference: false: the SNR); NaN where it did not upload",
    "interference_w": "interference power over the client's band share at its site [W]; NaN "
    "where it did not upload",
}


class CellFdmaUplink(FdmaUplink):
    """FDMA on the cell's band (``channel.bandwidth_hz`` / ``cells.reuse``) whose uploads take
    the SINR :meth:`set_round` gave (module docstring)."""

    def __init__(self, bandwidth_hz: float, noise_bandwidth: str, serving: np.ndarray) -> None:
        super().__init__(bandwidth_hz, noise_bandwidth)
        self.serving = np.asarray(serving, dtype=int)
        self._rate_sinr: dict[int, float] = {}
        self._sinr: dict[int, float] = {}
        self._interference_w: dict[int, float] = {}
        self._pending: np.ndarray | None = None

    @classmethod
    def from_scenario(cls, scenario: Any) -> CellFdmaUplink:
        """The uplink of one cell of ``scenario``'s network (every cell's is alike: the band
        B / reuse and the clients' serving cells)."""
        from wirelessfl.config.cells import network_layout

        ch = scenario.channel
        layout = network_layout(scenario)
        return cls(ch.bandwidth_hz / scenario.cells.reuse, ch.noise_bandwidth, layout.serving)

    def set_round(
        self,
        rate_sinr: dict[int, float],
        sinr: dict[int, float],
        interference_w: dict[int, float],
    ) -> None:
        """The round's uploads, per client: the linear SINR FDMA's rate takes (its band-noise
        form: under ``channel.noise_bandwidth: share`` SINR_k b_k), the SINR and the
        interference power [W]."""
        self._rate_sinr, self._sinr, self._interference_w = rate_sinr, sinr, interference_w

    def prepare_uploads(self, round_index: int, clients: np.ndarray) -> None:
        self._pending = np.asarray(clients, dtype=int)

    def upload_s(
        self, shares: np.ndarray, snr: np.ndarray, bits: np.ndarray, n_values: np.ndarray
    ) -> np.ndarray:
        """The round's uploads (after :meth:`prepare_uploads`) at their SINR; a planner's
        call at the SNR it passes."""
        if self._pending is not None:
            snr = np.array([self._rate_sinr[int(c)] for c in self._pending], dtype=float)
            self._pending = None
        return super().upload_s(shares, snr, bits, n_values)

    def client_columns(self) -> dict[str, str]:
        return dict(CELL_CLIENT_COLUMNS)

    def client_values(self, client: int) -> dict[str, float]:
        sinr = self._sinr.get(client)
        return {
            "cell": int(self.serving[client]),
            "sinr_db": math.nan if sinr is None else 10.0 * math.log10(max(sinr, 1e-300)),
            "interference_w": self._interference_w.get(client, math.nan),
        }
