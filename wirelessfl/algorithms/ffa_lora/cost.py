"""FFA-LoRA's cost model: only B travels. No torch.

A is frozen at its random initialisation, which every client already holds (it comes from
the run seed like the base model), so neither direction ever carries it: per adapted layer a
client sends r_k l values of its B update (l = d_out) and downloads the global B cut to r_k
(a layer of fixed rank r_l, ``learner.rank_pattern``: r_l l both ways),
plus the task head both ways. The compression stage takes B alone (a sparsifier of single
matrices: top-k, random-k, structured, none; SOFT's importance sparsifier weighs pairs and is
refused). Penalty: eq. (14)'s gamma at the client's rank and sent fraction (the default).
"""

from __future__ import annotations

from collections import Counter

from wirelessfl.algorithms.cost import CostModel
from wirelessfl.algorithms.message import IndexSpace, Message
from wirelessfl.plans import ClientPlan

__all__ = ["FFALoRACost"]


class FFALoRACost(CostModel):
    """B only, both ways (module docstring)."""

    SENDS_PAIRS = False
    SINGLE_UPDATES = True  # the base aggregate: a weighted sum of single updates

    def lora_groups(self, plan: ClientPlan) -> Counter[int]:
        """One group of r_l l values (B) per adapted layer (r_l: :meth:`lora_ranks`)."""
        groups = self.__dict__.setdefault("_b_groups_at", {})
        if plan.rank not in groups:
            pairs = zip(self.lora_shapes, self.lora_ranks(plan), strict=True)
            groups[plan.rank] = Counter(r * ell for (_, ell), r in pairs)
        return groups[plan.rank]

    def download(self, plan: ClientPlan) -> Message:
        pairs = zip(self.lora_shapes, self.lora_ranks(plan), strict=True)
        n = sum(r * ell for (_, ell), r in pairs) + self.dense_values
        return Message(sparse=[IndexSpace.dense(n)])
