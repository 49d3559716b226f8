"""FLoRAL's full-model baselines: the Ensemble of C models with a private router, and FedAvg.

From the baselines of "Collaborative and Efficient Personalization with Mixtures of Adaptors"
(Almansoori, Horváth, Takáč, arXiv 2410.03497), §6:

- ``ensemble``: C full copies of the network; client k predicts sum_c pi_c^k f(x; w_c) (the
  mixture of outputs: logits, or predictions for regression) with its private router, and the
  server averages copy c by pi_c^k N^k, like FLoRAL's adaptors. The copies start from
  independent initialisations and the router has no floor (the authors' Ensemble); a copy
  weighted below 1e-3 is skipped in the forward pass. ``strategy.router: oracle``
  fixes the router to the true cluster: clustered FL with known clusters (Ensemble pi*).
  Every round sends all C copies, C times FedAvg's bits.
- ``fedavg_full``: one full model, every parameter trained and averaged by N^k (McMahan et al.);
  the same machinery with C = 1.

Both train with the routed trainer (plain SGD, one local epoch) and evaluate personalised
(:mod:`wirelessfl.algorithms.floral.routed`).
"""

from __future__ import annotations

from typing import Any

from wirelessfl.algorithms.floral.cost import EnsembleCost, FedAvgFullCost
from wirelessfl.algorithms.floral.mixture_model import EnsembleModel
from wirelessfl.algorithms.floral.routed import RoutedAlgorithm
from wirelessfl.algorithms.floral.settings import EnsembleSettings, FedAvgSettings

__all__ = ["Ensemble", "FedAvgFull"]


class Ensemble(RoutedAlgorithm):
    """C full models with output mixing (module docstring)."""

    Settings = EnsembleSettings
    CostModel = EnsembleCost

    def __init__(self, settings: Any, *, scenario: Any) -> None:
        super().__init__(settings, scenario=scenario)
        self.n_components = int(getattr(settings, "n_members", 1))

    def build_model(self, net: Any) -> EnsembleModel:
        s = self.settings
        return EnsembleModel(
            net,
            n_members=self.n_components,
            noise=getattr(s, "router_noise", 0.0),
            floor=getattr(s, "router_floor", 0.0),
        )


class FedAvgFull(Ensemble):
    """FedAvg of the whole model: the ensemble with one member (module docstring)."""

    Settings = FedAvgSettings
    CostModel = FedAvgFullCost
