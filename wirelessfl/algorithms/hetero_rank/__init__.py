"""The heterogeneous-rank baselines of FSLoRA: HetLoRA, FlexLoRA and FedStack.

Client i trains at its own rank r_i (the ratios of :mod:`wirelessfl.algorithms.client_ranks`,
shared with FSLoRA's sketches); they differ in how the server brings the ranks together.

- ``settings.py``: :class:`HetLoRASettings`, :class:`FlexLoRASettings`,
  :class:`FedStackSettings` (``strategy.<name>`` tables); no torch;
- ``hetlora.py``: truncation and zero padding, with HetLoRA's self-pruning
  (``tail_penalty.py``: the tail-norm penalty and the kept rank);
- ``flexlora.py``: the mean of the effective products, redistributed by truncated SVD
  (``svd_redistribution.py``);
- ``fedstack.py``: fresh adapters (``fresh_lora.py``) stacked and merged into the base
  (``merged_base.py``);
- ``lora_products.py``: a layer's effective product ``s(r) B A`` (all three).

This package's ``__init__`` and ``settings.py`` do not import torch; :data:`HETLORA`,
:data:`FLEXLORA` and :data:`FEDSTACK` are the registry entries
(``wirelessfl.registries.ALGORITHMS``).
"""

from wirelessfl.algorithms.hetero_rank.cost import FedStackCost, FlexLoRACost, HetLoRACost
from wirelessfl.algorithms.hetero_rank.settings import (
    FedStackSettings,
    FlexLoRASettings,
    HetLoRASettings,
)
from wirelessfl.algorithms.spec import AlgorithmSpec

__all__ = [
    "FEDSTACK",
    "FLEXLORA",
    "FedStackSettings",
    "FlexLoRASettings",
    "HETLORA",
    "HetLoRASettings",
]

#: ``hetlora``: HetLoRA (truncate, zero-pad, optional self-pruning).
HETLORA = AlgorithmSpec(
    HetLoRASettings, HetLoRACost, "wirelessfl.algorithms.hetero_rank.hetlora:HetLoRA"
)
#: ``flexlora``: FlexLoRA (mean of products, truncated SVD).
FLEXLORA = AlgorithmSpec(
    FlexLoRASettings, FlexLoRACost, "wirelessfl.algorithms.hetero_rank.flexlora:FlexLoRA"
)
#: ``fedstack``: FedStack / FLoRA (stack, merge into the base, re-initialise).
FEDSTACK = AlgorithmSpec(
    FedStackSettings, FedStackCost, "wirelessfl.algorithms.hetero_rank.fedstack:FedStack"
)
