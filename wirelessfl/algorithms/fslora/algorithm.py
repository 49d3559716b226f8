"""FSLoRA: each client trains a random-k sketch of the global rank-r LoRA.

"Federated Sketching LoRA: On-Device Collaborative Fine-Tuning of Large Language Models",
W. Fang, D.-J. Han, L. Yuan, S. Hosseinalipour, C. G. Brinton, arXiv:2501.19389.

The server keeps global LoRA factors of rank r (the controller's rank, the runtime's model
rank). Each round client i gets a random-k sketch ``S_i = (r/k_i) sum_{j in I_i} e_j e_j^T``
(Def. 3.1): k_i of the r indices, uniform without replacement
(:mod:`wirelessfl.algorithms.fslora.sketch`), with ``k_i = client_rank(ratio_i, r, r_ctrl)``
(:mod:`wirelessfl.algorithms.client_ranks`). The client minimises ``l(W0 + (alpha/r) B S A)``
(eq. 2). Since S is diagonal and zero outside I, that loss depends on ``B[:, I]`` and ``A[I, :]``
only and its gradients (eq. 3) vanish elsewhere, so the client trains the rank-k_i slice as a
rank-k_i LoRA whose output the runtime scales by ``alpha/k_i = (alpha/r)(r/k_i)``: the same
forward, the same gradients and the same local steps (eq. 4), exactly. Columns of B and rows of
A outside I cannot move, whatever the optimizer.

Up: the k_i columns of ``Delta B`` and k_i rows of ``Delta A`` per layer (``k_i (d + l)``
values; the server drew I, so no index is sent), top-k compressed when ``strategy.topk_ratio``
< 1 (App. C.2), plus the dense task-head update. Down: the whole global LoRA (``download:
full``, Algorithm 1 line 3) or only the slices (``download: sketch``), plus the index sets as
side information. The server scatters every arrived client's slices into zero rank-r tensors
and adds their weighted sum (eq. 5; zeros of unselected columns count, which keeps the update
unbiased). Evaluation is of the unsketched ``W0 + (alpha/r) B A``.

This module imports without torch: the network-only learner builds :class:`FSLoRA` for its
payload model (:meth:`FSLoRA.sized_broadcast`, FedIT's ``sized_message``) on installs without
torch, so the slice helpers are imported inside the methods that use them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from wirelessfl.algorithms.base import State
from wirelessfl.algorithms.client_ranks import client_rank, client_ratios
from wirelessfl.algorithms.fedit.algorithm import FedIT
from wirelessfl.algorithms.fslora.settings import FSLoRASettings
from wirelessfl.algorithms.fslora.sketch import draw_index_sets, sketch_side_bits
from wirelessfl.algorithms.message import IndexSpace, Message
from wirelessfl.errors import ConfigError
from wirelessfl.plans import ClientPlan, RoundPlan

if TYPE_CHECKING:
    from wirelessfl.config.scenario import Scenario
    from wirelessfl.training.local import LocalResult
    from wirelessfl.training.private_state import PrivateState

__all__ = ["FSLoRA", "SketchPlan"]


@dataclass(frozen=True)
class SketchPlan(ClientPlan):
    """A client's FSLoRA round: ``rank`` is k_i; the sketch is ``index_sets``.

    Attributes:
        model_rank: r, the global rank.
        index_sets: the index sets I (k_i ascending ints in ``[0, r)``): one for every layer
            (``index_sets: shared``) or one per adapted layer; empty in network-only runs
            (sizes do not depend on which indices).
    """

    model_rank: int = 0
    index_sets: tuple[tuple[int, ...], ...] = ()

    def layer_sets(self, n_layers: int) -> tuple[tuple[int, ...], ...]:
        """One index set per adapted layer (the shared set repeated)."""
        return self.index_sets * n_layers if len(self.index_sets) == 1 else self.index_sets


class FSLoRA(FedIT):
    """Federated sketching LoRA (see the module docstring)."""

    Settings = FSLoRASettings
    METRICS = {
        **FedIT.METRICS,
        "mean_k": "mean sketch size k_i of the arrived clients",
        "mean_r_over_k": "mean r/k_i of the arrived clients (L-bar/L, Theorem 4.4)",
        "sketch_penalty": "mean r^2/k_i^2 of the arrived clients (L-tilde/L, Theorem 4.4)",
    }

    def __init__(self, settings: FSLoRASettings, *, scenario: Scenario) -> None:
        super().__init__(settings, scenario=scenario)
        self.ratios = client_ratios(settings, scenario)  # (N,) k_i / r, fixed for the run
        lc = scenario.learner
        if lc.kind == "lora" and lc.optimizer == "adam" and lc.keep_optimizer_state:
            raise ConfigError(
                "learner.keep_optimizer_state: fslora redraws every client's sketch each round, "
                "so kept Adam moments would belong to other columns of B and rows of A; set it "
                "to false"
            )

    def _n_sets(self, n_layers: int) -> int:
        return 1 if self.settings.index_sets == "shared" else n_layers

    # ---- 1. plan ---------------------------------------------------------------------------
    def plan(self, round_plan: RoundPlan) -> list[ClientPlan]:
        """k_i and a fresh index set (or one per layer) per client (Algorithm 1, line 2)."""
        rp, runtime = round_plan, self.runtime
        if len(rp.clients) == 0:
            return []
        rank = runtime.rank if runtime is not None else self._network_only_rank(rp)
        n_sets = self._n_sets(len(runtime.state.layers)) if runtime is not None else 0
        ratio = float(self.settings.topk_ratio)
        plans: list[ClientPlan] = []
        for c, r_ctrl in zip(rp.clients.tolist(), rp.ranks.tolist(), strict=True):
            k = client_rank(float(self.ratios[c]), rank, r_ctrl)
            sets = (
                draw_index_sets(
                    self.scenario.seed, c, rp.round_index, rank=rank, k=k, n_sets=n_sets
                )
                if n_sets
                else ()
            )
            plans.append(SketchPlan(c, rp.round_index, k, ratio, model_rank=rank, index_sets=sets))
        return plans

    def _network_only_rank(self, round_plan: RoundPlan) -> int:
        """r without a runtime: ``controller.rank`` for the ``sketch`` controller (which gives
        clients k_i <= r), else the round's largest rank (the other controllers give every
        client the model rank)."""
        controller = self.scenario.controller
        if controller.name == "sketch":
            return int(controller.rank)
        return int(round_plan.ranks.max())

    # ---- network-only payload model ----------------------------------------------------------
    def sized_broadcast(self, plan: ClientPlan, layer_shapes: Sequence[tuple[int, int]]) -> Message:
        """r(d + l) (``full``) or k_i(d + l) (``sketch``) per layer, plus the index sets."""
        assert isinstance(plan, SketchPlan)
        rank = plan.model_rank if self.settings.download == "full" else plan.rank
        n = rank * sum(d + ell for d, ell in layer_shapes)
        side = self._n_sets(len(layer_shapes)) * sketch_side_bits(plan.rank, plan.model_rank)
        return Message(sparse=[IndexSpace((), n, n)], side_bits=side)

    # ---- 2. broadcast ----------------------------------------------------------------------
    def broadcast(self, plan: ClientPlan, global_state: State) -> Message:
        """The global state (``full``) or the client's slices (``sketch``), and the sketch."""
        from wirelessfl.algorithms.fslora.sketch_slices import gather_slices

        assert isinstance(plan, SketchPlan)
        layers = self.runtime_or_fail().state.layers
        side = self._n_sets(len(layers)) * sketch_side_bits(plan.rank, plan.model_rank)
        if self.settings.download == "full":
            return Message(shared=dict(global_state), side_bits=side)
        sets = plan.layer_sets(len(layers))
        return Message(shared=gather_slices(global_state, layers, sets), side_bits=side)

    # ---- 3. train --------------------------------------------------------------------------
    def client_start(self, plan: ClientPlan, shared: State) -> State:
        """The rank-k_i slices ``B[:, I]``, ``A[I, :]`` (and the head) of what was sent."""
        from wirelessfl.algorithms.fslora.sketch_slices import gather_slices

        if self.settings.download == "sketch":
            return shared
        assert isinstance(plan, SketchPlan)
        layers = self.runtime_or_fail().state.layers
        return gather_slices(shared, layers, plan.layer_sets(len(layers)))

    def train(
        self,
        plans: Sequence[ClientPlan],
        starts: Sequence[State],
        private: PrivateState,
        *,
        record_grad_norms: bool = False,
    ) -> list[LocalResult]:
        """Each client trains its slices as a rank-k_i LoRA scaled alpha/k_i (eqs. 2-4)."""
        slices = [self.client_start(p, s) for p, s in zip(plans, starts, strict=True)]
        return super().train(plans, slices, private, record_grad_norms=record_grad_norms)

    # ---- 4. the client's message ---------------------------------------------------------------
    def upload(self, plan: ClientPlan, delta: State) -> Message:
        """The slices' update (k_i columns of Delta B, rows of Delta A per layer), the head."""
        assert isinstance(plan, SketchPlan)
        message = super().upload(plan, delta)
        message.diagnostics["k"] = plan.rank
        message.diagnostics["r"] = plan.model_rank
        return message

    # ---- 5. aggregation -----------------------------------------------------------------------
    def global_update(self, update: State, plan: ClientPlan, rank: int) -> State:
        """eq. (5)'s term of one client: its slices at their indices in zero rank-r tensors."""
        from wirelessfl.algorithms.fslora.sketch_slices import scatter_slices

        assert isinstance(plan, SketchPlan)
        layers = self.runtime_or_fail().state.layers
        return scatter_slices(update, layers, plan.layer_sets(len(layers)), rank)

    # ---- 6. metrics ----------------------------------------------------------------------------
    def metrics(
        self, global_state: State, messages: dict[int, Message], round_plan: RoundPlan
    ) -> dict[str, float]:
        """Sent fraction, mean k_i and Theorem 4.4's smoothness factors over the arrived."""
        k = np.array([m.diagnostics["k"] for m in messages.values()], dtype=float)
        r = np.array([m.diagnostics["r"] for m in messages.values()], dtype=float)
        if k.size == 0:
            mean_k = mean_r_over_k = penalty = math.nan
        else:
            mean_k = float(k.mean())
            mean_r_over_k = float(np.mean(r / k))
            penalty = float(np.mean((r / k) ** 2))
        return {
            **super().metrics(global_state, messages, round_plan),
            "mean_k": mean_k,
            "mean_r_over_k": mean_r_over_k,
            "sketch_penalty": penalty,
        }
