"""OSFA: a fixed rank, and the online Lyapunov stage (P3, eqs. 29-31) every round."""

from __future__ import annotations

from typing import Any

import numpy as np

from optim import LyapunovController
from wirelessfl.controllers.base import Controller, ControllerContext, Decision


class OnlineLyapunov(Controller):
    """Rank from the scenario (``controller.rank``); O^t and b_k^t from ``optim.solve_slot``.

    With an energy budget the solver also gets the stored energy price (``energy_price_jw``).
    """

    SUPPORTS_ENERGY_BUDGET = True

    def __init__(self, ctx: ControllerContext):
        super().__init__(ctx)
        s = ctx.settings
        self.online = LyapunovController(
            V=s.V,
            d_th_s=s.d_th_s,
            rank=self.rank,
            n_clients=ctx.n_clients,
            params_per_rank=ctx.params_per_rank,
            bits_per_value=ctx.bits_per_value,
            bandwidth_hz=ctx.bandwidth_hz,
            o_min=s.o_min,
            constants=ctx.constants,
            method=s.method,
            queue=self.virtual_queue,  # the one Q^t (eq. 21), shared with the base class
        )

    def choose_rank(self) -> int:
        return int(self.ctx.settings.rank)

    def decide(self, snr: np.ndarray, compute_s: np.ndarray) -> Decision:
        slot = self.online.decide(snr, energy_price_jw=self.energy_price_jw)
        return Decision(
            sparsification=float(slot.sparsification),
            shares=np.asarray(slot.shares, dtype=float),
            planned_delay_s=float(slot.delay_s) + self.fixed_delay_s(snr),
            bound=float(slot.bound),
            fell_back=bool(slot.fell_back),
            fallbacks=int(slot.fallbacks),
        )

    def observe(self, delay_s: float) -> float:
        return float(self.online.update(delay_s))  # eq. (21) on the shared queue, plus history

    def load_state_dict(self, state: dict[str, Any]) -> None:
        # only Q^t is checkpointed: the solver's per-round history would grow the state O(T)
        online = self.online.state_dict()
        online["queue"] = float(state["queue"])
        online["history"] = {key: [] for key in online["history"]}
        self.online.load_state_dict(online)
        self.load_energy_state(state)

    def summary(self) -> dict[str, Any]:
        return {"rank": self.rank, "rank_source": "scenario (controller.rank)"}
