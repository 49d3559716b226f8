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

With ``controller.bits_choices`` the step also chooses the quantiser's bits b from the set:
P3 (or the rank enumeration) is solved exactly at each b, the quantiser's term
(:mod:`optim.quantization_bound`) in the penalty's offset and b per sent value in the upload,
and the least objective wins (ties: the larger b); TSFA's offline stage plans the rank at the
least b of the set; docs/solvers.md, "Choosing the quantiser's bits".

The shares make every client finish together (:mod:`wirelessfl.controllers.costing`); the
planned delay is the longest upload of the chosen plans with their exact bits, so with a
deterministic channel it equals the D^t the simulator measures.

With ``controller.radio: joint`` the round's ratio, transmit powers, CPU clocks, shares and
round time come from the joint Lyapunov step (J2) instead
(:mod:`wirelessfl.controllers.joint_radio`; noise over the share, CMOS clocks); the default
``fixed`` is P3 at full power and clock.

Over the air (``channel.uplink: aircomp``; :mod:`wirelessfl.controllers.air_planning`) the
round lasts D = max_k c_k + max_k n_k / B with n_k the dense values, which no ratio shortens:
P3's delay is then the constant c0 = D (c = 0), so O^t = 1, the penalty's minimum (eq. 14 falls
in O), and the queue (which takes this D) only moves the rank knob, whose analog time n(r) / B
grows with r: the enumeration minimises Q D(r) + Pi n(r) / B + V penalty(r) (Pi prices the
transmit time alone), each client's compute at r^t the server's estimate at r times
phi(r^t) = 1 - f + f r^t / r (the LoRA share f of a step's FLOPs, as the sketch controller's).
There are no shares (each recorded as 1).

In the event-driven modes the decision is per dispatch: each dispatched client's ratio O_k
minimises V gamma_k(O) + Q l_k(O) + Z_k E_k(O) (problem D1, :mod:`optim.dispatch`), its latency
and energy planned at the share 1/C (:mod:`wirelessfl.controllers.dispatch`), the penalty in a
round of K = C updates; the rank stays the controller's (TSFA's offline rank). An algorithm
without the ratio knob trains at that rank with ratio 1. ``server.dispatch: controller`` starts
the idle client of least J_k(O_k) (ties: the shorter planned latency, then the smaller id).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from optim.dispatch import DispatchSolution, solve_dispatch
from optim.dispatch_radio import DispatchRadioSolution
from optim.energy_queue import ENERGY_QUEUE_RULES
from optim.max_affine_slot import solve_max_affine_slot
from optim.online import SLOT_METHODS, solve_affine_slot
from wirelessfl.algorithms.cost import RANK, RATIO
from wirelessfl.config.controller import ControllerSettings
from wirelessfl.config.schema import option
from wirelessfl.controllers.base import Controller, ControllerContext, Decision
from wirelessfl.controllers.dispatch import DispatchCandidates, DispatchDecision
from wirelessfl.controllers.joint_radio import (
    JOINT_NOISE_BANDWIDTHS,
    check_joint_radio,
    decide_joint,
    dispatch_radio,
)
from wirelessfl.controllers.sketch import lora_step_fraction
from wirelessfl.errors import ConfigError


