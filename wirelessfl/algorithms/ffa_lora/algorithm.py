"""FFA-LoRA: federated LoRA with A frozen at its random initialisation, B trained and averaged.

"Improving LoRA in Privacy-preserving Federated Learning", Y. Sun, Z. Li, Y. Li, B. Ding, ICLR
2024, arXiv:2403.12313. Every client holds the same A (peft's Kaiming-uniform init from the run
seed) and never changes it; it trains B (and the task head) from the global B, sends the update
of B, and the server adds the weighted mean of the B updates (``strategy.ffa_lora.aggregation``).
With A fixed and shared, the mean of the clients' products is the product of the mean B with
A: the aggregation is exact, where FedIT's mean of B times mean of A is not.

The whole algorithm is one hook of the base class (:meth:`FFALoRA.frozen_names`): the base
steps leave a frozen tensor out of the download, add it to the client's start from what every
client holds, keep it untrained (both trainers), leave it out of the upload and so out of the
aggregate. What travels is in :mod:`wirelessfl.algorithms.ffa_lora.cost`.
"""

from __future__ import annotations

from wirelessfl.algorithms.base import FederatedAlgorithm
from wirelessfl.algorithms.ffa_lora.cost import FFALoRACost
from wirelessfl.algorithms.ffa_lora.settings import FFALoRASettings

__all__ = ["FFALoRA"]


class FFALoRA(FederatedAlgorithm):
    """A frozen, B federated (module docstring)."""

    Settings = FFALoRASettings
    CostModel = FFALoRACost

    def frozen_names(self) -> frozenset[str]:
        """Every adapted layer's ``lora_A``."""
        return frozenset(layer.a_param for layer in self.runtime_or_fail().state.layers)
