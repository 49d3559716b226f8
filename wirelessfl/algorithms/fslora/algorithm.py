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
forward, the same gradients and the same local steps (eq. 4), exactly. With rsLoRA
(``learner.use_rslora``) the model's scaling at rank r is ``alpha/sqrt(r)`` and eq. (2) gives
the slice ``(alpha/sqrt(r))(r/k_i)``, not a rank-k_i rsLoRA's ``alpha/sqrt(k_i)``:
:attr:`FSLoRA.RANK_SCALING` is ``"sketch"``, which both trainers honour
(:func:`wirelessfl.training.stacked_ranks.rank_multiplier`). Columns of B and rows of A outside
I cannot move, whatever the optimizer.

Up: the update of the k_i columns of B and k_i rows of A per layer (``k_i (d + l)`` values;
the server drew I, so no index is sent; the run's compression stage may thin it, e.g. App.
C.2's top-k, :mod:`wirelessfl.algorithms.fslora.cost`), plus the dense task-head update.
Down: the whole global LoRA (``download: full``, Algorithm 1 line 3) or only the slices
(``download: sketch``), plus the index sets as side information. The server puts every arrived
client's slices at their indices in zero rank-r tensors and adds their weighted sum (eq. 5,
the base class's aggregate with the slices' components; zeros of unselected columns count,
which keeps the update unbiased). Evaluation is of the unsketched ``W0 + (alpha/r) B A``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from wirelessfl.algorithms.base import FederatedAlgorithm, State
from wirelessfl.algorithms.fslora.cost import FSLoRACost, SketchPlan
from wirelessfl.algorithms.fslora.settings import FSLoRASettings
from wirelessfl.algorithms.fslora.sketch import draw_index_sets
from wirelessfl.algorithms.fslora.sketch_slices import gather_slices
from wirelessfl.algorithms.message import LoraTensors, Message
from wirelessfl.errors import ConfigError
from wirelessfl.plans import ClientPlan, RoundPlan

if TYPE_CHECKING:
    from wirelessfl.config.scenario import Scenario
    from wirelessfl.training.local import LocalResult

__all__ = ["FSLoRA", "SketchPlan"]


class FSLoRA(FederatedAlgorithm):
    """Federated sketching LoRA (see the module docstring)."""

    Settings = FSLoRASettings
    CostModel = FSLoRACost
    # eq. (2): the client minimises l(W0 + s_r B S A), S = (r/k_i) sum_{j in I} e_j e_j^T, s_r
    # the model's scaling at rank r; its rank-k_i slice is scaled s_r (r/k_i), with rsLoRA too.
    RANK_SCALING = "sketch"
    METRICS = {
        "mean_k": "mean sketch size k_i of the arrived clients",
        "mean_r_over_k": "mean r/k_i of the arrived clients (L-bar/L, Theorem 4.4)",
        "sketch_penalty": "mean r^2/k_i^2 of the arrived clients (L-tilde/L, Theorem 4.4)",
    }

    def __init__(self, settings: FSLoRASettings, *, scenario: Scenario) -> None:
        super().__init__(settings, scenario=scenario)
        lc = scenario.learner
        if lc.kind == "lora" and lc.optimizer == "adam" and lc.keep_optimizer_state:
            raise ConfigError(
                "learner.keep_optimizer_state: fslora redraws every client's sketch each round, "
                "so kept Adam moments would belong to other columns of B and rows of A; set it "
                "to false"
            )

    # ---- 1. plan ---------------------------------------------------------------------------
    def plan(self, round_plan: RoundPlan) -> list[ClientPlan]:
        """The cost model's k_i and a fresh index set (or one per layer) per client
        (Algorithm 1, line 2)."""
        cost = self.cost_or_fail()
        n_sets = cost.n_sets()
        out: list[ClientPlan] = []
        for p in super().plan(round_plan):
            assert isinstance(p, SketchPlan)
            sets = draw_index_sets(
                self.scenario.seed,
                p.client,
                p.round_index,
                rank=p.model_rank,
                k=p.rank,
                n_sets=n_sets,
            )
            out.append(
                SketchPlan(
                    p.client,
                    p.round_index,
                    p.rank,
                    p.ratio,
                    model_rank=p.model_rank,
                    index_sets=sets,
                )
            )
        return out

    def _sets(self, plan: ClientPlan) -> tuple[tuple[int, ...], ...]:
        assert isinstance(plan, SketchPlan)
        return plan.layer_sets(len(self.runtime_or_fail().state.layers))

    # ---- 2. broadcast ----------------------------------------------------------------------
    def broadcast(self, plan: ClientPlan, global_state: State) -> Message:
        """The global state (``full``) or the client's slices (``sketch``), and the sketch."""
        side = self.cost_or_fail().download(plan).side_bits
        if self.settings.download == "full":
            return Message(shared=dict(global_state), side_bits=side)
        layers = self.runtime_or_fail().state.layers
        return Message(shared=gather_slices(global_state, layers, self._sets(plan)), side_bits=side)

    # ---- 3. train --------------------------------------------------------------------------
    def client_start(self, plan: ClientPlan, downloaded: State) -> State:
        """The rank-k_i slices ``B[:, I]``, ``A[I, :]`` (and the head) of what was sent: the
        client trains them as a rank-k_i LoRA scaled alpha/k_i, (alpha/sqrt(r))(r/k_i) with
        rsLoRA (eqs. 2-4, :attr:`RANK_SCALING`)."""
        if self.settings.download == "sketch":
            return downloaded
        return gather_slices(downloaded, self.runtime_or_fail().state.layers, self._sets(plan))

    # ---- 4. the client's message ---------------------------------------------------------------
    def lora_tensors(self, plan: ClientPlan) -> list[LoraTensors]:
        """Every layer's slice, at its index set's components."""
        layers = self.runtime_or_fail().state.layers
        return [
            LoraTensors(layer.name, layer.b_param, layer.a_param, tuple(sets))
            for layer, sets in zip(layers, self._sets(plan), strict=True)
        ]

    def client_message(
        self, plan: ClientPlan, start: Message, result: LocalResult, private: dict[str, Any]
    ) -> Message:
        """The slices' update (k_i columns of Delta B, rows of Delta A per layer), the head."""
        assert isinstance(plan, SketchPlan)
        message = super().client_message(plan, start, result, private)
        message.diagnostics["k"] = plan.rank
        message.diagnostics["r"] = plan.model_rank
        return message

    # ---- 6. metrics ----------------------------------------------------------------------------
    def metrics(
        self, global_state: State, messages: dict[int, Message], round_plan: RoundPlan
    ) -> dict[str, float]:
        """Mean k_i and Theorem 4.4's smoothness factors over the arrived."""
        k = np.array([m.diagnostics["k"] for m in messages.values()], dtype=float)
        r = np.array([m.diagnostics["r"] for m in messages.values()], dtype=float)
        if k.size == 0:
            mean_k = mean_r_over_k = penalty = math.nan
        else:
            mean_k = float(k.mean())
            mean_r_over_k = float(np.mean(r / k))
            penalty = float(np.mean((r / k) ** 2))
        return {"mean_k": mean_k, "mean_r_over_k": mean_r_over_k, "sketch_penalty": penalty}
