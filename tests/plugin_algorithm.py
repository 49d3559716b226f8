"""A federated algorithm defined outside the package, for the plug-in tests.

``HalfRankPersonalHead``: clients with an odd id train at half the model rank (per-client
plans, in its cost model, so the controllers cost what trains); every client keeps its own
task head (private state: never sent, never averaged) and sends its dense LoRA update; the
server zero-pads the half-rank updates to the global rank and takes their data-weighted mean
(shape-changing aggregation).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch

from wirelessfl.algorithms import FederatedAlgorithm, Message
from wirelessfl.algorithms.cost import CostModel
from wirelessfl.algorithms.state_ops import add_weighted
from wirelessfl.config.schema import option
from wirelessfl.training.rank_padding import truncate_rank, zero_pad_rank


@dataclass
class HalfRankSettings:
    """Settings of :class:`HalfRankPersonalHead` (``strategy.*``)."""

    min_rank: int = option(1, ge=1, doc="lowest rank a client trains at")


class HalfRankCost(CostModel):
    """Odd clients at half the controller's rank; the head never travels (it is private)."""

    def client_profile(self, client):
        return client % 2

    def plan(self, round_plan, *, model_rank=None):
        plans = super().plan(round_plan, model_rank=model_rank)
        return [
            replace(p, rank=max(self.settings.min_rank, p.rank // 2)) if p.client % 2 else p
            for p in plans
        ]

    @property
    def dense_values(self):
        return 0


class HalfRankPersonalHead(FederatedAlgorithm):
    """Per-client ranks, private heads, zero-padded mean of the LoRA updates."""

    Settings = HalfRankSettings
    CostModel = HalfRankCost
    METRICS = {"mean_rank": "mean rank of the arrived clients"}

    def broadcast(self, plan, global_state):
        layers = self.runtime.state.layers
        lora = {n: global_state[n] for layer in layers for n in (layer.a_param, layer.b_param)}
        return Message(shared=truncate_rank(lora, layers, plan.rank))

    def train(self, plans, starts, private, *, record_grad_norms=False):
        heads = [private.get(p.client).get("head") for p in plans]
        full = [
            {**start, **(head if head is not None else self.initial_head)}
            for start, head in zip(starts, heads, strict=True)
        ]
        return super().train(plans, full, private, record_grad_norms=record_grad_norms)

    def initial_state(self):
        state = super().initial_state()
        full = self.runtime.state.full_names
        self.initial_head = {n: state[n].clone() for n in full}
        return state

    def client_message(self, plan, start, result, private):
        message = Message()
        for name, value in start.shared.items():
            message.shared[name] = result.local[name] - value
        message.private["head"] = {
            n: result.local[n].detach().clone() for n in self.runtime.state.full_names
        }
        return message

    def aggregate(self, global_state, messages, plans, round_plan):
        layers = self.runtime.state.layers
        rank = self.runtime.rank
        ids = list(messages)
        p = torch.tensor([float(self.runtime.data_fractions[c]) for c in ids])
        weights = (p / p.sum()).tolist()
        lora = {n: v for n, v in global_state.items() if n not in self.runtime.state.full_names}
        add_weighted(lora, [zero_pad_rank(messages[c].shared, layers, rank) for c in ids], weights)
        return {**global_state, **lora}

    def metrics(self, global_state, messages, round_plan):
        ranks = [
            int(m.shared[self.runtime.state.layers[0].a_param].shape[0]) for m in messages.values()
        ]
        return {"mean_rank": sum(ranks) / len(ranks) if ranks else float("nan")}
