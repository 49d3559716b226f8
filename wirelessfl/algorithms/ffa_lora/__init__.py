"""FFA-LoRA (``algorithm.name: ffa_lora``): federated LoRA with A frozen, B trained and sent.

"Improving LoRA in Privacy-preserving Federated Learning", Y. Sun, Z. Li, Y. Li, B. Ding,
ICLR 2024, arXiv:2403.12313. The whole algorithm is this folder:

- ``settings.py``: :class:`FFALoRASettings` (``strategy.ffa_lora``); no torch;
- ``cost.py``: :class:`FFALoRACost`, what a client sends (B only) for the controllers and
  network-only runs; no torch;
- ``algorithm.py``: :class:`~wirelessfl.algorithms.ffa_lora.algorithm.FFALoRA`, the steps.

:data:`FFA_LORA` is the registry entry (``wirelessfl.registries.ALGORITHMS``).
"""

from wirelessfl.algorithms.ffa_lora.cost import FFALoRACost
from wirelessfl.algorithms.ffa_lora.settings import FFALoRASettings
from wirelessfl.algorithms.spec import AlgorithmSpec

__all__ = ["FFA_LORA", "FFALoRACost", "FFALoRASettings"]

#: ``ffa_lora``: A frozen at its random init; B trained, uploaded and averaged.
FFA_LORA = AlgorithmSpec(
    FFALoRASettings, FFALoRACost, "wirelessfl.algorithms.ffa_lora.algorithm:FFALoRA"
)
