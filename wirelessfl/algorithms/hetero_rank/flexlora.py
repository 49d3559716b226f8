"""FlexLoRA: heterogeneous ranks by averaging full-size products and redistributing their SVD.

Bai et al., "Federated Fine-tuning of Large Language Models under Heterogeneous Tasks and
Client Resources", arXiv:2402.11505; a heterogeneous-rank baseline of FSLoRA. Client i trains
at rank r_i (``strategy.sketch_ratio`` / ``ratio_choices`` / ``ratio_by_class``). Each round:

1. the server sends client i the top-r_i truncation of the global update
   (:func:`~wirelessfl.algorithms.hetero_rank.svd_redistribution.client_start`) and the task head:
   ``r_i (d_in + d_out)`` values per adapted layer;
2. the client trains it and sends its factors B_i, A_i (same size) and its head update;
3. the server forms every arrived client's *effective* product ``s(r_i) B_i A_i``
   (s(r) = alpha / r: the runtime trains a rank-r_i client at that scaling; the authors' code
   leaves it out, which weighs the ranks wrongly when they differ), takes their weighted mean W
   (``strategy.aggregation``) per layer, and keeps the rank-r truncation of W's SVD as the
   global factors (Sigma in B, as the authors' code), which the test metrics evaluate.

The head is averaged as an update. Round 0 sends the initial factors (B = 0) cut as they are.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import torch

from wirelessfl.algorithms.base import FederatedAlgorithm, State
from wirelessfl.algorithms.hetero_rank.cost import FlexLoRACost
from wirelessfl.algorithms.hetero_rank.lora_products import layer_scaling, lora_product
from wirelessfl.algorithms.hetero_rank.settings import FlexLoRASettings
from wirelessfl.algorithms.hetero_rank.svd_redistribution import (
    client_start,
    svd_flops,
    truncated_factors,
)
from wirelessfl.algorithms.message import Message
from wirelessfl.plans import ClientPlan, RoundPlan

if TYPE_CHECKING:
    from wirelessfl.training.local import LocalResult

__all__ = ["FlexLoRA"]


class FlexLoRA(FederatedAlgorithm):
    """Truncated-SVD redistribution of the mean effective product (module docstring)."""

    Settings = FlexLoRASettings
    CostModel = FlexLoRACost
    METRICS = {
        "server_flops": "server FLOPs of the round: products 2 d_out d_in r_i per client and "
        "layer, plus a thin SVD (14 m n^2 + 8 n^3) per layer",
        "truncation_error": "||W - W_r||_F / ||W||_F over the adapted layers (W: the mean "
        "product, W_r: its rank-r truncation)",
    }

    def __init__(self, settings: Any, *, scenario: Any) -> None:
        super().__init__(settings, scenario=scenario)
        self._measured = {name: math.nan for name in self.METRICS}

    # ---- 1. plan: the cost model's rank r_i per client -------------------------------------

    # ---- 2. broadcast ----------------------------------------------------------------------
    def broadcast(self, plan: ClientPlan, global_state: State) -> Message:
        """The top-r_i truncation ``s(r_i) B_i A_i = W_{r_i}`` and the head."""
        runtime = self.runtime_or_fail()
        layers, r = runtime.state.layers, runtime.rank
        ratio = {
            layer.name: layer_scaling(runtime.model, layer, r)
            / layer_scaling(runtime.model, layer, plan.rank)
            for layer in layers
        }
        return Message(shared=client_start(global_state, layers, plan.rank, ratio))

    # ---- 4. the client's message -------------------------------------------------------------
    def client_message(
        self, plan: ClientPlan, start: Message, result: LocalResult, private: dict[str, Any]
    ) -> Message:
        """The trained factors at r_i (named for the compression stage) and the head's
        update."""
        runtime = self.runtime_or_fail()
        begin, local = start.shared, result.local
        message = Message(lora=self.lora_tensors(plan))
        for layer in runtime.state.layers:
            for name in (layer.a_param, layer.b_param):
                message.shared[name] = local[name]
        for name in runtime.state.full_names:
            message.shared[name] = local[name] - begin[name]
        return message

    # ---- 5. aggregation -----------------------------------------------------------------------
    def aggregate(
        self,
        global_state: State,
        messages: dict[int, Message],
        plans: dict[int, ClientPlan],
        round_plan: RoundPlan,
    ) -> State:
        """Per layer ``W = sum_i w_i s(r_i) B_i A_i`` -> the rank-r truncation of its SVD;
        the head += sum_i w_i Delta_i."""
        runtime = self.runtime_or_fail()
        ids = list(messages)
        weights = self.aggregation_weights(ids, round_plan)
        r, model = runtime.rank, runtime.model
        flops = residual = total = 0.0
        with torch.no_grad():
            for layer in runtime.state.layers:
                w = sum(
                    weight
                    * layer_scaling(model, layer, plans[c].rank)
                    * lora_product(messages[c].shared, layer)
                    for c, weight in zip(ids, weights, strict=True)
                )
                b, a, tail = truncated_factors(w, r, layer_scaling(model, layer, r))
                a_shape = global_state[layer.a_param].shape
                b_shape = global_state[layer.b_param].shape
                global_state[layer.a_param] = a.reshape(a_shape)
                global_state[layer.b_param] = b.reshape(b_shape)
                d_out, d_in = w.shape
                flops += sum(2.0 * d_out * d_in * plans[c].rank for c in ids)
                flops += svd_flops(d_out, d_in)
                residual += tail
                total += float(w.square().sum())
            for name in runtime.state.full_names:
                for c, weight in zip(ids, weights, strict=True):
                    global_state[name].add_(messages[c].shared[name], alpha=float(weight))
        self._measured = {
            "server_flops": flops,
            "truncation_error": math.sqrt(residual / total) if total > 0 else 0.0,
        }
        return global_state

    # ---- 6. metrics ----------------------------------------------------------------------------
    def metrics(
        self, global_state: State, messages: dict[int, Message], round_plan: RoundPlan
    ) -> dict[str, float]:
        """The aggregation's server FLOPs and truncation error (NaN when nobody arrived)."""
        measured = self._measured if messages else {name: math.nan for name in self.METRICS}
        self._measured = {name: math.nan for name in self.METRICS}
        return dict(measured)
