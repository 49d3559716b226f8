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
from wirelessfl.algorithms.hetero_rank.cost import FedStackCost
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

__all__ = ["FedStack"]


class FedStack(FederatedAlgorithm):
    """Stack, merge into the base, re-initialise (module docstring)."""

    Settings = FedStackSettings
    CostModel = FedStackCost
    EXPORTABLE = False  # the global state is a merged base update, not a peft adapter
    METRICS = {
        "stack_rank": "rank stacked this round: the sum of the arrived clients' r_i",
        "merged_norm": "||Delta||_F of the merged update over the adapted layers",
    }

    def __init__(self, settings: Any, *, scenario: Any) -> None:
        super().__init__(settings, scenario=scenario)
        self._merge_flops: dict[int, float] = {}  # client -> merge FLOPs of this round
        self._merged: State = {}  # the merged updates the round's clients train on

    @property
    def stacks(self) -> FedStackCost:
        """The cost model, which keeps the stacked ranks and the clients' last downloads."""
        cost = self.cost_or_fail()
        assert isinstance(cost, FedStackCost)
        return cost

    def initial_state(self) -> State:
        """The runtime's head, zero LoRA factors (unused) and a zero merged update per layer."""
        runtime = self.runtime_or_fail()
        state = runtime.initial_state()
        for layer in runtime.state.layers:
            for name in (layer.a_param, layer.b_param):
                state[name].zero_()
        return {**state, **zero_deltas(runtime.model, runtime.state.layers)}

    # ---- 1. plan: the cost model's rank r_i per client -------------------------------------

    # ---- 2. broadcast ----------------------------------------------------------------------
    def broadcast(self, plan: ClientPlan, global_state: State) -> Message:
        """The head (dense) and the unmerged stacks (counted by size: their sum is the
        merged update the client trains on)."""
        runtime = self.runtime_or_fail()
        sizes = self.stacks.stack_sizes(plan)
        self._merge_flops[plan.client] = sum(flops for _, flops in sizes)
        self._merged = {
            delta_name(layer): global_state[delta_name(layer)] for layer in runtime.state.layers
        }
        message = Message(shared={name: global_state[name] for name in runtime.state.full_names})
        values = sum(n for n, _ in sizes)
        if values:
            message.sparse.append(IndexSpace.dense(values))
        return message

    # ---- 3. train --------------------------------------------------------------------------
    def client_start(self, plan: ClientPlan, downloaded: State) -> State:
        """A fresh rank-r_i adapter (peft's init, from the generator addressed by (seed,
        ``fedstack_init``, client, round)) and the downloaded head."""
        runtime = self.runtime_or_fail()
        fresh = fresh_factors(
            runtime.state.params,
            runtime.state.layers,
            plan.rank,
            runtime.generator("fedstack_init", plan.client, plan.round_index),
        )
        return {**downloaded, **fresh}

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
        with merged_base(runtime.model, runtime.state.layers, self._merged):
            return super().train(plans, starts, private, record_grad_norms=record_grad_norms)

    # ---- 4. the client's message -------------------------------------------------------------
    def client_message(
        self, plan: ClientPlan, start: Message, result: LocalResult, private: dict[str, Any]
    ) -> Message:
        """The trained adapter B_i, A_i at r_i (named for the compression stage) and the
        head's update."""
        runtime = self.runtime_or_fail()
        local = result.local
        message = Message(lora=self.lora_tensors(plan))
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
            "stack_rank": float(self.stacks.stack_ranks.get(round_plan.round_index, 0)),
            "merged_norm": math.sqrt(squares),
        }

    # ---- persistence: the cost model's stack ranks and downloads (the default) -------------
    def training_state(self) -> dict[str, Any]:
        """The checkpointed state and the round's merged updates (``train`` trains on them)."""
        return {**self.state_dict(), "merged": dict(self._merged)}

    def load_training_state(self, state: dict[str, Any]) -> None:
        self.load_state_dict(state)
        self._merged = dict(state["merged"])
