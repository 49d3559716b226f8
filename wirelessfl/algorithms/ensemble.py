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
(:mod:`wirelessfl.algorithms.routed`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from wirelessfl.algorithms.routed import RoutedAlgorithm, RouterSettings
from wirelessfl.config.schema import option

if TYPE_CHECKING:
    from wirelessfl.training.mixture_model import EnsembleModel

__all__ = ["Ensemble", "EnsembleSettings", "FedAvgFull", "FedAvgSettings"]


@dataclass
class EnsembleSettings(RouterSettings):
    """Ensemble (``strategy.*``): C full models mixed by the private router."""

    n_members: int = option(4, ge=1, doc="C: full copies of the model")
    router_floor: float = option(
        0.0,
        ge=0.0,
        lt=1.0,
        doc="mixture weights are clamped at this floor (not renormalised); the Ensemble has "
        "none, as the authors'",
    )


@dataclass
class FedAvgSettings:
    """FedAvg of the full model (``strategy.*``): no settings of its own."""


class Ensemble(RoutedAlgorithm):
    """C full models with output mixing (module docstring)."""

    Settings = EnsembleSettings

    def __init__(self, settings: Any, *, scenario: Any) -> None:
        super().__init__(settings, scenario=scenario)
        self.n_components = int(getattr(settings, "n_members", 1))

    def build_model(self, net: Any) -> EnsembleModel:
        from wirelessfl.training.mixture_model import EnsembleModel

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
