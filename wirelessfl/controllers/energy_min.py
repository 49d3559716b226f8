"""Energy-min: the least round energy under a completion-time limit, per round (Yang et al.).

Each round the scheduled clients train at (``controller.rank``, ``controller.sparsification``),
as with the fixed controller, and their powers p_k, clocks f_k and shares b_k minimise the
round's total energy sum_k (kappa_k C_k f_k^2 + p_k t_k) under C_k / f_k + t_k <= T
(T = ``controller.round_time_s``; (J3) of docs/solvers.md): "Energy Efficient Federated
Learning Over Wireless Communication Networks", Z. Yang, M. Chen, W. Saad, C. S. Hong,
M. Shikh-Bahaei, IEEE TWC 2021, arXiv:1911.02417. ``controller.energy_scheme`` picks the
paper's proposed scheme (``joint``) or a baseline (``equal_bandwidth``, ``max_power``,
``max_frequency``), all by ``optim.solve_energy_min``.

A round whose least achievable time exceeds T (a deep fade) cannot meet it: the controller then
takes the scheme's least-energy decision at that least time (just above it, relative 1e-9) and
counts one ``solver_fallback`` for the round. The planned delay is the longest upload.

It plans with the rate b B log2(1 + SNR / b) (``channel.noise_bandwidth: share``) and needs a
clock range (``devices.energy.model: cmos``); both are refused otherwise in one line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from optim import ENERGY_MIN_METHODS, DeadlineInfeasibleError, EnergyMinSolution, solve_energy_min
from wirelessfl.config.controller import FixedRatioSettings
from wirelessfl.config.schema import option
from wirelessfl.controllers.base import Controller, ControllerContext, Decision
from wirelessfl.controllers.radio_inputs import check_radio_context, radio_decisions, radio_inputs

#: relative margin above the least achievable round time when T is below it
LEAST_TIME_MARGIN = 1e-9


@dataclass
class EnergyMinSettings(FixedRatioSettings):
    """The energy-min controller's settings: its ratio O, the round-time limit T and the scheme."""

    round_time_s: float = option(
        1.0,
        gt=0.0,
        doc="energy_min controller: completion-time limit T per round, compute + upload [s] "
        "(a round that cannot meet it takes its least time and counts a solver_fallback)",
    )
    energy_scheme: str = option(
        "joint",
        choices=ENERGY_MIN_METHODS,
        doc="energy_min controller: joint (power, clock and shares, Yang et al.) | "
        "equal_bandwidth | max_power | max_frequency (the paper's baselines)",
    )


class EnergyMin(Controller):
    """Fixed rank and ratio; per round the least-energy powers, clocks and shares under T."""

    NOISE_BANDWIDTHS = frozenset({"share"})
    Settings = EnergyMinSettings

    def __init__(self, ctx: ControllerContext):
        check_radio_context(ctx, "controller.name: energy_min")
        super().__init__(ctx)

    def choose_rank(self) -> int:
        return int(self.ctx.settings.rank)

    @classmethod
    def decides_tx_power_under(cls, settings: Any) -> bool:
        return True

    @property
    def decides_cpu_frequency(self) -> bool:
        return True

    def decide(self, snr: np.ndarray, compute_s: np.ndarray) -> Decision:
        c, s = self.ctx, self.ctx.settings
        n = len(snr)
        o = float(s.sparsification)
        plans = self.round_plans(snr, self.rank, o)
        p_max = self.round_tx_power_max_w
        if p_max is None or p_max.shape != (n,):
            raise ValueError("energy_min needs each client's P_max,k: pass tx_power_max_w")
        inputs = radio_inputs(c, self._clients(n), snr, compute_s, p_max)
        solution, fallbacks = least_energy(
            self.upload_bits(plans), inputs, deadline_s=s.round_time_s, scheme=s.energy_scheme
        )
        power, clock = radio_decisions(solution, inputs)
        return Decision(
            c.cost.compression.ratio_for(o),
            np.asarray(solution.share, dtype=float),
            float(np.max(solution.upload_s, initial=0.0)),
            self.penalty(plans),
            fallbacks=fallbacks,
            tx_power_w=power,
            cpu_hz=clock,
        )

    def summary(self) -> dict[str, Any]:
        s = self.ctx.settings
        return {
            "rank": self.rank,
            "sparsification": s.sparsification,
            "round_time_s": s.round_time_s,
            "energy_scheme": s.energy_scheme,
        }


def least_energy(
    bits: np.ndarray,
    inputs: dict[str, Any],
    *,
    deadline_s: float,
    scheme: str,
    weight: Any = 1.0,
) -> tuple[EnergyMinSolution, int]:
    """``optim.solve_energy_min`` of ``scheme`` for ``bits`` (K',) [bit] under ``deadline_s``
    [s] (``weight``: w_k on each client's energy), or at the least round time when the deadline
    is below it; with the round's fallback count (1 in that case, else 0)."""
    try:
        return (
            solve_energy_min(
                deadline_s=deadline_s, method=scheme, weight=weight, bits=bits, **inputs
            ),
            0,
        )
    except DeadlineInfeasibleError as err:
        least_s = err.min_deadline_s * (1.0 + LEAST_TIME_MARGIN)
    solution = solve_energy_min(
        deadline_s=least_s, method=scheme, weight=weight, bits=bits, **inputs
    )
    return solution, 1
