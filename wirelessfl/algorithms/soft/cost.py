"""SOFT's cost model: LoRA updates at the controller's rank, thinned by SOFT's own stage.

The default LoRA model of :mod:`wirelessfl.algorithms.cost` with the importance sparsifier of
eq. (3) and error feedback as the algorithm's own compression stage (so ``compression.*``
left null is SOFT; ``compression.sparsifier: topk | random | structured | none`` gives TLoRA,
RLoRA, SLoRA and ILoRA). Its penalty is Theorem 1's gamma (eq. 14). No torch.
"""

from __future__ import annotations

from wirelessfl.algorithms.compression import StageDefaults
from wirelessfl.algorithms.cost import CostModel

__all__ = ["SoftCost"]


class SoftCost(CostModel):
    """SOFT and its section-V baselines (module docstring)."""

    OWN_STAGE = StageDefaults(sparsifier="soft", ratio=None, error_feedback=True)
    CARRIES_FACTORS = True
    SINGLE_UPDATES = True  # the base aggregate: a weighted sum of single updates
