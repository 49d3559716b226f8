"""FLoRAL and its baselines: models of their own, mixed by private routers.

- ``settings.py``: the ``strategy.<name>`` tables of ``floral``, ``floral_local``, ``ensemble`` and
  ``fedavg_full`` (:class:`FloralSettings`, :class:`LocalAdaptorSettings`,
  :class:`EnsembleSettings`, :class:`FedAvgSettings`; the shared :class:`RouterSettings`);
  no torch;
- ``routed.py``: the steps they share (a routed model trained whole, private routers,
  Algorithm 1's aggregation, personalised evaluation); ``algorithm.py``: FLoRAL and the Local
  Adaptor; ``ensemble.py``: the Ensemble of C full models and FedAvg of the full model;
- ``mixture_layers.py``, ``mixture_model.py``: the adaptor layers and the routed models;
  ``mixture_trainer.py`` (with ``lora_precondition.py``, eq. (36)): local training;
  ``mixture_aggregation.py``: the server's average; ``personal_eval.py``: every client's own
  model on its own test rows; ``routing.py``: routing accuracy and aggregation mismatch.

This package's ``__init__`` and ``settings.py`` do not import torch; :data:`FLORAL`,
:data:`FLORAL_LOCAL`, :data:`ENSEMBLE` and :data:`FEDAVG_FULL` are the registry entries
(``wirelessfl.registries.ALGORITHMS``).
"""

from wirelessfl.algorithms.floral.cost import (
    EnsembleCost,
    FedAvgFullCost,
    FloralCost,
    LocalAdaptorCost,
)
from wirelessfl.algorithms.floral.settings import (
    AdaptorSettings,
    EnsembleSettings,
    FedAvgSettings,
    FloralSettings,
    LocalAdaptorSettings,
    RouterSettings,
)
from wirelessfl.algorithms.spec import AlgorithmSpec

__all__ = [
    "ENSEMBLE",
    "FEDAVG_FULL",
    "FLORAL",
    "FLORAL_LOCAL",
    "AdaptorSettings",
    "EnsembleSettings",
    "FedAvgSettings",
    "FloralSettings",
    "LocalAdaptorSettings",
    "RouterSettings",
]

#: ``floral``: FLoRAL (C shared adaptors, private routers).
FLORAL = AlgorithmSpec(FloralSettings, FloralCost, "wirelessfl.algorithms.floral.algorithm:Floral")
#: ``floral_local``: the Local Adaptor baseline (one private adaptor, the base federated).
FLORAL_LOCAL = AlgorithmSpec(
    LocalAdaptorSettings, LocalAdaptorCost, "wirelessfl.algorithms.floral.algorithm:LocalAdaptor"
)
#: ``ensemble``: C full models mixed by the private router.
ENSEMBLE = AlgorithmSpec(
    EnsembleSettings, EnsembleCost, "wirelessfl.algorithms.floral.ensemble:Ensemble"
)
#: ``fedavg_full``: FedAvg of the whole model.
FEDAVG_FULL = AlgorithmSpec(
    FedAvgSettings, FedAvgFullCost, "wirelessfl.algorithms.floral.ensemble:FedAvgFull"
)
