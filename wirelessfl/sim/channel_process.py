"""Per-round SNRs for all N clients, drawn block by block from a ``channels.Cell``.

Draws depend only on (seed, client, block), so any round can be reproduced; time-correlated
fading continues each block from the previous block's last row, regenerating earlier blocks
when a resumed run starts mid-way.
"""

from __future__ import annotations

import numpy as np

from channels import Cell
from wirelessfl.errors import SimulationError


class ChannelProcess:
    """``snr(t)`` → (N,) linear SNR of round t."""

    def __init__(self, cell: Cell, block_rounds: int):
        self.cell = cell
        self.block_rounds = block_rounds
        # time-correlated models continue each block from the previous one's last row
        self.correlated = bool(getattr(cell.fading, "time_correlated", False))
        self._block = -1
        self._snr: np.ndarray | None = None
        self._last: np.ndarray | None = None

    def _draw(self, block: int, initial: np.ndarray | None) -> None:
        snr, last = self.cell.snr_block(block, self.block_rounds, initial=initial)
        if not np.all(np.isfinite(snr)):
            raise SimulationError(f"channel: non-finite SNR drawn in block {block}")
        self._block, self._snr, self._last = block, snr, last

    def snr(self, round_index: int) -> np.ndarray:
        block, row = divmod(round_index, self.block_rounds)
        if block != self._block:
            if not self.correlated:
                self._draw(block, None)
            else:
                if block < self._block:
                    self._block, self._last = -1, None
                while self._block < block:
                    self._draw(self._block + 1, self._last)
        assert self._snr is not None
        return self._snr[row]
