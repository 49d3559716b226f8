"""Network-only learner: the loss follows the convergence bound's progress model.

No training happens. The excess loss e_t = F_t - F* contracts towards a floor set by the
per-round bound gamma^t (Theorem 1), in proportion to the share of scheduled clients whose
update arrived:

    e_{t+1} = e_t - c * (n_arrived / K) * (e_t - floor_t),
    floor_t = e_0 * gamma^t / (gamma^t + gamma_half),

with c = ``progress_rate`` and gamma_half = ``bound_half`` (the bound at which the floor is half
the initial loss). Accuracy is chance + (1 - chance) * (1 - e_t / e_0). This keeps the
qualitative behaviour the bound predicts (more sparsification or a rank far from r_max raises
the floor; lost uploads slow progress) at a cost of microseconds per round. It is a
network-study instrument, never a claim about a model's accuracy.

Over the air (``channel.uplink: aircomp``) the round's gamma^t gains the aggregation noise's
term gamma_air = S MSE eta^2 E^2 G^2 / (2 K^2) (:mod:`optim.aircomp_bound`), MSE the
aggregation MSE per value of the K arrived clients' received coefficients and the denoising
factor (:meth:`receive_over_the_air`), so a lower SNR raises the floor as it costs real
training accuracy (docs/simulator.md, "What the network-only learner sees").

A non-finite value in the model (an infinite gamma^t, or a loss that overflows with extreme
``learner.initial_loss`` / ``bound_half``) stops the run with a one-line ``SimulationError``
naming the round, before the round's record exists; a NaN gamma^t (a controller that does not
compute the bound) counts as 0.

Plans and payload sizes come from the scenario's algorithm's cost model
(:mod:`wirelessfl.algorithms.cost`: the algorithm's own plan and size-only messages, counted
by ``Message.bits`` like real messages), so the algorithm itself (and torch) is never built;
an upload is sized once per distinct plan of a round. An algorithm whose messages cannot be
sized from ``learner.shape`` is refused in one line when the run is built.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from channels.aircomp import aggregation_mse
from optim import BoundConstants
from optim.aircomp_bound import aircomp_term
from wirelessfl.algorithms.finite import KEPT
from wirelessfl.algorithms.quantization import QUANT_METRICS
from wirelessfl.algorithms.spec import cost_model_class
from wirelessfl.config.bound import bound_constants
from wirelessfl.errors import SimulationError
from wirelessfl.learners.base import (
    ClientPlan,
    ClientReport,
    Learner,
    ModelGeometry,
    RoundPlan,
    WeightedUpdate,
)
from wirelessfl.plans import (
    AirRound,
    client_plan_from_state,
    client_plan_state,
    round_plan_from_state,
    round_plan_state,
)
from wirelessfl.results.store import atomic_write_text

if TYPE_CHECKING:
    from wirelessfl.algorithms.cost import CostModel
    from wirelessfl.config.scenario import PayloadConfig, Scenario


#: reports remembered across dispatches (by size key) before the memo is cleared
_DISPATCH_REPORTS = 4096


class SurrogateLearner(Learner):
    """Bound-driven loss model for network-only runs (see module docstring)."""

    #: the over-the-air sum is seen as its noise term in the bound (module docstring)
    UPLINKS = ("fdma", "aircomp")

    def __init__(
        self,
        *,
        geometry: ModelGeometry,
        cost: CostModel,
        payload: PayloadConfig,
        initial_loss: float = 2.3,
        progress_rate: float = 0.02,
        bound_half: float = 1.0e4,
        n_classes: int = 10,
        local_steps: int = 5,
        constants: BoundConstants | None = None,
    ):
        self._geometry = geometry
        self.cost = cost
        self.payload = payload
        self.initial_loss = initial_loss
        self.progress_rate = progress_rate
        self.bound_half = bound_half
        self.n_classes = n_classes
        self.local_steps = local_steps
        #: Theorem 1's constants of the AirComp term (None: optim's defaults)
        self.constants = BoundConstants() if constants is None else constants
        self._air: AirRound | None = None  # the next aggregation's channel (aircomp)
        self.excess = initial_loss
        self._last_plan: RoundPlan | None = None
        self._flops_at: dict[int, float] = {}
        self._arrivals: dict[int, ClientPlan] = {}
        #: set by the first :meth:`dispatch`: checkpoints then hold the plans in flight
        self._event_driven = False

    @classmethod
    def from_scenario(cls, scenario: Scenario) -> SurrogateLearner:
        """The network-only learner of ``scenario`` (``learner.*``, its algorithm, payload)."""
        lc = scenario.learner
        geometry = ModelGeometry(
            layer_shapes=tuple((int(d), int(ell)) for d, ell in lc.shape.layer_shapes),
            base_params=lc.shape.base_params,
            batch_size=lc.shape.batch_size,
            seq_len=lc.shape.seq_len,
            layer_ranks=tuple(lc.shape.layer_ranks or ()),
        )
        cost = cost_model_class(scenario.algorithm.name)(
            scenario.strategy, scenario=scenario, geometry=geometry
        )
        cost.check_network_only()
        return cls(
            geometry=geometry,
            cost=cost,
            payload=scenario.payload,
            initial_loss=lc.initial_loss,
            progress_rate=lc.progress_rate,
            bound_half=lc.bound_half,
            n_classes=lc.n_classes,
            local_steps=scenario.constants.E,
            constants=bound_constants(scenario),
        )

    def geometry(self) -> ModelGeometry:
        return self._geometry

    def cost_model(self) -> CostModel:
        return self.cost

    def start(self, *, rank: int, n_clients: int, seed: int) -> None:
        self.rank = rank
        self.cost.start(rank=rank)

    def _flops(self, rank: int) -> float:
        """Estimated FLOPs of one client's local round at ``rank`` (cached per rank)."""
        if rank not in self._flops_at:
            self._flops_at[rank] = self._geometry.training_flops(rank, steps=self.local_steps)
        return self._flops_at[rank]

    def expected_flops(self, rank: int) -> float:
        return self._flops(rank)

    def _sized_report(self, plan: ClientPlan) -> ClientReport:
        """The report of a client with ``plan`` (sizes from the algorithm's cost model)."""
        v = self.payload.bits_per_value
        up = self.cost.upload(plan).payload(
            bits_per_value=v, count_index=self.payload.index_overhead
        )
        down = self.cost.download(plan).bits(bits_per_value=v, count_index=False)
        return ClientReport(
            rank=plan.rank,
            ratio=plan.ratio,
            bits_up=up.bits,
            bits_down=down,
            n_values=up.n_values,
            n_total=up.n_total,
            index_bits=up.index_bits,
            flops=self._flops(plan.rank),
        )

    def local_round(self, plan: RoundPlan) -> dict[int, ClientReport]:
        self._last_plan = plan
        by_size: dict[object, ClientReport] = {}  # one report per distinct plan of the round
        reports, self._arrivals = {}, {}
        for p in self.cost.plan(plan):
            key = (self.cost.size_key(p), self.cost.download_key(p))
            if key not in by_size:
                by_size[key] = self._sized_report(p)
            reports[p.client] = by_size[key]
            self.cost.downloaded(p)
            self._arrivals[p.client] = p
        return reports

    def metric_names(self) -> dict[str, str]:
        """``quant_bits`` when the run quantises (the real runs' quantiser column)."""
        return {"quant_bits": QUANT_METRICS["quant_bits"]} if self.cost.quantizes else {}

    def _quant_bits(self, plans: Sequence[ClientPlan]) -> dict[str, float]:
        """The arrived plans' mean b (v where unquantised), when the run quantises."""
        if not self.cost.quantizes:
            return {}
        bits = [self.cost.quantizer_for(p).bits for p in plans]
        v = self.payload.bits_per_value
        values = [v if b is None else b for b in bits]
        return {"quant_bits": float(np.mean(values)) if values else math.nan}

    def receive_over_the_air(self, air: AirRound) -> None:
        """The next :meth:`aggregate`'s received coefficients and denoising factor."""
        self._air = air

    def air_penalty(self, arrived: np.ndarray) -> float:
        """gamma_air of the arrived clients' analog sum (0 without one; module docstring)."""
        air, self._air = self._air, None
        if air is None or len(arrived) == 0:
            return 0.0
        mse = aggregation_mse([air.gain[int(c)] for c in arrived], air.denoising)
        return aircomp_term(mse=mse, n_aggregated=len(arrived), constants=self.constants)

    def aggregate(self, round_index: int, arrived: np.ndarray) -> dict[str, float]:
        self.cost.aggregated(round_index, {int(c): self._arrivals[int(c)] for c in arrived})
        plan = self._last_plan
        air_gamma = self.air_penalty(arrived)
        if plan is not None and plan.n_scheduled > 0 and len(arrived) > 0:
            if np.isinf(plan.bound):
                raise SimulationError(self._fault(round_index, f"gamma^t is {plan.bound}"))
            gamma = plan.bound if np.isfinite(plan.bound) else 0.0  # NaN: not computed
            gamma += air_gamma
            floor = self.initial_loss * gamma / (gamma + self.bound_half)
            frac = len(arrived) / plan.n_scheduled
            excess = self.excess - self.progress_rate * frac * (self.excess - floor)
            if not np.isfinite(excess):
                raise SimulationError(
                    self._fault(round_index, f"its loss is {excess} with gamma^t = {gamma:.6g}")
                )
            self.excess = excess
        arrived_plans = [self._arrivals[int(c)] for c in arrived]
        return {"loss": float(self.excess), **self._quant_bits(arrived_plans)}

    # ---- the event-driven modes ------------------------------------------------------------
    def event_driven_refusal(self) -> str | None:
        if self.cost.SINGLE_UPDATES:
            return None
        return f"algorithm {self.cost.name!r} does not aggregate single weighted updates"

    def dispatch(self, plan: RoundPlan, *, keep_start: bool) -> dict[int, ClientReport]:
        """Size the uploads of ``plan.clients``; their plans wait for :meth:`add_updates`."""
        self._last_plan, self._event_driven = plan, True
        reports, sized = {}, self.__dict__.setdefault("_dispatch_reports", {})
        if len(sized) > _DISPATCH_REPORTS:  # keys hold the ratio, which may vary per dispatch
            sized.clear()
        for p in self.cost.plan(plan):
            key = (self.cost.size_key(p), self.cost.download_key(p))  # equal keys, equal sizes
            if key not in sized:
                sized[key] = self._sized_report(p)
            reports[p.client] = sized[key]
            self.cost.downloaded(p)
            self._arrivals[p.client] = p
        return reports

    def discard_updates(self, clients: Sequence[int]) -> None:
        for c in clients:
            self._arrivals.pop(c, None)

    def add_updates(self, index: int, updates: Sequence[WeightedUpdate]) -> dict[str, float]:
        """The loss model's step for one aggregation of n updates with weights w_k: as if
        n sum_k w_k of the K = ``plan.n_scheduled`` (the concurrency) clients of a synchronous
        round arrived (a round of K fresh updates at unit server rate counts 1; a staleness
        weight below 1 counts less; one step never passes the floor). Its floor takes the
        plans' gamma (NaN: the engine's dispatch plans carry none, so the floor is 0; the
        controller's per-update gamma is the ``bound`` column)."""
        plans = {u.client: self._arrivals.pop(u.client) for u in updates}
        self.cost.aggregated(index, plans)
        plan = self._last_plan
        if plan is not None and plan.n_scheduled > 0 and updates:
            gamma = plan.bound if np.isfinite(plan.bound) else 0.0
            floor = self.initial_loss * gamma / (gamma + self.bound_half)
            frac = len(updates) * sum(u.weight for u in updates) / plan.n_scheduled
            step = min(self.progress_rate * frac, 1.0)  # never past the floor
            excess = self.excess - step * (self.excess - floor)
            if not np.isfinite(excess):
                raise SimulationError(
                    self._fault(index, f"its loss is {excess} with gamma^t = {gamma:.6g}")
                )
            self.excess = excess
        return {"loss": float(self.excess), **self._quant_bits(list(plans.values()))}

    def _fault(self, round_index: int, what: str) -> str:
        """The one-line message of a non-finite value in the loss model."""
        return (
            f"round {round_index}: the network-only learner's loss model is not finite "
            f"({what}; learner.initial_loss = {self.initial_loss}, learner.bound_half = "
            f"{self.bound_half}); {KEPT} Use constants.* and learner.initial_loss / "
            "bound_half of ordinary magnitude"
        )

    # ---- client-edge-cloud hierarchies --------------------------------------------------------
    def hierarchy_refusal(self) -> str | None:
        if self.cost.SINGLE_UPDATES:
            return None
        return (
            f"algorithm {self.cost.name!r} does not aggregate by a weighted mean of updates, so "
            "averaging its edge models at a cloud is not its aggregation"
        )

    def model_state(self) -> float:
        """The excess loss e_t: the network-only model's state."""
        return float(self.excess)

    def load_model_state(self, state: object) -> None:
        self.excess = float(state)  # type: ignore[arg-type]

    def average_model_states(self, states: Sequence[object], weights: np.ndarray) -> float:
        """The data-weighted mean of the edges' excess losses (the network-only reading of
        averaging the edge models)."""
        values = np.asarray(states, dtype=float)
        return float(np.dot(weights, values) / np.sum(weights))

    def evaluate(self, round_index: int) -> dict[str, float]:
        chance = 1.0 / self.n_classes
        acc = chance + (1.0 - chance) * max(0.0, 1.0 - self.excess / self.initial_loss)
        return {"accuracy": float(acc), "test_loss": float(self.excess)}

    def save_state(self, folder: Path) -> None:
        state: dict[str, object] = {"excess": self.excess}
        cost = self.cost.state_dict()
        if cost:  # the key only with bookkeeping (FedStack's stacks): old states unchanged
            state["cost"] = cost
        if self._event_driven and self._last_plan is not None:  # the key only then, likewise
            state["in_flight"] = {  # JSON keeps floats exact
                "plans": {str(c): client_plan_state(p) for c, p in self._arrivals.items()},
                "last_plan": round_plan_state(self._last_plan),
            }
        atomic_write_text(folder / "learner.json", json.dumps(state))

    def load_state(self, folder: Path) -> None:
        state = json.loads((folder / "learner.json").read_text())
        self.excess = float(state["excess"])
        self.cost.load_state_dict(state.get("cost", {}))
        in_flight = state.get("in_flight")
        if in_flight is not None:  # an event-driven run: the plans dispatched, not yet added
            self._event_driven = True
            plans = in_flight["plans"].items()
            self._arrivals = {int(c): client_plan_from_state(p) for c, p in plans}
            self._last_plan = round_plan_from_state(in_flight["last_plan"])

    def describe(self) -> dict[str, object]:
        return {"learner": "surrogate", "params_per_rank": self._geometry.params_per_rank}
