"""FedAvg-LoRA (``algorithm.name: fedit``) and its top-k variant (``fedit_topk``).

- ``settings.py``: :class:`FedITSettings` (``strategy.fedit``, ``strategy.fedit_topk``); no torch;
- ``cost.py``: what a client sends (dense, or App. C.2's top-k for ``fedit_topk``); no torch;
- ``algorithm.py``: :class:`~wirelessfl.algorithms.fedit.algorithm.FedIT` and
  :class:`~wirelessfl.algorithms.fedit.algorithm.FedITTopK`, the steps.

This package's ``__init__`` and ``settings.py`` do not import torch; :data:`FEDIT` and
:data:`FEDIT_TOPK` are the registry entries (``wirelessfl.registries.ALGORITHMS``).
"""

from wirelessfl.algorithms.fedit.cost import FedITCost, FedITTopKCost
from wirelessfl.algorithms.fedit.settings import FedITSettings
from wirelessfl.algorithms.spec import AlgorithmSpec

__all__ = ["FEDIT", "FEDIT_TOPK", "FedITSettings"]

#: ``fedit``: FedAvg on the LoRA factors, dense uploads by default.
FEDIT = AlgorithmSpec(FedITSettings, FedITCost, "wirelessfl.algorithms.fedit.algorithm:FedIT")
#: ``fedit_topk``: FedIT with top-k compression of the upload.
FEDIT_TOPK = AlgorithmSpec(
    FedITSettings, FedITTopKCost, "wirelessfl.algorithms.fedit.algorithm:FedITTopK"
)
