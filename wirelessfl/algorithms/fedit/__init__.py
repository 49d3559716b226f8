"""FedAvg-LoRA (``algorithm.name: fedit``) and its top-k variant (``fedit_topk``).

- ``settings.py``: :class:`FedITSettings`, :class:`FedITTopKSettings` (``strategy.*``); no torch;
- ``algorithm.py``: :class:`~wirelessfl.algorithms.fedit.algorithm.FedIT` and
  :class:`~wirelessfl.algorithms.fedit.algorithm.FedITTopK`, the steps.

This package's ``__init__`` and ``settings.py`` do not import torch; :data:`FEDIT` and
:data:`FEDIT_TOPK` are the registry entries (``wirelessfl.registries.ALGORITHMS``).
"""

from wirelessfl.algorithms.fedit.settings import FedITSettings, FedITTopKSettings
from wirelessfl.algorithms.spec import AlgorithmSpec

__all__ = ["FEDIT", "FEDIT_TOPK", "FedITSettings", "FedITTopKSettings"]

#: ``fedit``: FedAvg on the LoRA factors, dense uploads by default.
FEDIT = AlgorithmSpec(FedITSettings, "wirelessfl.algorithms.fedit.algorithm:FedIT")
#: ``fedit_topk``: FedIT with top-k compression of the upload.
FEDIT_TOPK = AlgorithmSpec(FedITTopKSettings, "wirelessfl.algorithms.fedit.algorithm:FedITTopK")
