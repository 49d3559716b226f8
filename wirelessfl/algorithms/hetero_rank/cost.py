"""Cost models of the heterogeneous-rank baselines: HetLoRA, FlexLoRA, FedStack. No torch.

Client i trains at r_i = min(the controller's cap, clip(round(ratio_i r), 1, r))
(:mod:`wirelessfl.algorithms.client_ranks`), so the controller's knob is the cap (a round's
rank, or a client's under the sketch controller). Every one of them sends r_i (d + l) values
per adapted layer and the head:

- HetLoRA: the update of the truncated global factors (error feedback applies); a client
  that pruned itself (``strategy.self_pruning``) is capped at its pruned rank from then on;
- FlexLoRA: its trained factors (the server multiplies them: no error feedback);
- FedStack: its fresh adapter's trained factors (no error feedback); its download is the head
  and the stacks of the rounds since its last download, or their dense sum when smaller
  (:func:`stack_download`), which this model keeps track of (:meth:`FedStackCost.aggregated`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from wirelessfl.algorithms.client_ranks import client_rank, client_ratios
from wirelessfl.algorithms.cost import CostModel
from wirelessfl.algorithms.message import IndexSpace, Message
from wirelessfl.plans import ClientPlan, RoundPlan

__all__ = ["FedStackCost", "FlexLoRACost", "HetLoRACost", "HeteroRankCost", "stack_download"]


class HeteroRankCost(CostModel):
    """Each client at its own rank r_i (module docstring)."""

    FIXED_RANKS = False
    FIXED_RANKS_REASON = (
        "truncates, merges or stacks every adapted layer at each client's own rank r_i"
    )

    def __init__(self, settings: Any, **kwargs: Any) -> None:
        super().__init__(settings, **kwargs)
        self.ratios = client_ratios(settings, self.scenario)  # (N,) r_i / r, fixed for the run

    def client_profile(self, client: int) -> Any:
        return float(self.ratios[client])

    def own_rank(self, client: int, model_rank: int, cap: int) -> int:
        """r_i of ``client`` under the controller's ``cap`` at model rank ``model_rank``."""
        return client_rank(self.ratios[client], model_rank, cap)

    def plan(self, round_plan: RoundPlan, *, model_rank: int | None = None) -> list[ClientPlan]:
        """Rank r_i per client; the stage's ratio."""
        r = self.rank_of(round_plan, model_rank)
        return [
            replace(p, rank=self.own_rank(p.client, r, p.rank))
            for p in super().plan(round_plan, model_rank=r)
        ]


class HetLoRACost(HeteroRankCost):
    """HetLoRA: r_i, capped by the rank a client pruned itself to."""

    def __init__(self, settings: Any, **kwargs: Any) -> None:
        super().__init__(settings, **kwargs)
        self.pruned: dict[int, int] = {}  # client -> its rank after self-pruning

    def client_profile(self, client: int) -> Any:
        return (float(self.ratios[client]), self.pruned.get(client))

    def own_rank(self, client: int, model_rank: int, cap: int) -> int:
        rank = super().own_rank(client, model_rank, cap)
        return min(rank, self.pruned.get(client, rank))

    def state_dict(self) -> dict[str, Any]:
        """The clients' self-pruned ranks."""
        return {"pruned": dict(self.pruned)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.pruned = {int(c): int(r) for c, r in state.get("pruned", {}).items()}


class FlexLoRACost(HeteroRankCost):
    """FlexLoRA: trained factors at r_i up, the top-r_i truncation down."""

    COMPRESSES = "factors"


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


class FedStackCost(HeteroRankCost):
    """FedStack: fresh adapters up, the unmerged stacks down (module docstring)."""

    COMPRESSES = "factors"

    def __init__(self, settings: Any, **kwargs: Any) -> None:
        super().__init__(settings, **kwargs)
        self.stack_ranks: dict[int, int] = {}  # round -> rank stacked that round
        self.synced: dict[int, int] = {}  # client -> round of its last download

    def stacked_since(self, plan: ClientPlan) -> int:
        """The rank stacked since ``plan.client`` last downloaded (all of it at first)."""
        first = self.synced.get(plan.client, 0)
        return sum(self.stack_ranks.get(u, 0) for u in range(first, plan.round_index))

    def stack_sizes(self, plan: ClientPlan) -> list[tuple[int, float]]:
        """(values sent, merge FLOPs) per adapted layer of ``plan``'s download."""
        stacked = self.stacked_since(plan)
        return [stack_download(stacked, d_in, d_out) for d_in, d_out in self.lora_shapes]

    def download(self, plan: ClientPlan) -> Message:
        """The head (dense) and the unmerged stacks (counted by size)."""
        spaces = []
        if self.dense_values:
            spaces.append(IndexSpace.dense(self.dense_values))
        values = sum(n for n, _ in self.stack_sizes(plan))
        if values:
            spaces.append(IndexSpace.dense(values))
        return Message(sparse=spaces)

    def download_key(self, plan: ClientPlan) -> Any:
        return (plan.client, plan.round_index)  # what a client missed depends on its history

    def downloaded(self, plan: ClientPlan) -> None:
        self.synced[plan.client] = plan.round_index

    def aggregated(self, round_index: int, plans: dict[int, ClientPlan]) -> None:
        self.stack_ranks[round_index] = sum(p.rank for p in plans.values())

    def state_dict(self) -> dict[str, Any]:
        """Stacked rank per round and each client's last download round."""
        return {"stack_ranks": dict(self.stack_ranks), "synced": dict(self.synced)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.stack_ranks = {int(t): int(r) for t, r in state.get("stack_ranks", {}).items()}
        self.synced = {int(c): int(t) for c, t in state.get("synced", {}).items()}
