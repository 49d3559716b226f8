"""FLoRAL: a federated base plus C shared low-rank adaptors mixed by private routers, and the
Local Adaptor baseline.

"Collaborative and Efficient Personalization with Mixtures of Adaptors" (Almansoori, Horváth,
Takáč, arXiv 2410.03497), Algorithm 1. Client k's model mixes the adaptors' products,
W + sum_c pi_c^k U_c V_c^T on every linear layer and every convolution (Balanced-2D, eq. (40)),
and b + sum_c pi_c^k L_{b,c} on their biases (§3.2); its router pi^k = softmax(theta^k) is
private. Base and adaptors train together by SGD with the adaptor gradients preconditioned by
eq. (36) (App. D); the server averages the base by N^k and adaptor c by pi_c^k N^k. The upload
and the download are the base (when it trains) and the C adaptors, so the simulated link grows
with C. The shared steps are :mod:`wirelessfl.algorithms.floral.routed`; every reading of an
ambiguous point is in ``docs/algorithms/floral.md``.

``floral_local`` (Local Adaptor, §6): C = 1 and the adaptor is private: never uploaded,
never averaged, kept by the client across rounds; the base is federated by N^k.
"""

from __future__ import annotations

from typing import Any

from wirelessfl.algorithms.base import State
from wirelessfl.algorithms.floral.cost import FloralCost, LocalAdaptorCost
from wirelessfl.algorithms.floral.mixture_model import MixtureModel
from wirelessfl.algorithms.floral.routed import RoutedAlgorithm
from wirelessfl.algorithms.floral.settings import FloralSettings, LocalAdaptorSettings

__all__ = ["Floral", "LocalAdaptor"]


class Floral(RoutedAlgorithm):
    """FLoRAL (module docstring)."""

    Settings = FloralSettings
    CostModel = FloralCost

    def __init__(self, settings: Any, *, scenario: Any) -> None:
        super().__init__(settings, scenario=scenario)
        self.n_components = int(settings.n_adaptors)

    def build_model(self, net: Any) -> MixtureModel:
        s = self.settings
        model = MixtureModel(
            net,
            n_adaptors=self.n_components,
            rho=s.rho,
            bias_adaptors=s.bias_adaptors,
            conv_adaptors=s.conv_adaptors,
            noise=getattr(s, "router_noise", 0.0),
            floor=getattr(s, "router_floor", 0.0),
        )
        if not s.train_base:
            for name, param in model.named_parameters():
                if name != "theta" and name not in model.clustered:
                    param.requires_grad_(False)
        return model

    @property
    def precondition_eps(self) -> float | None:
        return float(self.settings.precondition_eps) if self.settings.precondition else None

    def sent_names(self) -> list[str]:
        """Base (when it trains) and the C adaptors."""
        clustered = self.model.clustered
        names = self.model.federated_names()
        return [n for n in names if n in clustered or self.settings.train_base]


class LocalAdaptor(Floral):
    """Local Adaptor: FLoRAL with C = 1 whose adaptor stays on the client (module docstring)."""

    Settings = LocalAdaptorSettings
    CostModel = LocalAdaptorCost

    def __init__(self, settings: Any, *, scenario: Any) -> None:
        super(Floral, self).__init__(settings, scenario=scenario)
        self.n_components = 1

    def sent_names(self) -> list[str]:
        """The base only (nothing when it is frozen)."""
        clustered = self.model.clustered
        if not self.settings.train_base:
            return []
        return [n for n in self.model.federated_names() if n not in clustered]

    def client_values(self, client: int, global_state: State, private: dict[str, Any]) -> State:
        """The global base with the client's own adaptor (the initial one before its first
        round)."""
        own = {n: private[n] for n in self.model.clustered if n in private}
        return {**global_state, **own}

    def kept_values(self, trained: State) -> dict[str, Any]:
        return {n: trained[n] for n in self.model.clustered}
