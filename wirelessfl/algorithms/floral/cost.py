"""Cost models of FLoRAL and its baselines: payloads fixed by their settings. No torch.

"Collaborative and Efficient Personalization with Mixtures of Adaptors" (Almansoori, Horvath,
Takac, arXiv 2410.03497). Up and down goes what the algorithm federates, dense: FLoRAL's base
(when it trains) and C adaptors per adapted layer, plus the client's C mixture weights up when
C > 1; the Local Adaptor's base; the Ensemble's C full models (+ C weights); FedAvg's model.
No controller knob applies (the ``fixed`` controller only) and no compression stage (the server
averages these tensors by Algorithm 1's weights, not as sparse LoRA updates).

Sizes: in real training, the algorithm counts the tensors of the model it built
(:meth:`RoutedCost.set_sent_values`); network-only, ``learner.shape`` stands for the network:
its ``layer_shapes`` are the layers the adaptors go on and ``base_params`` the base, with an
adaptor of rank max(1, floor(rho d l / (d + l))) per layer (:func:`adaptor_rank`, §3.2) and a
bias adaptor of l values when ``bias_adaptors``.

No convergence bound is known for these payloads here: the penalty is NaN (the ``bound``
column stays empty).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import Any

from wirelessfl.algorithms.cost import FixedPayloadCost
from wirelessfl.plans import ClientPlan

__all__ = [
    "EnsembleCost",
    "FedAvgFullCost",
    "FloralCost",
    "LocalAdaptorCost",
    "RoutedCost",
    "adaptor_rank",
    "conv_adaptor_rank",
]


def adaptor_rank(d_in: int, d_out: int, rho: float) -> int:
    """r = max(1, floor(rho d_in d_out / (d_in + d_out))): the largest rank whose adaptor
    (d_in + d_out) r stays within rho of the layer's d_in d_out values (§3.2, floor 1)."""
    return max(1, int(math.floor(rho * d_in * d_out / (d_in + d_out) + 1e-9)))


def conv_adaptor_rank(c_in: int, c_out: int, kernel: int, rho: float) -> int:
    """The Balanced-2D adaptor's rank of a k x k convolution: :func:`adaptor_rank` of
    (c_in k, c_out k), i.e. floor(rho c_in c_out k / (c_in + c_out)), at least 1 (eq. (40))."""
    return adaptor_rank(c_in * kernel, c_out * kernel, rho)


class RoutedCost(FixedPayloadCost, ABC):
    """A fixed dense payload, measured or from ``learner.shape`` (module docstring)."""

    RUNTIME_TRAINER = False  # the routed trainer (wirelessfl.algorithms.floral)

    NO_STAGE_REASON = (
        "the server averages its tensors by Algorithm 1's mixture weights, not as sparse LoRA "
        "updates"
    )

    def __init__(self, settings: Any, **kwargs: Any) -> None:
        super().__init__(settings, **kwargs)
        self.sent_values: int | None = None

    @property
    def n_components(self) -> int:
        """C: components whose mixture weights go up (1: none)."""
        return 1

    def set_sent_values(self, values: int) -> None:
        """The values the built model federates each way (real training)."""
        self.sent_values = int(values)

    @abstractmethod
    def shaped_values(self) -> int:
        """What ``learner.shape`` says the algorithm federates (network-only)."""

    def federated_values(self) -> int:
        return self.sent_values if self.sent_values is not None else self.shaped_values()

    def up_values(self, plan: ClientPlan) -> int:
        """The federated tensors, and the C mixture weights when C > 1."""
        weights = self.n_components if self.n_components > 1 else 0
        return self.federated_values() + weights

    def down_values(self, plan: ClientPlan) -> int:
        return self.federated_values()


class FloralCost(RoutedCost):
    """FLoRAL: the base (when it trains) and C adaptors; C mixture weights up."""

    @property
    def n_components(self) -> int:
        return int(self.settings.n_adaptors)

    def adaptor_values(self) -> int:
        """One component's adaptors over ``learner.shape``'s layers."""
        s = self.settings
        return sum(
            adaptor_rank(d, ell, s.rho) * (d + ell) + (ell if s.bias_adaptors else 0)
            for d, ell in self.lora_shapes
        )

    def shaped_values(self) -> int:
        base = self.geometry.base_params if self.settings.train_base else 0
        return int(base + self.n_components * self.adaptor_values())


class LocalAdaptorCost(FloralCost):
    """Local Adaptor: the base only (its one adaptor stays on the client)."""

    @property
    def n_components(self) -> int:
        return 1

    def shaped_values(self) -> int:
        return int(self.geometry.base_params) if self.settings.train_base else 0


class EnsembleCost(RoutedCost):
    """The Ensemble: C full models; C mixture weights up."""

    @property
    def n_components(self) -> int:
        return int(getattr(self.settings, "n_members", 1))

    def shaped_values(self) -> int:
        return int(self.n_components * self.geometry.base_params)


class FedAvgFullCost(EnsembleCost):
    """FedAvg of the whole model."""
