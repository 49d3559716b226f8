"""How far the NR uplink's link is from Shannon's: per MCS, and per SINR as a fraction of the
FDMA uplink's rate. Numpy only; the BLER grid comes in as a :class:`~channels.nr_bler.BlerTables`.

* :func:`mcs_shannon_gap`: an MCS of spectral efficiency Q_m R [bit per resource element]
  needs SINR 2^(Q_m R) - 1 by Shannon; its BLER curve (at one code block size) falls to the
  BLER target at a higher SINR; the gap is their ratio [dB].
* :func:`goodput_fraction_of_shannon`: the expected goodput of ``n_prb`` PRBs at ILLA's MCS with
  HARQ (:meth:`channels.nr_link.LinkTable.goodput_bits_per_slot`, per slot duration) over the
  Shannon rate of the same bandwidth, 12 n_PRB subcarriers x Δf x log2(1 + SINR). It counts
  every departure at once: DMRS and the 156-element cap, the MCS ladder, the BLER target and
  HARQ, the tables' code.
"""

from __future__ import annotations

import numpy as np

from channels.nr_bler import BlerTables
from channels.nr_link import HarqSettings, link_table
from channels.nr_tbs import MCS_TABLES, mcs

__all__ = ["goodput_fraction_of_shannon", "mcs_shannon_gap"]

SUBCARRIERS_PER_PRB = 12
#: HARQ as the NR uplink's defaults (4 transmissions, Chase combining)
DEFAULT_HARQ = HarqSettings()


def mcs_shannon_gap(
    grid: BlerTables, mcs_table: int, cb_size_bits: int, bler_target: float = 0.1
) -> list[dict[str, float]]:
    """One row per MCS with a BLER table: ``mcs``, ``bits_per_re`` (Q_m R), ``shannon_db``
    (10 log10(2^(Q_m R) - 1)), ``bler_target_db`` (the lowest grid SINR [dB] where the MCS's
    BLER at code blocks of ``cb_size_bits`` is at most ``bler_target``) and ``gap_db``."""
    rows = []
    cbs = grid.cbs_index(cb_size_bits)
    for index in range(min(len(MCS_TABLES[mcs_table]), grid.bler.shape[0])):
        curve = grid.bler[index, cbs]
        meets = np.flatnonzero(np.isfinite(curve) & (curve <= bler_target))
        if not len(meets):
            continue
        q_m, rate = mcs(index, mcs_table)
        shannon_db = 10.0 * np.log10(2.0 ** (q_m * rate) - 1.0)
        needed_db = float(grid.snr_grid_db[meets[0]])
        rows.append(
            {
                "mcs": index,
                "bits_per_re": q_m * rate,
                "shannon_db": float(shannon_db),
                "bler_target_db": needed_db,
                "gap_db": needed_db - float(shannon_db),
            }
        )
    return rows


def goodput_fraction_of_shannon(
    grid: BlerTables,
    n_prb: int,
    sinr_db: np.ndarray,
    *,
    subcarrier_spacing_hz: float,
    slot_s: float,
    mcs_table: int = 1,
    bler_target: float = 0.1,
    harq: HarqSettings = DEFAULT_HARQ,
) -> np.ndarray:
    """(...) NR's expected goodput of ``n_prb`` PRBs at ``sinr_db`` [dB] over Shannon's rate on
    their bandwidth (module docstring); slots of ``slot_s`` [s] at ``subcarrier_spacing_hz``."""
    sinr = 10.0 ** (np.asarray(sinr_db, dtype=float) / 10.0)
    table = link_table(grid, n_prb, mcs_table=mcs_table, bler_target=bler_target)
    goodput_bps = table.goodput_bits_per_slot(sinr, harq) / slot_s
    bandwidth_hz = SUBCARRIERS_PER_PRB * n_prb * subcarrier_spacing_hz
    return goodput_bps / (bandwidth_hz * np.log2(1.0 + sinr))
