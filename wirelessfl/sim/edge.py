"""One cell of a network as its edge server's simulator takes it (:mod:`wirelessfl.sim.network`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from wirelessfl.sim.channel_process import ChannelProcess
from wirelessfl.uplinks.base import Uplink

__all__ = ["EdgeCell"]


@dataclass
class EdgeCell:
    """The network's channel (one for all cells: each round's draws are made once), the
    cell's clients ``members`` (ascending global ids, the only ones its server schedules), its
    uplink (:class:`~wirelessfl.uplinks.fdma_cells.CellFdmaUplink`) and
    ``interference_factor``, the 1 + I/N0 its controller plans with (it decides on SNR / factor;
    1: the interference-free SNR)."""

    channel: ChannelProcess
    members: np.ndarray
    uplink: Uplink
    interference_factor: float = 1.0
