"""FedAvg-LoRA (FedIT) and its top-k variant: the default steps of a federated algorithm.

FedIT ("Towards Building the Federated GPT: Federated Instruction Tuning", J. Zhang et al.,
2024) is FedAvg on the LoRA factors: every client trains the global LoRA at its rank (the
controller's; the default broadcast truncates the global factors when that is lower than the
model rank), uploads ``Delta B`` and ``Delta A`` (and the dense task-head update when the head
trains), and the server adds the weighted sum of the updates, zero-padded to the global rank
(``strategy.aggregation``: ``weighted_mean`` of the arrived clients, or ``unbiased``). B and A
are averaged separately, so the product of the means is not the mean of the products. These
are exactly the base class's steps (:class:`~wirelessfl.algorithms.base.FederatedAlgorithm`).

``fedit_topk`` is the same algorithm whose own compression stage is the top-k of "Federated
Sketching LoRA: On-Device Collaborative Fine-Tuning of Large Language Models" (W. Fang et al.,
arXiv:2501.19389), App. C.2: per adapted layer the ``round(0.5 r_k (d + l))`` entries of
largest magnitude over its ``Delta B`` and ``Delta A`` together, no error feedback, a dense
download (``wirelessfl.algorithms.fedit.cost``). Any other stage is ``compression.*``.
"""

from __future__ import annotations

from wirelessfl.algorithms.base import FederatedAlgorithm
from wirelessfl.algorithms.fedit.cost import FedITCost, FedITTopKCost
from wirelessfl.algorithms.fedit.settings import FedITSettings

__all__ = ["FedIT", "FedITTopK"]


class FedIT(FederatedAlgorithm):
    """FedAvg on the LoRA factors (see the module docstring)."""

    Settings = FedITSettings
    CostModel = FedITCost


class FedITTopK(FedIT):
    """FedAvg-LoRA with App. C.2's top-k as its own compression stage."""

    CostModel = FedITTopKCost
