"""One NR PUSCH allocation's link: transport block per MCS, TBLER per MCS and SINR, the MCS
inner-loop link adaptation picks, and the expected goodput with HARQ. Numpy only: the BLER
grid comes in as a :class:`~channels.nr_bler.BlerTables`.

For n PRBs of a slot and each MCS m of the table, the transport block (TBS_m, C_m code blocks,
K'_m bits each) is TS 38.214's (:func:`channels.nr_tbs.transport_block`); the transport block
is lost when one of its code blocks is, so TBLER_m(SINR) = 1 - (1 - BLER_m(K'_m, SINR))^C_m, as
Sionna's ``PHYAbstraction`` computes it. Inner-loop link adaptation (ILLA, Sionna's
``InnerLoopLinkAdaptation``) takes the highest MCS whose TBLER at the SINR is at most the BLER
target, else the lowest MCS that has a table.

HARQ (:func:`harq_cycle`): a transport block is sent up to T = ``max_transmissions`` times at
the MCS of its first transmission; with Chase combining the n-th transmission is decoded at
the sum of the SINRs of the n transmissions so far (linear), without it at its own SINR; a
transmission fails with probability TBLER at that SINR. A block that fails T times is dropped
(its bits stay to send). On a channel constant over the upload (SINR s each slot) the
transmissions of a block are a renewal cycle of expected length E[L] = sum_{n=1..T}
prod_{j<n} q_j slots that delivers TBS with probability 1 - prod_{j<=T} q_j (q_j: the j-th
transmission's TBLER), so the expected goodput is TBS (1 - prod q) / E[L] bits per slot.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from channels.nr_bler import BlerTables
from channels.nr_tbs import MCS_TABLES, transport_block

__all__ = ["HarqSettings", "LinkTable", "harq_cycle", "illa_choice", "link_table"]


@dataclass(frozen=True)
class HarqSettings:
    """HARQ of an NR uplink: ``max_transmissions`` T >= 1 of a block and ``chase`` combining."""

    max_transmissions: int = 4
    chase: bool = True


@dataclass(frozen=True)
class LinkTable:
    """The link of one allocation of ``n_prb`` PRBs.

    ``tbs_bits`` (M,) the transport block size per MCS [bit] (0: no table); ``tbler``
    (M, G + 1) per MCS at the G SINR grid points of ``grid`` and, last, below the grid (1; 1
    too where the MCS has no table); ``illa`` (G + 1,) the MCS inner-loop link adaptation picks
    at each of those points for ``bler_target``.
    """

    n_prb: int
    tbs_bits: np.ndarray
    tbler: np.ndarray
    illa: np.ndarray
    grid: BlerTables

    def goodput_bits_per_slot(self, sinr: np.ndarray, harq: HarqSettings) -> np.ndarray:
        """(...) expected delivered bits per slot on a channel of constant linear ``sinr``
        (module docstring), at the MCS ILLA picks."""
        sinr = np.asarray(sinr, dtype=float)
        mcs = self.illa[self.grid.snr_index(sinr)]
        delivered, slots = harq_cycle(self, mcs, sinr, harq)
        return self.tbs_bits[mcs] * delivered / slots


def link_table(
    grid: BlerTables,
    n_prb: int,
    *,
    mcs_table: int,
    bler_target: float,
    dmrs_re_per_prb: int = 12,
    overhead_re_per_prb: int = 0,
) -> LinkTable:
    """The :class:`LinkTable` of ``n_prb`` >= 1 PRBs at MCS table ``mcs_table`` with DMRS and
    overhead resource elements per PRB (TS 38.214 §5.1.3.2) and ILLA's ``bler_target``."""
    n_mcs = min(len(MCS_TABLES[mcs_table]), grid.bler.shape[0])
    tbs = np.zeros(n_mcs, dtype=np.int64)
    tbler = np.ones((n_mcs, grid.n_snr + 1))  # the last column: below the grid
    for m in range(n_mcs):
        size, blocks, cb_bits = transport_block(
            n_prb,
            m,
            table=mcs_table,
            dmrs_re_per_prb=dmrs_re_per_prb,
            overhead_re_per_prb=overhead_re_per_prb,
        )
        bler = grid.bler[m, grid.cbs_index(cb_bits)]
        if size == 0 or not np.all(np.isfinite(bler)):
            continue
        tbs[m] = size
        tbler[m, :-1] = 1.0 - (1.0 - bler) ** blocks
    available = tbs > 0
    if not available.any():
        raise ValueError(f"MCS table {mcs_table} has no BLER table at {n_prb} PRBs")
    illa = illa_choice(tbler.T, available, bler_target)
    return LinkTable(n_prb, tbs, tbler, illa, grid)


def illa_choice(tbler: np.ndarray, available: np.ndarray, bler_target: float) -> np.ndarray:
    """(...) the MCS inner-loop link adaptation picks from (..., M) TBLERs per MCS and (..., M)
    (or (M,)) MCS with a table: the highest whose TBLER is at most ``bler_target``, else the
    lowest with a table."""
    meets = (tbler <= bler_target) & available
    highest = tbler.shape[-1] - 1 - np.argmax(meets[..., ::-1], axis=-1)
    lowest = np.argmax(np.broadcast_to(available, meets.shape), axis=-1)
    return np.where(meets.any(axis=-1), highest, lowest).astype(np.intp)


def harq_cycle(
    table: LinkTable, mcs: np.ndarray, sinr: np.ndarray, harq: HarqSettings
) -> tuple[np.ndarray, np.ndarray]:
    """(P(delivered), E[slots]) of one block's HARQ cycle at MCS ``mcs`` on a channel of
    constant linear ``sinr`` (same shapes; module docstring)."""
    mcs, sinr = np.broadcast_arrays(np.asarray(mcs), np.asarray(sinr, dtype=float))
    reach = np.ones(sinr.shape)  # P(the n-th transmission happens)
    slots = np.zeros(sinr.shape)
    for n in range(1, harq.max_transmissions + 1):
        slots += reach
        seen = sinr * n if harq.chase else sinr
        reach = reach * table.tbler[mcs, table.grid.snr_index(seen)]
    return 1.0 - reach, slots
