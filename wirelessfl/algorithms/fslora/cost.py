"""FSLoRA's cost model: sketches of k_i of the r rank components. No torch.

"Federated Sketching LoRA: On-Device Collaborative Fine-Tuning of Large Language Models",
W. Fang, D.-J. Han, L. Yuan, S. Hosseinalipour, C. G. Brinton, arXiv:2501.19389.

Client i's sketch size is k_i = min(the controller's cap, clip(round(ratio_i r), 1, r)), so the
controller's knob is the cap. Up: k_i (d + l) values per adapted layer (the server drew the
index set, so no index is sent), thinned by the compression stage (App. C.2's top-k is
``compression: {sparsifier: topk, ratio: 0.5, error_feedback: false}``), plus the dense head.
Down: the whole global LoRA, r (d + l) per layer (``download: full``, Algorithm 1 line 3), or
the client's slice, k_i (d + l) (``download: sketch``), plus the head and the index sets as side
bits (one set, or one per layer).

Penalty: Theorem 4.4's smoothness factor r^2 / k_i^2 per client (the round's is their mean,
L~ / L), plus, when the stage thins the upload, eq. (14)'s sparsification term at rank k_i,
4 N (1 - O)^2 r S^2 W^4 / (K O^4) (SOFT's analysis of sparsified LoRA updates, the closest
bound there is). It does not depend on the global rank r itself, only on k_i / r, so TSFA's
offline rank search takes the largest rank the budget allows (every rank ties).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from optim import BoundConstants
from wirelessfl.algorithms.client_ranks import client_rank, client_ratios
from wirelessfl.algorithms.cost import CostModel
from wirelessfl.algorithms.fslora.sketch import sketch_side_bits
from wirelessfl.algorithms.message import IndexSpace, Message
from wirelessfl.plans import ClientPlan, RoundPlan

__all__ = ["FSLoRACost", "SketchPlan"]


@dataclass(frozen=True)
class SketchPlan(ClientPlan):
    """A client's FSLoRA round: ``rank`` is k_i; the sketch is ``index_sets``.

    Attributes:
        model_rank: r, the global rank.
        index_sets: the index sets I (k_i ascending ints in ``[0, r)``): one for every layer
            (``index_sets: shared``) or one per adapted layer; empty in a plan that is only
            costed (sizes do not depend on which indices).
    """

    model_rank: int = 0
    index_sets: tuple[tuple[int, ...], ...] = ()

    def layer_sets(self, n_layers: int) -> tuple[tuple[int, ...], ...]:
        """One index set per adapted layer (the shared set repeated)."""
        return self.index_sets * n_layers if len(self.index_sets) == 1 else self.index_sets


class FSLoRACost(CostModel):
    """FSLoRA (module docstring)."""

    PENALTY_DEPENDS_ON_RANK = False
    FIXED_RANKS = False
    QUANTIZER_PENALTY = False  # Theorem 4.4's r^2 / k_i^2 has no quantiser term
    FIXED_RANKS_REASON = "sketches k_i of the r rank components of every adapted layer"

    def __init__(self, settings: Any, **kwargs: Any) -> None:
        super().__init__(settings, **kwargs)
        self.ratios = client_ratios(settings, self.scenario)  # (N,) k_i / r, fixed for the run

    def client_profile(self, client: int) -> Any:
        return float(self.ratios[client])

    def size_key(self, plan: ClientPlan) -> Any:
        assert isinstance(plan, SketchPlan)
        return (plan.rank, plan.ratio, plan.model_rank)

    def n_sets(self) -> int:
        """Index sets per client per round: one, or one per adapted layer."""
        return 1 if self.settings.index_sets == "shared" else len(self.lora_shapes)

    # ---- plan -------------------------------------------------------------------------------
    def plan(self, round_plan: RoundPlan, *, model_rank: int | None = None) -> list[ClientPlan]:
        """k_i per client (no index sets: the algorithm draws them when it trains)."""
        r = self.rank_of(round_plan, model_rank)
        return [
            SketchPlan(
                p.client,
                p.round_index,
                client_rank(float(self.ratios[p.client]), r, p.rank),
                p.ratio,
                model_rank=r,
            )
            for p in super().plan(round_plan, model_rank=r)
        ]

    # ---- sizes ------------------------------------------------------------------------------
    def download(self, plan: ClientPlan) -> Message:
        """r (d + l) (``full``) or k_i (d + l) (``sketch``) per layer, the head, and the index
        sets as side bits."""
        assert isinstance(plan, SketchPlan)
        rank = plan.model_rank if self.settings.download == "full" else plan.rank
        n = rank * sum(d + ell for d, ell in self.lora_shapes) + self.dense_values
        side = self.n_sets() * sketch_side_bits(plan.rank, plan.model_rank)
        return Message(sparse=[IndexSpace.dense(n)], side_bits=side)

    # ---- penalty ----------------------------------------------------------------------------
    def client_penalty(
        self, plan: ClientPlan, *, n_scheduled: int, constants: BoundConstants
    ) -> float:
        """r^2 / k_i^2 (Theorem 4.4), plus eq. (14)'s sparsification term when thinned."""
        assert isinstance(plan, SketchPlan)
        offset, a = self.ratio_penalty_parts([plan], n_scheduled=n_scheduled, constants=constants)
        o = plan.ratio
        return offset + a * (1.0 - o) ** 2 / o**4

    def ratio_penalty_parts(
        self, plans: Sequence[ClientPlan], *, n_scheduled: int, constants: BoundConstants
    ) -> tuple[float, float]:
        """offset = mean r^2 / k_i^2; a = eq. (14)'s 4 N mean(k_i) S^2 W^4 / K."""
        ratios = [(p.model_rank / p.rank) ** 2 for p in plans]  # type: ignore[attr-defined]
        ks = [p.rank for p in plans]
        offset = ratios[0] if len(set(ratios)) == 1 else sum(ratios) / len(ratios)
        k = ks[0] if len(set(ks)) == 1 else sum(ks) / len(ks)
        c = constants
        a = 4.0 * self.scenario.n_clients * k * c.S**2 * c.W**4 / n_scheduled
        return offset, a
