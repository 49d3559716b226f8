"""OSFA: a fixed rank, and the online Lyapunov stage (P3, eqs. 29-31) every round, in the
algorithm's own knobs.

Each round the controller minimises (Q^t + Pi^t) D^t + V penalty^t (eq. 29a; Pi^t the energy
price, 0 without a budget) over the knob the algorithm's cost model offers
(``ControllerContext.cost``, docs/solvers.md "Planning any algorithm"):

- ``ratio`` (a compression stage that follows the controller: SOFT and its baselines, any
  algorithm with ``compression.ratio: null``): O^t in [O_min, 1] by P3. The upload is affine in
  O and the penalty is eq. (14)'s offset + a (1 - O)^2 / O^4, so P3 stays a 1-D convex problem,
  solved exactly or with CVXPY (``controller.method``); for SOFT this is the paper's P3 to the
  last bit;
- ``rank`` otherwise (FedIT, ILoRA, FSLoRA, HetLoRA, ... whose upload the controller cannot
  thin): the round's rank r^t in 1..r, each client training and sending min(r^t, its own
  rank), by enumerating the r candidates (an integer problem; ``method: cvxpy`` is refused in
  one line). Ties go to the larger rank.

The shares make every client finish together (:mod:`wirelessfl.controllers.costing`); the
planned delay is the longest upload of the chosen plans with their exact bits, so with a
deterministic channel it equals the D^t the simulator measures.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from channels.fdma import spectral_efficiency
from optim.online import solve_affine_slot
from wirelessfl.algorithms.cost import RANK, RATIO
from wirelessfl.controllers.base import Controller, ControllerContext, Decision
from wirelessfl.controllers.costing import finish_together_shares, planned_upload_s
from wirelessfl.errors import ConfigError


class OnlineLyapunov(Controller):
    """Rank from the scenario (``controller.rank``); each round the algorithm's knob (O^t or
    r^t) and the shares by drift-plus-penalty (module docstring).

    With an energy budget the objective also prices the delay by ``energy_price_jw``.
    """

    SUPPORTS_ENERGY_BUDGET = True
    NEEDS_KNOBS = frozenset({RATIO, RANK})
    #: O^t is chosen each round; the fixed controller's ratio and share rule are never read
    IGNORED_SETTINGS = frozenset({"sparsification", "bandwidth"})

    def __init__(self, ctx: ControllerContext):
        super().__init__(ctx)
        s = ctx.settings
        self.knob = RATIO if RATIO in ctx.cost.knobs else RANK
        if self.knob == RANK and s.method == "cvxpy":
            raise ConfigError(
                f"controller.method: cvxpy solves P3 over the compression ratio O, and algorithm "
                f"{ctx.cost.name!r} ({ctx.cost.knob_text()}) is planned over its rank, an integer "
                "problem solved exactly by enumeration; use method: exact, or a compression stage "
                "whose ratio the controller decides (compression.sparsifier, ratio: null)"
            )
        self.cvxpy_problem: object | None = None
        if s.method == "cvxpy":
            from optim.p3_cvxpy import P3CvxpyProblem

            self.cvxpy_problem = P3CvxpyProblem()

    def choose_rank(self) -> int:
        return int(self.ctx.settings.rank)

    def decide(self, snr: np.ndarray, compute_s: np.ndarray) -> Decision:
        snr = np.asarray(snr, dtype=float)
        if self.knob == RATIO:
            return self._decide_ratio(snr)
        return self._decide_rank(snr)

    # ---- the ratio knob: P3 ------------------------------------------------------------------
    def _decide_ratio(self, snr: np.ndarray) -> Decision:
        c, s = self.ctx, self.ctx.settings
        dense = self.round_plans(snr, self.rank, 1.0)
        splits = self.affine_uploads(dense)
        v, bw = float(c.bits_per_value), float(c.bandwidth_hz)
        inv = 1.0 / spectral_efficiency(snr)
        if len(set(splits)) == 1:  # equal payloads: eq. (31) and the paper's D^t = c O
            n, h, side = splits[0]
            sum_inv = float(inv.sum())
            slope = v * n * sum_inv / bw
            fixed = (v * h + side) * sum_inv / bw
        else:  # shares in proportion to each client's bits: D(O) = c0 + c O all the same
            n, h, side = (np.array(col, dtype=float) for col in zip(*splits, strict=True))
            slope = float(v * np.dot(n, inv) / bw)
            fixed = float(np.dot(v * h + side, inv) / bw)
        offset, a = c.cost.ratio_penalty_parts(dense, n_scheduled=len(dense), constants=c.constants)
        slot = solve_affine_slot(
            queue=self.queue,
            V=s.V,
            delay_per_ratio_s=slope,
            fixed_delay_s=fixed,
            offset=offset,
            a=a,
            o_min=s.o_min,
            shares=np.zeros(len(snr)),
            method=s.method,
            cvxpy_problem=self.cvxpy_problem,
            energy_price_jw=self.energy_price_jw,
        )
        o = float(slot.sparsification)
        plans = self.round_plans(snr, self.rank, o)
        bits = self.upload_bits(plans)
        shares = finish_together_shares(bits, snr)
        return Decision(
            sparsification=o,
            shares=shares,
            planned_delay_s=planned_upload_s(bits, shares, c.bandwidth_hz, snr),
            bound=float(slot.bound),
            fell_back=bool(slot.fell_back),
            fallbacks=int(slot.fallbacks),
        )

    # ---- the rank knob: enumeration ----------------------------------------------------------
    def _decide_rank(self, snr: np.ndarray) -> Decision:
        c, s = self.ctx, self.ctx.settings
        inv_band = 1.0 / (c.bandwidth_hz * spectral_efficiency(snr))
        weight = self.queue + self.energy_price_jw
        best = None
        for cap in range(self.rank, 0, -1):  # from the top: ties keep the larger rank
            plans = self.round_plans(snr, cap, 1.0)
            bits = self.upload_bits(plans)
            delay = float(np.dot(bits, inv_band))  # everyone finishes together
            penalty = self.penalty(plans)
            objective = weight * delay + s.V * penalty
            if best is None or objective < best[0]:
                best = (objective, cap, plans, bits, penalty)
        _, cap, plans, bits, penalty = best
        shares = finish_together_shares(bits, snr)
        return Decision(
            sparsification=c.cost.compression.ratio_for(1.0),
            shares=shares,
            planned_delay_s=planned_upload_s(bits, shares, c.bandwidth_hz, snr),
            bound=float(penalty),
            ranks=np.full(len(snr), cap),
        )

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.virtual_queue.value = float(state["queue"])
        self.load_energy_state(state)

    def summary(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "rank_source": "scenario (controller.rank)",
            "online_knob": self.knob,
        }
