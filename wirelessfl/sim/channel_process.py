"""Per-round SNRs and transmit powers of all N clients: the channel the simulator observes.

Three sources (``wirelessfl.sim.setup.build_radio``):

- a ``channels.Cell`` whose large-scale gains are fixed: SNRs drawn block by block;
- a cell whose clients move (``channels.LargeScaleGains``): the block's fading power |s|²
  times the large-scale gain at the round's broadcast time;
- an SNR trace (rounds × clients, dB) read from a file.

Fading draws depend only on (seed, client, block), so any round can be reproduced;
time-correlated fading continues each block from the previous block's last row, regenerating
earlier blocks when a resumed run starts mid-way.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from channels import Cell
from channels.cell_mobility import MovingCells
from channels.large_scale import LargeScaleGains
from wirelessfl.errors import SimulationError


@dataclass(frozen=True)
class Radio:
    """What the channel of a run is made of (built by ``wirelessfl.sim.setup.build_radio``).

    ``cell``: noise, fading and the large-scale gains at time 0 (the controller plans with its
    mean SNR); ``tx_power_w`` (N,) [W] the transmit powers when they do not change;
    ``large_scale``: the gains over time when clients move, else None; ``snr_trace_db``
    (rounds, N) when SNRs come from a file, else None.
    """

    cell: Cell
    tx_power_w: np.ndarray
    large_scale: LargeScaleGains | MovingCells | None = None
    snr_trace_db: np.ndarray | None = None


class ChannelProcess:
    """``observe(t, time_s)`` → ((N,) linear SNR, (N,) transmit power [W]) of round t."""

    def __init__(self, radio: Radio, block_rounds: int):
        self.radio = radio
        self.cell = radio.cell
        self.block_rounds = block_rounds
        # time-correlated models continue each block from the previous one's last row
        self.correlated = bool(getattr(self.cell.fading, "time_correlated", False))
        self._block = -1
        self._rows: np.ndarray | None = None
        self._last: np.ndarray | None = None

    def _draw(self, block: int, initial: np.ndarray | None) -> None:
        if self.radio.large_scale is None:
            rows, last = self.cell.snr_block(block, self.block_rounds, initial=initial)
        else:  # |s|^2 only: the gain is taken at each round's time
            rows, last = self.cell.fading_power_block(block, self.block_rounds, initial=initial)
        if not np.all(np.isfinite(rows)):
            raise SimulationError(f"channel: non-finite SNR drawn in block {block}")
        self._block, self._rows, self._last = block, rows, last

    def _row(self, round_index: int) -> np.ndarray:
        block, row = divmod(round_index, self.block_rounds)
        if block != self._block:
            if not self.correlated:
                self._draw(block, None)
            else:
                if block < self._block:
                    self._block, self._last = -1, None
                while self._block < block:
                    self._draw(self._block + 1, self._last)
        assert self._rows is not None
        return self._rows[row]

    def observe(self, round_index: int, time_s: float) -> tuple[np.ndarray, np.ndarray]:
        """SNRs (linear) and transmit powers [W] of all N clients in round ``round_index``,
        whose broadcast is at virtual time ``time_s``."""
        radio = self.radio
        if radio.snr_trace_db is not None:
            return 10.0 ** (radio.snr_trace_db[round_index] / 10.0), radio.tx_power_w
        if radio.large_scale is None:
            return self._row(round_index), radio.tx_power_w
        state = radio.large_scale.at(time_s)
        snr = self._row(round_index) * (state.power_gain / self.cell.noise_power_w)
        if not np.all(np.isfinite(snr)):
            raise SimulationError(f"channel: non-finite SNR in round {round_index}")
        return snr, state.tx_power_w
