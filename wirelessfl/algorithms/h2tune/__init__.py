"""H2Tune and its baselines: clients with different base models, tasks and resource ranks.

- ``settings.py``: the ``strategy.<name>`` tables of ``h2tune``, ``h2tune_local``, ``fllm`` and
  ``h2tune_hetlora`` (:class:`H2TuneSettings`, the baselines', the shared
  :class:`HeteroSettings` and its :class:`ClientGroup`); no torch;
- ``hetero.py``: the steps they share (one model per distinct base model, private adapters
  and heads, personalised evaluation); ``algorithm.py``: H2Tune; ``baselines.py``: LOCAL,
  FLLM and HetLoRA on the same groups;
- ``hetero_clients.py``: the client groups' models, data and heads; ``trilora.py``: the
  triple-factor adapters; ``layer_alignment.py``: the relation matrices Omega_k;
  ``losses.py``: eqs. (6) and (7); ``hetero_trainer.py``: local training.

This package's ``__init__`` and ``settings.py`` do not import torch; :data:`H2TUNE`,
:data:`H2TUNE_LOCAL`, :data:`FLLM` and :data:`H2TUNE_HETLORA` are the registry entries
(``wirelessfl.registries.ALGORITHMS``).
"""

from wirelessfl.algorithms.h2tune.cost import (
    FederatedLoRAGroupsCost,
    H2TuneCost,
    LocalGroupsCost,
)
from wirelessfl.algorithms.h2tune.settings import (
    ClientGroup,
    FLLMSettings,
    H2TuneSettings,
    HeteroHetLoRASettings,
    HeteroLocalSettings,
    HeteroSettings,
)
from wirelessfl.algorithms.spec import AlgorithmSpec

__all__ = [
    "FLLM",
    "H2TUNE",
    "H2TUNE_HETLORA",
    "H2TUNE_LOCAL",
    "ClientGroup",
    "FLLMSettings",
    "H2TuneSettings",
    "HeteroHetLoRASettings",
    "HeteroLocalSettings",
    "HeteroSettings",
]

#: ``h2tune``: H2Tune.
H2TUNE = AlgorithmSpec(H2TuneSettings, H2TuneCost, "wirelessfl.algorithms.h2tune.algorithm:H2Tune")
#: ``h2tune_local``: LOCAL (every client trains alone).
H2TUNE_LOCAL = AlgorithmSpec(
    HeteroLocalSettings, LocalGroupsCost, "wirelessfl.algorithms.h2tune.baselines:HeteroLocal"
)
#: ``fllm``: FedAvg of LoRA among clients of the same base model and rank (the class is
#: :class:`wirelessfl.algorithms.h2tune.baselines.FLLM`).
FLLM = AlgorithmSpec(
    FLLMSettings, FederatedLoRAGroupsCost, "wirelessfl.algorithms.h2tune.baselines:FLLM"
)
#: ``h2tune_hetlora``: HetLoRA among clients of the same base model.
H2TUNE_HETLORA = AlgorithmSpec(
    HeteroHetLoRASettings,
    FederatedLoRAGroupsCost,
    "wirelessfl.algorithms.h2tune.baselines:HeteroHetLoRA",
)
