"""FedStack (FLoRA): fresh rank-r_i adapters each round, stacked and merged into the base.

Wang et al., "FLoRA: Federated Fine-Tuning Large Language Models with Heterogeneous Low-Rank
Adaptations", arXiv:2409.05976 ("FedStackLoRA" among FSLoRA's baselines). Client i trains at
rank r_i (``strategy.sketch_ratio`` / ``ratio_choices`` / ``ratio_by_class``). Each round:

1. client i downloads the stacks it has not merged yet, those of the rounds since it last
   downloaded (all of them the first time): per adapted layer ``sum_u R_u (d_in + d_out)``
   values with ``R_u`` the stacked rank of round u (the sum of that round's arrived r_j),
   or the dense ``d_in d_out`` sum of those stacks when that is smaller; plus the task head.
   It merges them into its base weights (``2 d_out d_in sum_u R_u`` FLOPs per layer, or
   ``d_out d_in`` to add a dense sum), so its base is ``W0 + Delta`` with Delta the server's
   merged update;
2. the client trains a freshly initialised rank-r_i LoRA (peft's init: B = 0, A
   Kaiming-uniform from the generator addressed by (seed, ``fedstack_init``, client, round))
   on that base and sends B_i, A_i (``r_i (d_in + d_out)`` values per layer) and its head
   update;
3. the server stacks the arrived adapters: ``Delta += sum_i w_i s(r_i) B_i A_i`` per layer
   (``strategy.aggregation``; s(r) = alpha / r), the head += the weighted sum of its updates.

The global state holds Delta per layer under ``<layer>.merged_delta`` (base-weight shape);
its LoRA factors stay zero and are never used. Training and the test metrics run on
``W0 + Delta`` (:func:`~wirelessfl.algorithms.hetero_rank.merged_base.merged_base`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch

from wirelessfl.algorithms.base import FederatedAlgorithm, State
from wirelessfl.algorithms.client_ranks import client_ratios, hetero_rank_plans
from wirelessfl.algorithms.hetero_rank.fresh_lora import fresh_factors
from wirelessfl.algorithms.hetero_rank.lora_products import layer_scaling, lora_product
from wirelessfl.algorithms.hetero_rank.merged_base import (
    as_base_shape,
    delta_name,
    merged_base,
    zero_deltas,
)
from wirelessfl.algorithms.hetero_rank.settings import FedStackSettings
from wirelessfl.algorithms.message import IndexSpace, Message
from wirelessfl.plans import ClientPlan, RoundPlan

if TYPE_CHECKING:
    from wirelessfl.training.local import LocalResult
    from wirelessfl.training.private_state import PrivateState

__all__ = ["FedStack", "stack_download"]


def stack_download(stacked_rank: int, d_in: int, d_out: int) -> tuple[int, float]:
    """(values sent, client merge FLOPs) of one layer for stacks of total rank
    ``stacked_rank``: the stacks and their products, or the dense sum and one addition when
    that is smaller."""
    stacks, dense = stacked_rank * (d_in + d_out), d_in * d_out
    if stacked_rank == 0:
        return 0, 0.0
    if stacks <= dense:
        return stacks, 2.0 * dense * stacked_rank
    return dense, float(dense)


class FedStack(FederatedAlgorithm):
    """Stack, merge into the base, re-initialise (module docstring)."""

    Settings = FedStackSettings
    METRICS = {
        "stack_rank": "rank stacked this round: the sum of the arrived clients' r_i",
        "merged_norm": "||Delta||_F of the merged update over the adapted layers",
    }

    def __init__(self, settings: Any, *, scenario: Any) -> None:
        super().__init__(settings, scenario=scenario)
        self.ratios = client_ratios(settings, scenario)  # (N,) r_i / r, fixed for the run
        self.stack_ranks: dict[int, int] = {}  # round -> rank stacked that round
        self.synced: dict[int, int] = {}  # client -> round of its last download
        self._merge_flops: dict[int, float] = {}  # client -> merge FLOPs of this round
        self._merged: State = {}  # the merged updates the round's clients train on

    def initial_state(self) -> State:
        """The runtime's head, zero LoRA factors (unused) and a zero merged update per layer."""
        runtime = self.runtime_or_fail()
        state = runtime.initial_state()
        for layer in runtime.state.layers:
            for name in (layer.a_param, layer.b_param):
                state[name].zero_()
        return {**state, **zero_deltas(runtime.model, runtime.state.layers)}

    # ---- 1. plan ---------------------------------------------------------------------------
    def plan(self, round_plan: RoundPlan) -> list[ClientPlan]:
        """Rank r_i per client."""
        return hetero_rank_plans(self, round_plan, self.ratios)

    # ---- 2. broadcast ----------------------------------------------------------------------
    def broadcast(self, plan: ClientPlan, global_state: State) -> Message:
        """The head (dense) and the unmerged stacks (counted by size: their sum is the
        merged update the client trains on)."""
        runtime = self.runtime_or_fail()
        t, c = plan.round_index, plan.client
        stacked = sum(self.stack_ranks.get(u, 0) for u in range(self.synced.get(c, 0), t))
        sizes = [stack_download(stacked, d_in, d_out) for d_in, d_out in runtime.layer_shapes]
        self.synced[c] = t
        self._merge_flops[c] = sum(flops for _, flops in sizes)
        self._merged = {
            delta_name(layer): global_state[delta_name(layer)] for layer in runtime.state.layers
        }
        message = Message(shared={name: global_state[name] for name in runtime.state.full_names})
        values = sum(n for n, _ in sizes)
        if values:
            message.sparse.append(IndexSpace((), values, values))
        return message

    # ---- 3. train --------------------------------------------------------------------------
    def train(
        self,
        plans: Sequence[ClientPlan],
        starts: Sequence[State],
        private: PrivateState,
        *,
        record_grad_norms: bool = False,
    ) -> list[LocalResult]:
        """Fresh rank-r_i adapters and the downloaded head, trained on ``W0 + Delta``."""
        runtime = self.runtime_or_fail()
        layers, params = runtime.state.layers, runtime.state.params
        fresh = [
            {
                **start,
                **fresh_factors(
                    params,
                    layers,
                    p.rank,
                    runtime.generator("fedstack_init", p.client, p.round_index),
                ),
            }
            for p, start in zip(plans, starts, strict=True)
        ]
        with merged_base(runtime.model, layers, self._merged):
            return super().train(plans, fresh, private, record_grad_norms=record_grad_norms)

    # ---- 4. the client's message -------------------------------------------------------------
    def client_message(
        self, plan: ClientPlan, start: Message, result: LocalResult, private: dict[str, Any]
    ) -> Message:
        """The trained adapter B_i, A_i at r_i and the head's update."""
        runtime = self.runtime_or_fail()
        local = result.local
        message = Message()
        for layer in runtime.state.layers:
            for name in (layer.a_param, layer.b_param):
                message.shared[name] = local[name]
        for name in runtime.state.full_names:
            message.shared[name] = local[name] - start.shared[name]
        return message

    def client_flops(self, plan: ClientPlan) -> float:
        """Local steps at r_i plus the merge of the downloaded stacks."""
        return super().client_flops(plan) + self._merge_flops.get(plan.client, 0.0)

    # ---- 5. aggregation -----------------------------------------------------------------------
    def aggregate(
        self,
        global_state: State,
        messages: dict[int, Message],
        plans: dict[int, ClientPlan],
        round_plan: RoundPlan,
    ) -> State:
        """Delta += sum_i w_i s(r_i) B_i A_i per layer; head += sum_i w_i Delta_i."""
        runtime = self.runtime_or_fail()
        ids = list(messages)
        weights = self.aggregation_weights(ids, round_plan)
        model = runtime.model
        with torch.no_grad():
            for c, weight in zip(ids, weights, strict=True):
                shared = messages[c].shared
                for layer in runtime.state.layers:
                    scale = float(weight) * layer_scaling(model, layer, plans[c].rank)
                    product = as_base_shape(model, layer, lora_product(shared, layer))
                    global_state[delta_name(layer)].add_(product, alpha=scale)
                for name in runtime.state.full_names:
                    global_state[name].add_(shared[name], alpha=float(weight))
        self.stack_ranks[round_plan.round_index] = sum(plans[c].rank for c in ids)
        return global_state

    # ---- evaluation ------------------------------------------------------------------------
    def evaluate(
        self, global_state: State, private: PrivateState | None = None
    ) -> dict[str, float]:
        """Test metrics of ``W0 + Delta`` with the global head (the LoRA factors are zero)."""
        runtime = self.runtime_or_fail()
        values = {name: global_state[name] for name in runtime.state.params}
        with merged_base(runtime.model, runtime.state.layers, global_state):
            return runtime.evaluate(values)

    # ---- 6. metrics ----------------------------------------------------------------------------
    def metrics(
        self, global_state: State, messages: dict[int, Message], round_plan: RoundPlan
    ) -> dict[str, float]:
        """The round's stacked rank and the merged update's norm."""
        layers = self.runtime_or_fail().state.layers
        squares = sum(float(global_state[delta_name(layer)].square().sum()) for layer in layers)
        return {
            "stack_rank": float(self.stack_ranks.get(round_plan.round_index, 0)),
            "merged_norm": math.sqrt(squares),
        }

    # ---- persistence -----------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """Stacked rank per round and each client's last download round."""
        return {"stack_ranks": dict(self.stack_ranks), "synced": dict(self.synced)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.stack_ranks = {int(t): int(r) for t, r in state.get("stack_ranks", {}).items()}
        self.synced = {int(c): int(t) for c, t in state.get("synced", {}).items()}

    def training_state(self) -> dict[str, Any]:
        """The checkpointed state and the round's merged updates (``train`` trains on them)."""
        return {**self.state_dict(), "merged": dict(self._merged)}

    def load_training_state(self, state: dict[str, Any]) -> None:
        self.load_state_dict(state)
        self._merged = dict(state["merged"])
