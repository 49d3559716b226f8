"""FedIT's cost model: dense LoRA updates at the controller's rank (``fedit``), or their top-k
half without error feedback (``fedit_topk``, FSLoRA's App. C.2 compression). No torch.

Without a stage that follows the controller, the controller's knob is the rank each client
trains and sends (:mod:`wirelessfl.controllers.lyapunov`).
"""

from __future__ import annotations

from wirelessfl.algorithms.compression import StageDefaults
from wirelessfl.algorithms.cost import CostModel

__all__ = ["FedITCost", "FedITTopKCost"]

#: FSLoRA's App. C.2 top-k: half of each layer's update, no error feedback.
APPENDIX_C2_TOPK = StageDefaults(sparsifier="topk", ratio=0.5, error_feedback=False)


class FedITCost(CostModel):
    """FedAvg-LoRA: the default LoRA model with no stage of its own."""

    SINGLE_UPDATES = True  # the base aggregate: a weighted sum of single updates


class FedITTopKCost(CostModel):
    """FedAvg-LoRA with App. C.2's top-k as its own stage."""

    OWN_STAGE = APPENDIX_C2_TOPK
    SINGLE_UPDATES = True
