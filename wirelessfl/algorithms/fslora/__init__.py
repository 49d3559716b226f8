"""FSLoRA (``algorithm.name: fslora``): each client trains a random-k sketch of the global LoRA.

- ``settings.py``: :class:`FSLoRASettings` (``strategy.fslora``); no torch;
- ``algorithm.py``: :class:`~wirelessfl.algorithms.fslora.algorithm.FSLoRA` (FedIT's steps
  on sketched slices) and its per-client plan ``SketchPlan``;
- ``sketch.py``: the index sets I (random-k, Def. 3.1) and their side bits; no torch;
- ``sketch_slices.py``: gathering the slices ``B[:, I]``, ``A[I, :]`` and scattering their
  updates back (eq. 5).

This package's ``__init__`` and ``settings.py`` do not import torch; :data:`FSLORA` is the
registry entry (``wirelessfl.registries.ALGORITHMS``).
"""

from wirelessfl.algorithms.fslora.cost import FSLoRACost
from wirelessfl.algorithms.fslora.settings import FSLoRASettings
from wirelessfl.algorithms.spec import AlgorithmSpec

__all__ = ["FSLORA", "FSLoRASettings"]

#: ``fslora``: federated sketching LoRA.
FSLORA = AlgorithmSpec(FSLoRASettings, FSLoRACost, "wirelessfl.algorithms.fslora.algorithm:FSLoRA")
