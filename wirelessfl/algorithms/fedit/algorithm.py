"""FedAvg-LoRA (FedIT) and its top-k variant: every client sends its dense LoRA update.

FedIT ("Towards Building the Federated GPT: Federated Instruction Tuning", J. Zhang et al.,
2024) is FedAvg on the LoRA factors: every client trains the global LoRA at its rank (the
controller's; the default broadcast truncates the global factors when that is lower than the
model rank), uploads ``Delta B`` and ``Delta A`` (and the dense task-head update when the head
trains), and the server adds the weighted sum of the updates, zero-padded to the global rank
(``strategy.aggregation``: ``weighted_mean`` of the arrived clients, or ``unbiased``). B and A
are averaged separately, so the product of the means is not the mean of the products.

``fedit_topk`` is the same algorithm with ``strategy.topk_ratio`` 0.5 by default: the top-k
compression of "Federated Sketching LoRA: On-Device Collaborative Fine-Tuning of Large Language
Models" (W. Fang et al., arXiv:2501.19389), App. C.2. Each client keeps, per adapted layer, the
``round(topk_ratio r_k (d + l))`` entries of largest magnitude over its ``Delta B`` and
``Delta A`` together (one index space per layer; ties to the lower position, B before A), with
no error feedback (the dropped entries are lost) and a dense download. The task head is always
sent dense. ``plan.ratio`` is ``topk_ratio`` (the fraction of its update a client sends); the
controller's sparsification O^t is not used.

This module imports without torch: the network-only learner builds these classes for their
payload model (:meth:`FedIT.sized_message`) on installs without torch, so torch and the
torch-side helpers are imported inside the methods that use them.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from channels.payload import kept_values
from wirelessfl.algorithms.base import FederatedAlgorithm, State
from wirelessfl.algorithms.fedit.settings import FedITSettings, FedITTopKSettings
from wirelessfl.algorithms.message import IndexSpace, Message
from wirelessfl.plans import ClientPlan, RoundPlan

if TYPE_CHECKING:
    from wirelessfl.training.local import LocalResult

__all__ = ["FedIT", "FedITTopK"]


class FedIT(FederatedAlgorithm):
    """FedAvg on the LoRA factors (see the module docstring)."""

    Settings = FedITSettings
    METRICS = {
        "sent_fraction": "values sent / values of the arrived clients' LoRA updates (top-k)",
    }

    # ---- 1. plan ---------------------------------------------------------------------------
    def plan(self, round_plan: RoundPlan) -> list[ClientPlan]:
        """The controller's rank per client; the ratio is ``strategy.topk_ratio``."""
        ratio = float(self.settings.topk_ratio)
        return [replace(p, ratio=ratio) for p in super().plan(round_plan)]

    # ---- network-only payload model ----------------------------------------------------------
    def sized_message(self, plan: ClientPlan, layer_shapes: Sequence[tuple[int, int]]) -> Message:
        """round(ratio r_k (d + l)) values per layer, each layer one index space."""
        layers_of_size = Counter(plan.rank * (d + ell) for d, ell in layer_shapes)
        return Message(
            sparse=[
                IndexSpace((), kept_values(plan.ratio, n), n, copies)
                for n, copies in layers_of_size.items()
            ]
        )

    # ---- 4. the client's message ---------------------------------------------------------------
    def client_start(self, plan: ClientPlan, shared: State) -> State:
        """The state the client trains from, given what the server sent (here: all of it)."""
        return shared

    def client_message(
        self, plan: ClientPlan, start: Message, result: LocalResult, private: dict[str, Any]
    ) -> Message:
        """The top-k of each layer's (Delta B, Delta A) and the dense head update."""
        begin = self.client_start(plan, start.shared)
        delta = {name: result.local[name] - value for name, value in begin.items()}
        return self.upload(plan, delta)

    def upload(self, plan: ClientPlan, delta: State) -> Message:
        """``delta`` as sent: per layer the top ``plan.ratio`` of its entries, the head dense."""
        from wirelessfl.compress.base import flat_topk_masks

        state = self.runtime_or_fail().state
        message = Message()
        sent, total = 0, 0
        for layer in state.layers:
            a, b = delta[layer.a_param], delta[layer.b_param]
            n_total = a.numel() + b.numel()
            n_keep = kept_values(plan.ratio, n_total)
            if n_keep < n_total:  # masks in the paper's orientation: theta_B = A^T, theta_A = B^T
                rank = a.shape[0]
                mask_b, mask_a = flat_topk_masks(
                    a.reshape(rank, -1).T, b.reshape(-1, rank).T, n_keep
                )
                a = a * mask_b.T.reshape(a.shape)
                b = b * mask_a.T.reshape(b.shape)
            message.add_sparse({layer.a_param: a, layer.b_param: b}, n_sent=n_keep, n_total=n_total)
            sent, total = sent + n_keep, total + n_total
        for name in state.full_names:  # the task head, trained and sent in full
            if name in delta:
                message.shared[name] = delta[name]
        message.diagnostics["sent_fraction"] = sent / total if total else math.nan
        return message

    # ---- 5. aggregation -----------------------------------------------------------------------
    def aggregate(
        self,
        global_state: State,
        messages: dict[int, Message],
        plans: dict[int, ClientPlan],
        round_plan: RoundPlan,
    ) -> State:
        """theta <- theta + sum_k w_k Delta_k, each Delta_k at the global rank."""
        from wirelessfl.algorithms.state_ops import add_weighted
        from wirelessfl.training.rank_padding import lora_rank

        runtime = self.runtime_or_fail()
        ids = list(messages)
        weights = self.aggregation_weights(ids, round_plan)
        rank = lora_rank(global_state, runtime.state.layers)
        updates = [self.global_update(messages[c].shared, plans[c], rank) for c in ids]
        add_weighted(global_state, updates, weights)
        return global_state

    def global_update(self, update: State, plan: ClientPlan, rank: int) -> State:
        """A client's update at the global ``rank``: its components zero-padded."""
        from wirelessfl.training.rank_padding import zero_pad_rank

        return zero_pad_rank(update, self.runtime_or_fail().state.layers, rank)

    # ---- 6. metrics ----------------------------------------------------------------------------
    def metrics(
        self, global_state: State, messages: dict[int, Message], round_plan: RoundPlan
    ) -> dict[str, float]:
        """The mean fraction of their LoRA update the arrived clients sent."""
        fractions = [m.diagnostics["sent_fraction"] for m in messages.values()]
        return {"sent_fraction": sum(fractions) / len(fractions) if fractions else math.nan}


class FedITTopK(FedIT):
    """FedAvg-LoRA with top-k compression of the upload (``strategy.topk_ratio`` 0.5)."""

    Settings = FedITTopKSettings
