"""Sionna SYS's PUSCH block error rate tables as numpy arrays (the ``nr`` extra,
``sionna-no-rt``), read once per process and MCS table.

Sionna's ``sionna.sys.PHYAbstraction`` loads link-level BLER curves (LDPC, PUSCH, MCS 3-27 of
each TS 38.214 MCS table, code blocks of 24-2,000 bits, SINR -5...20 dB on AWGN) and
interpolates them at load on a grid of SINR (-5...30 dB, 0.1 dB) and code block size
(24...8,448 bits, 100 bits); its ``get_bler`` then reads the grid point nearest to an input
(``round((x - min) / step)``, clamped to the grid, in float32). :class:`BlerTables` holds that
grid for one MCS table and reads it the same way, so every BLER the NR uplink uses is the one
``PHYAbstraction`` returns at the same (MCS, code block size, SINR) (a test compares them); an
MCS without a table is +inf, as in Sionna (a certain NACK, skipped by link adaptation). One
departure: below the grid's lowest SINR (-5 dB), where Sionna reads the -5 dB point (so a
client at -30 dB decodes as one at -5 dB), :meth:`BlerTables.snr_index` gives the index
``n_snr``, one past the grid, where the link tables hold a certain loss.

Sionna is imported only by :func:`pusch_bler_tables` (4-16 s the first time), with one torch
thread while it runs (two were ten times slower here); the thread count is restored after.
"""

from __future__ import annotations

import functools
import importlib.metadata
from dataclasses import dataclass

import numpy as np

__all__ = ["BlerTables", "SionnaMissingError", "pusch_bler_tables", "sionna_version"]

#: the package of the ``nr`` extra
SIONNA_PACKAGE = "sionna-no-rt"
#: Sionna's category index of the PUSCH tables (0: PUSCH, 1: PDSCH)
PUSCH_CATEGORY = 0


class SionnaMissingError(ImportError):
    """The ``nr`` extra (``sionna-no-rt``) is not installed."""


def sionna_version() -> str | None:
    """The installed ``sionna-no-rt`` version, without importing it (None: not installed)."""
    try:
        return importlib.metadata.version(SIONNA_PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        return None


@dataclass(frozen=True)
class BlerTables:
    """Sionna's interpolated PUSCH BLER grid of one MCS table.

    ``bler`` (M, n_cbs, n_snr): BLER per MCS index, code block size grid point and SINR grid
    point (+inf: no table for that MCS); the grids are ``snr_db_min + i snr_db_step`` [dB] and
    ``cbs_min + j cbs_step`` [bit]; ``version``: Sionna's; ``eesm_beta`` (M,) the EESM
    parameter beta per MCS index of Sionna's ``EESM`` (None: not read; :mod:`channels.nr_eesm`).
    """

    bler: np.ndarray
    snr_db_min: float
    snr_db_step: float
    cbs_min: float
    cbs_step: float
    version: str
    eesm_beta: np.ndarray | None = None

    @property
    def n_snr(self) -> int:
        """Points of the SINR grid."""
        return int(self.bler.shape[2])

    @property
    def snr_grid_db(self) -> np.ndarray:
        """(n_snr,) the SINR grid [dB]."""
        return self.snr_db_min + self.snr_db_step * np.arange(self.n_snr)

    def snr_index(self, sinr: np.ndarray) -> np.ndarray:
        """(...) int grid indices of linear SINRs (Sionna's ``get_idx_from_grid``: float32 dB,
        nearest point, clamped above the grid), and ``n_snr`` below its lowest point (where
        Sionna clamps to that point; module docstring)."""
        x = np.asarray(sinr, dtype=np.float32)
        with np.errstate(divide="ignore"):
            return self.db_index(np.float32(10.0) * np.log10(x))

    def db_index(self, sinr_db: np.ndarray) -> np.ndarray:
        """(...) int grid indices of SINRs [dB] (as :meth:`snr_index`)."""
        db = np.asarray(sinr_db, dtype=np.float32)
        idx = np.round((db - np.float32(self.snr_db_min)) / np.float32(self.snr_db_step))
        n = self.n_snr  # below the grid (and NaN, from SINR 0) -> n; above it -> n - 1
        return np.where((idx < 0) | np.isnan(idx), n, np.minimum(idx, n - 1)).astype(np.intp)

    def cbs_index(self, cb_size_bits: int) -> int:
        """The grid index of a code block size [bit] (nearest point, clamped)."""
        idx = round((np.float32(cb_size_bits) - np.float32(self.cbs_min)) / self.cbs_step)
        return int(min(max(idx, 0), self.bler.shape[1] - 1))


def _import_sionna():
    try:
        import torch
        from sionna.sys import EESM, PHYAbstraction
    except ImportError as err:
        raise SionnaMissingError(
            f"{SIONNA_PACKAGE} is not installed ({err}); pip install 'wirelessfl[nr]'"
        ) from None
    return torch, PHYAbstraction, EESM


@functools.cache
def pusch_bler_tables(mcs_table: int) -> BlerTables:
    """The PUSCH BLER grid of TS 38.214 MCS table ``mcs_table`` (1 or 2) from Sionna's
    ``PHYAbstraction`` (cached per process). :class:`SionnaMissingError` without the extra."""
    if mcs_table not in (1, 2):
        raise ValueError(f"mcs_table: 1 or 2, got {mcs_table!r}")
    torch, phy_abstraction, eesm = _import_sionna()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        phy = phy_abstraction(device="cpu")
        grid = phy.bler_table_interp[PUSCH_CATEGORY, mcs_table - 1]
        bler = grid.detach().cpu().numpy().astype(np.float64)
        snr_min, _, snr_step = phy.snr_db_interp_min_max_delta
        cbs_min, _, cbs_step = phy.cbs_interp_min_max_delta
        beta = eesm(device="cpu").beta_tensor[mcs_table - 1].detach().cpu().numpy()
    finally:
        torch.set_num_threads(threads)
    return BlerTables(
        bler=bler,
        snr_db_min=float(snr_min),
        snr_db_step=float(snr_step),
        cbs_min=float(cbs_min),
        cbs_step=float(cbs_step),
        version=sionna_version() or "unknown",
        eesm_beta=beta.astype(np.float64)[: bler.shape[0]],
    )
