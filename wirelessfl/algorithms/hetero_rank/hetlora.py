"""HetLoRA: heterogeneous ranks by truncation and zero padding.

Cho et al., "Heterogeneous LoRA for Federated Fine-tuning of On-Device Foundation Models",
EMNLP 2024 (arXiv:2401.06432); the heterogeneous-rank baseline ("HeteroLoRA") of FSLoRA.
Client i trains at rank r_i (``strategy.sketch_ratio`` / ``ratio_choices`` /
``ratio_by_class``, :mod:`wirelessfl.algorithms.client_ranks`, the ratios FSLoRA's sketches
get). Each round:

1. the server sends client i the global rank-r factors cut to their first r_i components
   (``lora_B[:, :r_i]``, ``lora_A[:r_i]``) and the task head: ``r_i (d_in + d_out)`` values
   per adapted layer;
2. the client trains them (scaled alpha / r_i by the runtime) and sends its dense update at
   r_i (same size);
3. the server zero-pads every update to r and adds their weighted sum
   (``strategy.aggregation``; ``aggregation_weights: norm`` weighs clients by
   ``||s(r_i) B_i A_i||_F`` instead, HetLoRA's sparsity-weighted aggregation).

``self_pruning`` turns on HetLoRA's local rank self-pruning: the client's loss adds
``pruning_strength * sum_layers ||B_tail A_tail||_F`` over its last components (those past
``max(1, floor(pruning_decay r_i))``); if training lowered that norm below the received
model's, the client drops the tail, sends the kept components only and trains at the kept
rank from then on (kept in :meth:`state_dict`). Defaults: no pruning, data weights (the
FSLoRA authors' runs of the baseline). The readings are in ``docs/algorithms/baselines.md``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from wirelessfl.algorithms.base import FederatedAlgorithm, State
from wirelessfl.algorithms.hetero_rank.cost import HetLoRACost
from wirelessfl.algorithms.hetero_rank.lora_products import layer_scaling, lora_product
from wirelessfl.algorithms.hetero_rank.settings import HetLoRASettings
from wirelessfl.algorithms.hetero_rank.tail_penalty import kept_rank, tail_norm, tail_penalty
from wirelessfl.algorithms.message import Message
from wirelessfl.plans import ClientPlan, RoundPlan
from wirelessfl.training.rank_padding import truncate_rank

if TYPE_CHECKING:
    from wirelessfl.training.local import LocalResult
    from wirelessfl.training.private_state import PrivateState

__all__ = ["HetLoRA"]


class HetLoRA(FederatedAlgorithm):
    """Truncated broadcast, zero-padded weighted sum of the updates (module docstring)."""

    Settings = HetLoRASettings
    CostModel = HetLoRACost
    METRICS = {
        "mean_rank": "mean rank of the arrived clients' updates",
        "pruned_clients": "clients whose self-pruned rank is below their assigned r_i",
    }

    @property
    def pruned(self) -> dict[int, int]:
        """Client -> the rank it pruned itself to (the cost model's, so controllers see it)."""
        cost = self.cost_or_fail()
        assert isinstance(cost, HetLoRACost)
        return cost.pruned

    # ---- 1. plan: the cost model's, r_i capped by a client's pruned rank ------------------------

    # ---- 2. broadcast: the default, the global state cut to r_i ------------------------------

    # ---- 3. train --------------------------------------------------------------------------
    def train(
        self,
        plans: Sequence[ClientPlan],
        starts: Sequence[State],
        private: PrivateState,
        *,
        record_grad_norms: bool = False,
    ) -> list[LocalResult]:
        """The runtime's training; with self-pruning, one client at a time with the tail
        penalty in its loss."""
        s = self.settings
        if not s.self_pruning or s.pruning_strength == 0.0:
            return super().train(plans, starts, private, record_grad_norms=record_grad_norms)
        runtime = self.runtime_or_fail()
        results = []
        for plan, start in zip(plans, starts, strict=True):
            with tail_penalty(runtime, s.pruning_strength, kept_rank(plan.rank, s.pruning_decay)):
                results += super().train(
                    [plan], [start], private, record_grad_norms=record_grad_norms
                )
        return results

    # ---- 4. the client's message -------------------------------------------------------------
    def client_message(
        self, plan: ClientPlan, start: Message, result: LocalResult, private: dict[str, Any]
    ) -> Message:
        """The dense update at the client's rank (cut to the kept rank if it self-pruned: it
        then sends fewer values than the controller planned this round, and is planned at the
        kept rank from the next)."""
        runtime = self.runtime_or_fail()
        layers = runtime.state.layers
        begin, local = start.shared, result.local
        rank = self._rank_after_pruning(plan, begin, local)
        message = super().client_message(plan, start, result, private)
        if rank < plan.rank:
            message.shared = truncate_rank(message.shared, layers, rank)
            local = truncate_rank(local, layers, rank)
        message.diagnostics["rank"] = rank
        if self.settings.aggregation_weights == "norm":  # the server could compute it: no bits
            scale = {layer.name: layer_scaling(runtime.model, layer, plan.rank) for layer in layers}
            squares = sum(
                float((scale[layer.name] * lora_product(local, layer)).square().sum())
                for layer in layers
            )
            message.diagnostics["norm"] = math.sqrt(squares)
        return message

    def _rank_after_pruning(self, plan: ClientPlan, begin: State, local: State) -> int:
        """The kept rank if self-pruning is on and training lowered the tail's norm, else
        ``plan.rank``; a pruned rank is remembered for the client's later rounds."""
        s = self.settings
        if not s.self_pruning:
            return plan.rank
        layers = self.runtime_or_fail().state.layers
        keep = kept_rank(plan.rank, s.pruning_decay)
        if keep == plan.rank or not tail_norm(local, layers, keep) < tail_norm(begin, layers, keep):
            return plan.rank
        self.pruned[plan.client] = keep
        return keep

    # ---- 5. aggregation: the default, theta <- theta + sum_i w_i pad_r(Delta_i) ----------------
    def client_weights(
        self, ids: Sequence[int], messages: dict[int, Message], round_plan: RoundPlan
    ) -> list[float]:
        """Data weights, or the norms normalised (data weights if every norm is 0)."""
        if self.settings.aggregation_weights == "norm":
            norms = [messages[c].diagnostics["norm"] for c in ids]
            total = sum(norms)
            if total > 0:
                return [n / total for n in norms]
        return self.aggregation_weights(ids, round_plan)

    # ---- 6. metrics ----------------------------------------------------------------------------
    def metrics(
        self, global_state: State, messages: dict[int, Message], round_plan: RoundPlan
    ) -> dict[str, float]:
        """Mean uploaded rank and how many clients have pruned so far."""
        ranks = [m.diagnostics["rank"] for m in messages.values()]
        return {
            "mean_rank": sum(ranks) / len(ranks) if ranks else math.nan,
            "pruned_clients": float(len(self.pruned)),
        }