@dataclass
class LyapunovSettings(ControllerSettings):
    """The online stage's settings (osfa; tsfa adds its offline stage's): the drift-plus-penalty
    weight, the ratio floor, the per-slot solver, the radio and the energy queues."""

    V: float = option(1.0e-4, ge=0.0, doc="Lyapunov penalty weight")
    o_min: float = option(0.05, gt=0.0, lt=1.0, doc="minimum sparsification ratio O_min")
    method: str = option("exact", choices=("exact", "cvxpy"), doc="per-slot solver")
    bits_choices: list[int] | None = option(
        None,
        doc="tsfa/osfa online step: the quantiser's bits per sent LoRA value b it chooses each "
        "round with O^t or r^t (each in [2, 16], or payload.bits_per_value: unquantised; "
        "docs/solvers.md); null: the quantize section's b every round",
    )
    radio: str = option(
        "fixed",
        choices=("fixed", "joint"),
        doc="tsfa/osfa online stage: fixed (P3 at full power and clock, the paper) | joint "
        "(ratio, transmit power, CPU clock, shares and round time by optim.solve_joint_step; "
        "needs channel.noise_bandwidth: share and devices.energy.model: cmos)",
    )
    energy_budget_j: float | None = option(
        None,
        gt=0.0,
        doc="time-average energy per device per round (event-driven modes: per aggregation; "
        "compute + transmit); a virtual queue per device joins the online stage (osfa, tsfa); "
        "null: no budget",
    )
    energy_weight: float = option(
        1.0,
        gt=0.0,
        doc="omega: the energy queues' weight in the Lyapunov function, L = Q^2/2 + omega "
        "sum_k Z_k^2/2 [Q in s, Z in J]; the online stage prices omega Z_k E_k (docs/solvers.md, "
        "'The energy queues' weight'); 1: the SI exchange 1 s = 1 J",
    )
    energy_queue: str = option(
        "every_round",
        choices=ENERGY_QUEUE_RULES,
        doc="when a device's energy queue Z_k moves: every_round, Z_k <- max(Z_k + E_k - "
        "budget, 0) each round (event-driven modes: each aggregation) | at_participation, "
        "only in the rounds it spends energy, with the budget of every round since its last "
        "move, so idle rounds' budget is banked (docs/solvers.md, 'Queues updated at "
        "participation') | signed, Z_k <- Z_k + E_k - budget each round with no max, so "
        "unspent budget is credit the step spends at price 0 and the time-average energy "
        "follows the budget (docs/solvers.md, 'The signed queue'); needs energy_budget_j",
    )
    energy_price: float = option(
        0.0,
        ge=0.0,
        doc="mu: a price on every scheduled device's energy in the online step besides its "
        "queue's, (omega Z_k + mu) E_k: the drift-plus-penalty of the penalty gamma(O) + "
        "(mu / V) sum_k E_k (docs/solvers.md, 'The energy queues' weight'); 0: the queues alone",
    )

    def validate(self, prefix: str) -> None:
        super().validate(prefix)
        if self.energy_budget_j is None and self.energy_queue != "every_round":
            raise ConfigError(
                f"{prefix}.energy_queue: {self.energy_queue} moves the energy queues, which "
                f"need {prefix}.energy_budget_j; set a budget or use every_round"
            )


