"""H2Tune's baselines on clients with different base models: LOCAL, FLLM and HetLoRA.

"H2Tune: Federated Foundation Model Fine-Tuning with Hybrid Heterogeneity" (Guo et al., arXiv
2507.22633), §5.1. Every client trains plain LoRA of its rank r_k on its group's base model
(:mod:`wirelessfl.algorithms.h2tune.hetero`) plus a private task head (tasks differ, so heads are
never shared). What is federated:

- ``h2tune_local`` (LOCAL): nothing; every client trains alone.
- ``fllm`` (FLLM, FedAvg of LoRA): the factors of clients whose shapes match, i.e. the same
  base model and the same rank; a client alone in its class trains alone.
- ``h2tune_hetlora`` (HetLoRA, Cho et al., arXiv 2401.06432): the factors of clients with the
  same base model, whatever their rank: the server sends the class's factors cut to the
  client's r_k and adds the data-weighted sum of the zero-padded updates (HetLoRA's
  truncation and zero padding; no self-pruning). Clients with different base models cannot
  share LoRA factors, so HetLoRA runs "where shapes allow".

In FLLM and HetLoRA a client sends its trained factors at rank r_k (r_k (d_in + d_out) values
per adapted layer) and downloads its class's factors at r_k; the server's update of class c is
``W_c += sum_k w_k pad(trained_k - sent_k)`` with w_k = N^k over the arrived members' N
(FedAvg's weights, and HetLoRA's default).
"""

from __future__ import annotations

from abc import abstractmethod
from typing import TYPE_CHECKING, Any

from wirelessfl.algorithms.base import State
from wirelessfl.algorithms.h2tune.cost import FederatedLoRAGroupsCost, LocalGroupsCost
from wirelessfl.algorithms.h2tune.hetero import HeteroAlgorithm
from wirelessfl.algorithms.h2tune.settings import (
    FLLMSettings,
    HeteroHetLoRASettings,
    HeteroLocalSettings,
)
from wirelessfl.algorithms.message import Message
from wirelessfl.plans import ClientPlan, RoundPlan

if TYPE_CHECKING:
    from wirelessfl.training.local import LocalResult

__all__ = ["FLLM", "HeteroHetLoRA", "HeteroLocal"]


class HeteroLocal(HeteroAlgorithm):
    """LOCAL: every client trains LoRA of rank r_k and its head alone (module docstring)."""

    Settings = HeteroLocalSettings
    CostModel = LocalGroupsCost


class _SharedLoRA(HeteroAlgorithm):
    """LoRA factors federated within classes of clients (:meth:`class_of`)."""

    CostModel = FederatedLoRAGroupsCost

    @abstractmethod
    def class_of(self, client: int) -> str:
        """The key of ``client``'s class: clients of one class share their LoRA factors."""

    def class_width(self, key: str) -> int:
        """The rank of class ``key``'s global factors: its members' largest r_k."""
        return max(self.group(c).rank for c in self.members[key])

    def start(self, *, rank: int, seed: int) -> None:
        super().start(rank=rank, seed=seed)
        keys = sorted({self.class_of(c) for c in range(self.scenario.n_clients)})
        self.prefix = {key: f"class{j}/" for j, key in enumerate(keys)}
        self.members = {
            k: [c for c in range(self.scenario.n_clients) if self.class_of(c) == k] for k in keys
        }

    def federated_values(self, client: int) -> int:
        """r_k (d_in + d_out) per adapted layer of the client's model, each way."""
        rank = self.group(client).rank
        return sum(int(v.numel()) for v in self._cut(self.initial_values(client), rank).values())

    def initial_state(self) -> State:
        """Every class starts from its first member's initial factors at the class width."""
        state: State = {}
        for key, members in self.members.items():
            values = self.initial_values(members[0])
            state.update(self._cut(values, self.class_width(key), self.prefix[key]))
        return state

    @staticmethod
    def _cut(values: State, rank: int, prefix: str = "") -> State:
        """The LoRA factors of ``values`` at rank ``rank``: A (d_in, r), B (r, d_out)."""
        out = {}
        for name, v in values.items():
            if name.startswith("A."):
                out[prefix + name] = v[:, :rank]
            elif name.startswith("B."):
                out[prefix + name] = v[:rank, :]
        return out

    def _own(self, client: int, global_state: State) -> State:
        """The class's global factors at ``client``'s rank, without the class prefix."""
        prefix = self.prefix[self.class_of(client)]
        rank = self.group(client).rank
        factors = {n[len(prefix) :]: v for n, v in global_state.items() if n.startswith(prefix)}
        return self._cut(factors, rank)

    def broadcast(self, plan: ClientPlan, global_state: State) -> Message:
        """The class's factors cut to the client's rank: r_k (d_in + d_out) per layer, named as
        in the global state (with the class prefix), so :meth:`client_values` reads them from
        the download as from the global state."""
        prefix = self.prefix[self.class_of(plan.client)]
        own = self._own(plan.client, global_state)
        return Message(shared={prefix + name: v for name, v in own.items()})

    def client_values(self, client: int, global_state: State, kept: State) -> State:
        """The kept values with the first r_k components of A and B from the class."""
        out = dict(kept)
        for name, v in self._own(client, global_state).items():
            full = out[name].clone()
            if name.startswith("A."):
                full[:, : v.shape[1]] = v
            else:
                full[: v.shape[0], :] = v
            out[name] = full
        return out

    def client_message(
        self, plan: ClientPlan, start: Message, result: LocalResult, private: dict[str, Any]
    ) -> Message:
        """The trained factors at r_k up; everything trained kept."""
        rank = self.group(plan.client).rank
        return Message(shared=self._cut(result.local, rank), private=dict(result.local))

    def aggregate(
        self,
        global_state: State,
        messages: dict[int, Message],
        plans: dict[int, ClientPlan],
        round_plan: RoundPlan,
    ) -> State:
        """Per class: W_c += sum_k w_k pad(trained_k - sent_k), w_k = N^k / sum of arrived N."""
        new = {n: v.clone() for n, v in global_state.items()}
        for key, members in self.members.items():
            arrived = [c for c in members if c in messages]
            if not arrived:
                continue
            total = sum(self.clients.sizes[c] for c in arrived)
            prefix = self.prefix[key]
            for c in arrived:
                w = float(self.clients.sizes[c] / total)
                sent = self._own(c, global_state)
                for name, trained in messages[c].shared.items():
                    delta = (trained - sent[name]) * w
                    target = new[prefix + name]
                    if name.startswith("A."):
                        target[:, : delta.shape[1]] += delta
                    else:
                        target[: delta.shape[0], :] += delta
        return new


class FLLM(_SharedLoRA):
    """FLLM: FedAvg of the LoRA factors among clients of the same base model and rank."""

    Settings = FLLMSettings

    def class_of(self, client: int) -> str:
        g = self.group(client)
        return f"{g.model_key}|r{g.rank}"


class HeteroHetLoRA(_SharedLoRA):
    """HetLoRA among clients of the same base model, zero-padding their ranks."""

    Settings = HeteroHetLoRASettings

    def class_of(self, client: int) -> str:
        return self.group(client).model_key
