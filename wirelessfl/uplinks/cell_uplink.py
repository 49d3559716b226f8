"""An uplink in one cell of a network (``cells``): the scenario's uplink whose uploads go at
the SINR the network computes each round with the other cells' simultaneous uploads
(:mod:`wirelessfl.sim.cell_interference`), handed over before the uploads
(:meth:`CellInterference.set_round`).

An uplink takes part when its class sets :attr:`~wirelessfl.uplinks.base.Uplink.CELL_RESOURCES`
(``"band"``: its uploads occupy a share of the band and go at a rate of their SINR, as FDMA's and
NR's); the network refuses the others in one line. The controllers plan through the uplink's own
planners on what the network tells them (docs/simulator.md, "Many cells"). Each client's row
of ``clients.csv`` gains its cell, SINR and interference power.
"""

from __future__ import annotations

import math
from functools import cache
from typing import Any

import numpy as np

from wirelessfl.uplinks.base import Uplink

__all__ = ["CELL_CLIENT_COLUMNS", "CellInterference", "cell_uplink", "cell_uplink_class"]

#: the columns a cell's uplink adds to clients.csv
CELL_CLIENT_COLUMNS = {
    "cell": "the client's serving cell (cells: the site of least coupling loss)",
    "sinr_db": "SINR of the upload [dB]: its SNR with the other cells' uploads on overlapping "
    "band (cells.interference: false: the SNR); NaN where it did not upload",
    "interference_w": "interference power over the client's band share at its site [W]; NaN "
    "where it did not upload",
}


class CellInterference:
    """The cell's part of an uplink (a mixin before the uplink's class, module docstring)."""

    serving: np.ndarray
    _rate_sinr: dict[int, float]
    _sinr: dict[int, float]
    _interference_w: dict[int, float]
    _pending: np.ndarray | None

    def attach(self, serving: np.ndarray) -> None:
        """The network's (N,) serving cells, before the first round."""
        self.serving = np.asarray(serving, dtype=int)
        self._rate_sinr, self._sinr, self._interference_w = {}, {}, {}
        self._pending = None

    def set_round(
        self,
        rate_sinr: dict[int, float],
        sinr: dict[int, float],
        interference_w: dict[int, float],
    ) -> None:
        """The round's uploads, per client: the linear SINR the uplink's rate takes (its
        band-noise form: under ``channel.noise_bandwidth: share`` SINR_k b_k), the SINR and the
        interference power [W]."""
        self._rate_sinr, self._sinr, self._interference_w = rate_sinr, sinr, interference_w

    def prepare_uploads(self, round_index: int, clients: np.ndarray) -> None:
        self._pending = np.asarray(clients, dtype=int)
        super().prepare_uploads(round_index, clients)  # type: ignore[misc]

    def upload_s(
        self, shares: np.ndarray, snr: np.ndarray, bits: np.ndarray, n_values: np.ndarray
    ) -> np.ndarray:
        """The round's uploads (after :meth:`prepare_uploads`) at their SINR; a planner's
        call at the SNR it passes."""
        if self._pending is not None:
            snr = np.array([self._rate_sinr[int(c)] for c in self._pending], dtype=float)
            self._pending = None
        return super().upload_s(shares, snr, bits, n_values)  # type: ignore[misc]

    def client_columns(self) -> dict[str, str]:
        return {**super().client_columns(), **CELL_CLIENT_COLUMNS}  # type: ignore[misc]

    def client_values(self, client: int) -> dict[str, float]:
        sinr = self._sinr.get(client)
        return {
            **super().client_values(client),  # type: ignore[misc]
            "cell": int(self.serving[client]),
            "sinr_db": math.nan if sinr is None else 10.0 * math.log10(max(sinr, 1e-300)),
            "interference_w": self._interference_w.get(client, math.nan),
        }


@cache
def cell_uplink_class(uplink: type[Uplink]) -> type:
    """``uplink``'s class in a cell: :class:`CellInterference` before it."""
    return type(f"Cell{uplink.__name__}", (CellInterference, uplink), {})


def cell_uplink(edge_scenario: Any, serving: np.ndarray) -> Uplink:
    """The uplink of one cell, built from its edge scenario (the cell's band) with the
    network's serving cells."""
    from wirelessfl.registries import UPLINKS

    cls = cell_uplink_class(UPLINKS.load(edge_scenario.channel.uplink))
    uplink = cls.from_scenario(edge_scenario)
    uplink.attach(serving)
    return uplink