class OnlineLyapunov(Controller):
    """Rank from the scenario (``controller.rank``); each round the algorithm's knob (O^t or
    r^t) and the shares by drift-plus-penalty (module docstring).

    With an energy budget the objective also prices the delay by ``energy_price_jw``.
    """

    SUPPORTS_ENERGY_BUDGET = True
    CHOOSES_BITS = True
    NEEDS_KNOBS = frozenset({RATIO, RANK})
    Settings = LyapunovSettings
    DISPATCH_OBJECTIVE = True
    #: the uplink's round plan and its delay in O (any uplink); radio: joint plans FDMA shares
    UPLINK_NEEDS = frozenset({"round"})

    @classmethod
    def uplink_needs(cls, settings: Any) -> frozenset[str]:
        return frozenset({"round", "shares"}) if settings.radio == "joint" else cls.UPLINK_NEEDS

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
        if s.radio == "joint":
            check_joint_radio(ctx)
        self.cvxpy_problem: object | None = None
        if s.method == "cvxpy":
            from optim.p3_cvxpy import P3CvxpyProblem

            self.cvxpy_problem = P3CvxpyProblem()

    def choose_rank(self) -> int:
        return int(self.ctx.settings.rank)

    @classmethod
    def noise_bandwidths(cls, settings: Any) -> frozenset[str]:
        """``radio: joint`` plans with the rate on the share only."""
        return JOINT_NOISE_BANDWIDTHS if settings.radio == "joint" else cls.NOISE_BANDWIDTHS

    @classmethod
    def noise_bandwidth_reason(cls, settings: Any) -> str:
        return "controller.radio: joint plans with b B log2(1 + SNR / b), noise over the share"

    @classmethod
    def decides_tx_power_under(cls, settings: Any) -> bool:
        return settings.radio == "joint"

    @property
    def decides_cpu_frequency(self) -> bool:
        return self.ctx.settings.radio == "joint"

    @property
    def decides_radio_per_dispatch(self) -> bool:
        return self.ctx.settings.radio == "joint"  # (D2)-(D4)

    @property
    def queue_counts_compute(self) -> bool:
        # (J2) prices Q D with D = compute + upload; so does the over-the-air round
        return self.ctx.settings.radio == "joint" or super().queue_counts_compute

    def decide(self, snr: np.ndarray, compute_s: np.ndarray) -> Decision:
        snr = np.asarray(snr, dtype=float)
        compute_s = np.asarray(compute_s, dtype=float)
        if self.ctx.settings.radio == "joint":
            return decide_joint(self, snr, compute_s)
        if self.knob == RATIO:
            return self._decide_ratio(snr, compute_s)
        return self._decide_rank(snr, compute_s)

    # ---- the ratio knob: P3 ------------------------------------------------------------------
    @property
    def bits_choices(self) -> list[int | None]:
        """The quantiser's b to choose from, largest first (ties keep the larger); ``[None]``
        without ``controller.bits_choices`` (the scenario's quantiser)."""
        choices = getattr(self.ctx.settings, "bits_choices", None)
        return sorted(set(choices), reverse=True) if choices else [None]

    def _decide_ratio(self, snr: np.ndarray, compute_s: np.ndarray) -> Decision:
        """P3 at each b of :attr:`bits_choices` (each exact), the least objective's decision."""
        best = None
        for bits in self.bits_choices:
            objective, decision = self._decide_ratio_at(snr, compute_s, bits)
            if best is None or objective < best[0]:
                best = (objective, decision)
        return best[1]

    def _decide_ratio_at(
        self, snr: np.ndarray, compute_s: np.ndarray, bits: int | None
    ) -> tuple[float, Decision]:
        """P3's objective and decision with the quantiser at ``bits``."""
        c, s = self.ctx, self.ctx.settings
        dense = self.round_plans(snr, self.rank, 1.0, bits)
        uplink = c.planning
        slopes, fixed = uplink.delay_pieces(
            self.planned_uploads(dense), self.dense_values_for_uplink(dense), snr, compute_s
        )
        offset, a = c.cost.ratio_penalty_parts(dense, n_scheduled=len(dense), constants=c.constants)
        common = dict(queue=self.queue, V=s.V, offset=offset, a=a, o_min=s.o_min)
        if len(slopes) == 1:  # FDMA (every client finishes together), the analog sum
            slot = solve_affine_slot(
                **common,
                delay_per_ratio_s=float(slopes[0]),
                fixed_delay_s=float(fixed[0]),
                shares=np.zeros(len(snr)),
                method=s.method,
                cvxpy_problem=self.cvxpy_problem,
                energy_price_jw=self.energy_price_jw,
            )
        else:  # each client's upload ends on its own (NOMA): D(O) = max_j (c0_j + c_j O)
            slot = solve_max_affine_slot(
                **common,
                delay_per_ratio_s=slopes,
                fixed_delay_s=fixed,
                shares=np.zeros(len(snr)),
                method=s.method,
                energy_price_jw=self.energy_price_jw,
            )
        o = float(slot.sparsification)
        plans = self.round_plans(snr, self.rank, o, bits)
        shares, planned_s = uplink.plan_round(
            self.upload_bits(plans), self.dense_values_for_uplink(plans), snr, compute_s
        )
        return float(slot.objective), Decision(
            sparsification=o,
            shares=shares,
            planned_delay_s=planned_s,
            bound=float(slot.bound),
            fell_back=bool(slot.fell_back),
            fallbacks=int(slot.fallbacks),
            bits=bits,
        )

    # ---- the rank knob: enumeration ----------------------------------------------------------
    def _decide_rank(self, snr: np.ndarray, compute_s: np.ndarray) -> Decision:
        c, s = self.ctx, self.ctx.settings
        uplink = c.planning
        together = uplink.STARTS_TOGETHER is not None  # the queue's round includes compute
        f = lora_step_fraction(c.geometry, self.rank) if together else 0.0
        best = None
        for cap in range(self.rank, 0, -1):  # from the top: ties keep the larger rank, then b
            for b in self.bits_choices:
                plans = self.round_plans(snr, cap, 1.0, b)
                bits = self.upload_bits(plans)
                dense = self.dense_values_for_uplink(plans)
                penalty = self.penalty(plans)
                # Q D + Pi airtime: with the uploads after the slowest compute (the analog sum)
                # the queue's round holds each client's compute at r^t, the power only the air
                at_cap_s = compute_s * (1.0 - f + f * cap / self.rank) if together else compute_s
                shares, delay = uplink.plan_round(bits, dense, snr, at_cap_s)
                airtime_s = (
                    uplink.plan_round(bits, dense, snr, np.zeros_like(at_cap_s))[1]
                    if together
                    else delay
                )
                objective = self.queue * delay + self.energy_price_jw * airtime_s + s.V * penalty
                if best is None or objective < best[0]:
                    best = (objective, cap, b, penalty, shares, delay)
        _, cap, b, penalty, shares, planned_s = best
        return Decision(
            sparsification=c.cost.compression.ratio_for(1.0),
            shares=shares,
            planned_delay_s=planned_s,
            bound=float(penalty),
            ranks=np.full(len(snr), cap),
            bits=b,
        )

    # ---- the event-driven modes: the per-dispatch step (D1) ----------------------------------
    def _dispatch_problem(
        self, cand: DispatchCandidates, index: int
    ) -> tuple[
        DispatchSolution, np.ndarray | None, np.ndarray, np.ndarray, DispatchRadioSolution | None
    ]:
        """(D1) for every candidate (affine upload from the cost model at the share 1/C);
        also each candidate's qc (P3's linear weight; None with ``radio: joint``), penalty
        parts (offset, a) and, with ``radio: joint``, its power and clock ((D2)-(D4))."""
        c, s = self.ctx, self.ctx.settings
        dense = self.dispatch_plans(cand, self.rank, np.ones(len(cand.clients)), index)
        v, n, k = float(c.bits_per_value), len(dense), cand.concurrency
        if self.knob == RATIO:
            splits = self.affine_uploads(dense)
            values, dense_values, side = (np.array(x, float) for x in zip(*splits, strict=True))
            per_ratio_bits, fixed_bits = v * values, v * dense_values + side
            parts = self._per_size(  # eq. (14) in O at the plan's rank, K = C
                dense,
                "_dispatch_parts_cache",
                lambda plan: c.cost.ratio_penalty_parts(
                    [plan], n_scheduled=k, constants=c.constants
                ),
            )
            offset, a = (np.array(x, float) for x in zip(*parts, strict=True))
        else:  # no ratio knob: the update is sent as planned at ratio 1
            per_ratio_bits, fixed_bits = np.zeros(n), self.upload_bits(dense)
            offset, a = np.array(self.dispatch_penalties(dense, k)), np.zeros(n)
        if s.radio == "joint":
            radio = dispatch_radio(self, cand, (fixed_bits, per_ratio_bits, offset, a))
            return radio.dispatch, None, offset, a, radio
        rate_bps = c.planning.dispatch_rate_bps(cand.snr, cand.concurrency)  # b B log2(1+SNR)
        per_ratio_s, fixed_s = per_ratio_bits / rate_bps, fixed_bits / rate_bps
        z = self.weighted_energy_queues(cand.clients)
        solution = solve_dispatch(
            queue=self.queue,
            V=s.V,
            o_min=s.o_min,
            offset=offset,
            a=a,
            upload_per_ratio_s=per_ratio_s,
            fixed_upload_s=fixed_s,
            compute_s=cand.compute_s,
            energy_queue_j=z,
            tx_power_w=cand.tx_power_w,
            compute_energy_j=cand.compute_energy_j,
        )
        qc = (self.queue + z * np.asarray(cand.tx_power_w, dtype=float)) * per_ratio_s
        return solution, qc, offset, a, None

    def decide_dispatch(self, cand: DispatchCandidates, index: int) -> DispatchDecision:
        """Each client's O_k by (D1), solved by ``controller.method`` (exact or CVXPY); with
        ``radio: joint`` also its power and clock, (D2)-(D4) (exact only)."""
        s, n = self.ctx.settings, len(cand.clients)
        ratios, fallbacks = np.ones(n), np.zeros(n, dtype=int)
        solution, qc, offset, a, radio = self._dispatch_problem(cand, index)
        if radio is not None:
            ratios = np.asarray(solution.ratio, dtype=float) if self.knob == RATIO else ratios
        elif self.knob == RATIO and qc is not None:
            solve = SLOT_METHODS[s.method]
            for i in range(n):
                o, _, failed = solve(float(qc[i]), float(s.V * a[i]), s.o_min, self.cvxpy_problem)
                ratios[i], fallbacks[i] = o, int(failed)
        plans = self.dispatch_plans(cand, self.rank, ratios, index)
        penalties = offset + a * (1.0 - ratios) ** 2 / ratios**4  # eq. (14) at O_k
        ranks = np.full(n, self.rank)
        if radio is None:
            return self.dispatch_costs(cand, plans, ranks, ratios, fallbacks, penalties)
        upload_s = self.upload_bits(plans) / radio.rate_bps  # the exact bits at p_k
        return DispatchDecision(
            ranks,
            ratios,
            radio.compute_s + upload_s,
            np.asarray(penalties, dtype=float),
            fallbacks,
            tx_power_w=radio.tx_power_w,
            cpu_hz=radio.cpu_hz,
        )

    def choose_dispatch(self, cand: DispatchCandidates, n: int, index: int) -> np.ndarray:
        """The ``n`` candidates of least J_k(O_k) of (D1), ties by the shorter planned
        latency, then the smaller client id."""
        solution = self._dispatch_problem(cand, index)[0]
        order = np.lexsort((cand.clients, solution.latency_s, solution.objective))
        return order[:n]

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.virtual_queue.value = float(state["queue"])
        self.load_energy_state(state)

    def summary(self) -> dict[str, Any]:
        out = {
            "rank": self.rank,
            "rank_source": "scenario (controller.rank)",
            "online_knob": self.knob,
        }
        if self.ctx.settings.radio == "joint":  # the key only then: meta.json unchanged
            out["radio"] = "joint"
        return out
