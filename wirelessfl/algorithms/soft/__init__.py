"""The SOFT family (``algorithm.name: soft``): SOFT, TLoRA, RLoRA, SLoRA and ILoRA.

- ``settings.py``: :class:`SoftSettings` (``strategy.soft``) and :data:`SOFT_ZETA`; no torch;
- ``cost.py``: :class:`SoftCost`, SOFT's payload (the importance sparsifier is its own
  compression stage) and Theorem 1's penalty; no torch;
- ``algorithm.py``: :class:`~wirelessfl.algorithms.soft.algorithm.SoftFamily`, the steps;
- ``lora_metrics.py``: its round metrics (eq. 12's covariance term, the orthogonality
  residual).

This package's ``__init__`` and ``settings.py`` do not import torch; :data:`SOFT` is the
registry entry (``wirelessfl.registries.ALGORITHMS``).
"""

from wirelessfl.algorithms.soft.cost import SoftCost
from wirelessfl.algorithms.soft.settings import SOFT_ZETA, SoftSettings, paper_zeta
from wirelessfl.algorithms.spec import AlgorithmSpec

__all__ = ["SOFT", "SOFT_ZETA", "SoftCost", "SoftSettings", "paper_zeta"]

#: ``soft``: the SOFT family, one algorithm whose member is ``compression.sparsifier``.
SOFT = AlgorithmSpec(SoftSettings, SoftCost, "wirelessfl.algorithms.soft.algorithm:SoftFamily")
