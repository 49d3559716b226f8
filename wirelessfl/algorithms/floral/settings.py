"""The settings of FLoRAL and its baselines (the ``strategy.<name>`` tables of ``floral``,
``floral_local``, ``ensemble``, ``fedavg_full``); no torch."""

from __future__ import annotations

from dataclasses import dataclass

from wirelessfl.config.schema import option

__all__ = [
    "AdaptorSettings",
    "EnsembleSettings",
    "FedAvgSettings",
    "FloralSettings",
    "LocalAdaptorSettings",
    "RouterSettings",
]


@dataclass
class RouterSettings:
    """The private router of every client: how it learns and how it mixes."""

    router: str = option(
        "learned",
        choices=("learned", "oracle"),
        doc="learned: softmax router trained with the model; oracle: fixed to the true "
        "cluster (pi*), needs a data set that knows its clusters",
    )
    router_lr: float = option(0.1, ge=0.0, doc="SGD learning rate of the router logits")
    router_noise: float = option(
        1.0, ge=0.0, doc="width of the Uniform[0, w) noise added to the logits in training"
    )
    router_floor: float = option(
        0.01, ge=0.0, lt=1.0, doc="mixture weights are clamped at this floor (not renormalised)"
    )


@dataclass
class AdaptorSettings:
    """The adaptors on every linear layer and convolution, and how they train."""

    rho: float = option(
        0.01,
        gt=0.0,
        le=1.0,
        doc="relative budget of one adaptor: rank floor(rho d_in d_out / (d_in + d_out)), >= 1",
    )
    bias_adaptors: bool = option(True, doc="one bias adaptor per component on adapted layers")
    conv_adaptors: bool = option(True, doc="Balanced-2D adaptors on convolutions (eq. (40))")
    train_base: bool = option(
        True, doc="train and federate the base model (the paper); false: frozen, not sent"
    )
    precondition: bool = option(True, doc="precondition the adaptor gradients (eq. (36))")
    precondition_eps: float = option(1e-5, gt=0.0, doc="eps of eq. (36)")


@dataclass
class FloralSettings(RouterSettings, AdaptorSettings):
    """FLoRAL (``strategy.floral``): C adaptors per layer, their budget, the private router."""

    n_adaptors: int = option(4, ge=1, doc="C: adaptors per adapted layer")


@dataclass
class LocalAdaptorSettings(AdaptorSettings):
    """Local Adaptor (``strategy.floral_local``): one private adaptor per client, the base
    federated."""


@dataclass
class EnsembleSettings(RouterSettings):
    """Ensemble (``strategy.ensemble``): C full models mixed by the private router."""

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
    """FedAvg of the full model (``strategy.fedavg_full``): no settings of its own."""
