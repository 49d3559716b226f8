"""Handover between cells: 3GPP's A3 event with a hysteresis margin and a time-to-trigger.
Numpy only.

A client served by cell s hands over to the cell b of least coupling loss when b beats s by
more than the hysteresis, CL_s − CL_b > ``hysteresis_db``, at every check for at least
``time_to_trigger_s`` (TS 38.331's A3 condition with offset 0 and the hysteresis, checked where
the caller checks: the network checks at each edge round's start). A check where the condition
fails, or where another cell has become the best, starts the count again.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from channels._validation import as_float

__all__ = ["HandoverState", "handover_step"]


@dataclass
class HandoverState:
    """Each of N clients' ``serving`` cell, the ``candidate`` that beats it (−1: none) and the
    time [s] since which it has (``since_s``, NaN: none)."""

    serving: np.ndarray
    candidate: np.ndarray
    since_s: np.ndarray

    @classmethod
    def start(cls, serving: np.ndarray) -> HandoverState:
        n = len(serving)
        return cls(np.asarray(serving, dtype=int).copy(), np.full(n, -1), np.full(n, np.nan))

    def state(self) -> dict:
        """JSON of the state (a run's checkpoint)."""
        return {
            "serving": self.serving.tolist(),
            "candidate": self.candidate.tolist(),
            "since_s": [None if np.isnan(x) else float(x) for x in self.since_s],
        }

    def restore(self, state: dict) -> None:
        """Continue from :meth:`state` (in place: the serving array keeps its identity)."""
        self.serving[:] = np.asarray(state["serving"], dtype=int)
        self.candidate[:] = np.asarray(state["candidate"], dtype=int)
        self.since_s[:] = [np.nan if x is None else float(x) for x in state["since_s"]]


def handover_step(
    state: HandoverState,
    coupling_loss_db: np.ndarray,
    time_s: float,
    *,
    hysteresis_db: float,
    time_to_trigger_s: float,
) -> np.ndarray:
    """One check at ``time_s`` [s] of (N, C) coupling losses [dB]: updates ``state`` in place
    and returns the clients that handed over (ascending; ``state.serving`` holds their new
    cells)."""
    hysteresis = as_float("hysteresis_db", hysteresis_db, lower=0.0)
    ttt = as_float("time_to_trigger_s", time_to_trigger_s, lower=0.0)
    loss = np.asarray(coupling_loss_db, dtype=float)
    rows = np.arange(len(loss))
    best = np.argmin(loss, axis=1)
    beats = loss[rows, state.serving] - loss[rows, best] > hysteresis
    new = beats & (state.candidate != best)
    state.candidate[new] = best[new]
    state.since_s[new] = time_s
    state.candidate[~beats] = -1
    state.since_s[~beats] = np.nan
    moved = np.flatnonzero(beats & (time_s - state.since_s >= ttt))
    state.serving[moved] = best[moved]
    state.candidate[moved] = -1
    state.since_s[moved] = np.nan
    return moved
