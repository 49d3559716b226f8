"""Every allocation size of one NR carrier at once: the :class:`~channels.nr_link.LinkTable` of
n PRBs for each n in 1..N_RB stacked into arrays, filled on demand, so that a slot whose
clients hold different PRB counts reads their transport block sizes and TBLERs in one gather.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from channels.nr_link import LinkTable, illa_choice

__all__ = ["LinkBank"]


class LinkBank:
    """The links of 0..``n_rb`` PRBs of ``table_of`` (n -> its LinkTable; row 0: nothing).

    ``tbs`` (N_RB + 1, M) [bit], ``tbler`` (N_RB + 1, M, G + 1), ``illa`` (N_RB + 1, G + 1) as
    the tables' fields; ``grid`` the BLER grid they read; rows appear when :meth:`ensure`
    asks for them.
    """

    def __init__(self, table_of: Callable[[int], LinkTable], n_rb: int) -> None:
        first = table_of(1)
        self.table_of, self.n_rb, self.grid = table_of, int(n_rb), first.grid
        n_mcs, n_idx = first.tbler.shape
        self.tbs = np.zeros((n_rb + 1, n_mcs))
        self.tbler = np.ones((n_rb + 1, n_mcs, n_idx))
        self.illa = np.zeros((n_rb + 1, n_idx), dtype=np.intp)
        self._filled = np.zeros(n_rb + 1, dtype=bool)
        self._filled[0] = True

    def ensure(self, n_prb: np.ndarray) -> None:
        """Fill the rows of the PRB counts in ``n_prb`` (any shape, 0..N_RB)."""
        for n in np.unique(np.asarray(n_prb, dtype=int)):
            if not self._filled[n]:
                table = self.table_of(int(n))
                self.tbs[n], self.tbler[n], self.illa[n] = table.tbs_bits, table.tbler, table.illa
                self._filled[n] = True

    def lowest_mcs(self) -> int:
        """The lowest MCS with a table (the same at every PRB count)."""
        self.ensure(np.array([1]))
        return int(np.argmax(self.tbs[1] > 0))

    def illa_at(self, n_prb: np.ndarray, index: np.ndarray, bler_target: float) -> np.ndarray:
        """(m,) the MCS ILLA picks for m blocks of (m,) PRBs whose effective SINR at each MCS
        sits at (m, M) grid indices (:func:`channels.nr_link.illa_choice`)."""
        n = np.asarray(n_prb, dtype=int)
        mcs = np.arange(self.tbs.shape[1])
        tbler = self.tbler[n[:, None], mcs[None, :], index]
        return illa_choice(tbler, self.tbs[n] > 0, bler_target)
