"""Models mixed by a client's private router: FLoRAL's adaptor mixture and the full-model
ensemble, with the router they share.

Router (Algorithm 1 line 6): logits theta^k (C,), zero at the start (pi = 1/C), pi =
softmax(theta + u) with u ~ Uniform[0, noise) per component while training (none in
evaluation), then clamped at ``floor`` from below without renormalising (the authors' code;
``docs/algorithms/floral.md``). Aggregation weights use softmax(theta) alone.

Both models keep the base network's parameter names (a replaced layer's own weights move
under ``<layer>.base``) and say which tensors are *clustered*: stacked over the C components
along dimension 0 and aggregated per component (Algorithm 1 line 12); the rest is the shared
base (line 11).
"""

from __future__ import annotations

import copy
from abc import ABCMeta, abstractmethod

import torch
from torch import nn
from torch.func import functional_call

from wirelessfl.algorithms.floral.cost import adaptor_rank, conv_adaptor_rank
from wirelessfl.algorithms.floral.mixture_layers import (
    ADAPTOR_SUFFIXES,
    MixingWeights,
    MixtureConv2d,
    MixtureLinear,
)

__all__ = ["EnsembleModel", "MixtureModel", "RoutedModel", "router_weights"]

#: Name of the router logits parameter (private; never part of the federated state).
THETA = "theta"
#: Ensemble members weighted below this are skipped in the forward pass.
SKIP_WEIGHT = 1e-3


def router_weights(
    theta: torch.Tensor,
    *,
    noise: float = 0.0,
    floor: float = 0.0,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """pi = max(softmax(theta + noise * u), floor), u ~ Uniform[0, 1)^C (no noise: u = 0).

    Args:
        theta: Router logits ``(C,)``.
        noise: Width of the uniform training noise (0: none).
        floor: Lower clamp of every weight (0: none); not renormalised.
        generator: Draws u (a CPU generator).
    """
    logits = theta
    if noise > 0.0:  # drawn on the generator's device (the CPU), so every device draws alike
        u = torch.rand(theta.shape, generator=generator, dtype=theta.dtype)
        logits = theta + noise * u.to(theta.device)
    pi = torch.softmax(logits, dim=0)
    return pi.clamp(min=floor) if floor > 0.0 else pi


class RoutedModel(nn.Module, metaclass=ABCMeta):
    """A network whose forward is mixed by the router logits ``theta`` (C,).

    Subclasses define :meth:`mixed_forward` and :attr:`clustered`. Set
    :attr:`noise_generator` before a training forward pass to draw the router noise.
    """

    def __init__(self, n_components: int, *, noise: float, floor: float) -> None:
        super().__init__()
        self.n_components = n_components
        self.noise = noise
        self.floor = floor
        self.theta = nn.Parameter(torch.zeros(n_components))
        self.noise_generator: torch.Generator | None = None

    def mixture(self) -> torch.Tensor:
        """The weights of this forward pass: noisy in training mode, clean in evaluation."""
        noise = self.noise if self.training else 0.0
        return router_weights(
            self.theta, noise=noise, floor=self.floor, generator=self.noise_generator
        )

    def forward(self, *args, **kwargs):
        return self.mixed_forward(self.mixture(), *args, **kwargs)

    @abstractmethod
    def mixed_forward(self, pi: torch.Tensor, *args, **kwargs):
        """The forward pass with the components mixed by ``pi`` (C,)."""

    @property
    @abstractmethod
    def clustered(self) -> set[str]:
        """Names of the tensors stacked over the components (dimension 0)."""

    def federated_names(self) -> list[str]:
        """Every parameter name except the router's, in module order."""
        return [n for n, _ in self.named_parameters() if n != THETA]

    def snapshot(self) -> dict[str, torch.Tensor]:
        """Detached copies of the federated parameters."""
        params = dict(self.named_parameters())
        return {n: params[n].detach().clone() for n in self.federated_names()}

    @torch.no_grad()
    def load(self, values: dict[str, torch.Tensor], theta: torch.Tensor | None = None) -> None:
        """Copy ``values`` (every federated name) and ``theta`` (default: zeros) in place."""
        params = dict(self.named_parameters())
        for name in self.federated_names():
            params[name].copy_(values[name])
        self.theta.copy_(torch.zeros_like(self.theta) if theta is None else theta)


class MixtureModel(RoutedModel):
    """FLoRAL's model: every ``nn.Linear`` and ``nn.Conv2d`` of ``net`` carries C adaptors mixed
    by the router (``wirelessfl.algorithms.floral.mixture_layers``). Convolutions with groups,
    string padding (``"same"``) or a padding mode other than zeros stay plain.

    Args:
        net: The base network (modified in place: its layers are replaced).
        n_adaptors: C.
        rho: Relative budget of one adaptor (its rank rule, §3.2).
        bias_adaptors: One bias adaptor per component on every adapted layer (§3.2).
        conv_adaptors: Put Balanced-2D adaptors on convolutions (else convs stay plain).
        noise, floor: The router's (see :func:`router_weights`).
    """

    def __init__(
        self,
        net: nn.Module,
        *,
        n_adaptors: int,
        rho: float,
        bias_adaptors: bool = True,
        conv_adaptors: bool = True,
        noise: float = 1.0,
        floor: float = 0.01,
    ) -> None:
        super().__init__(n_adaptors, noise=noise, floor=floor)
        self.weights = MixingWeights(n_adaptors)
        self.ranks: dict[str, int] = {}
        for name, module in list(net.named_modules()):
            layer = self._adapted(module, rho, bias_adaptors, conv_adaptors)
            if layer is None:
                continue
            parent, _, leaf = name.rpartition(".")
            setattr(net.get_submodule(parent) if parent else net, leaf, layer)
            self.ranks[name] = layer.rank
        self.net = net

    def _adapted(self, module: nn.Module, rho: float, bias: bool, convs: bool) -> nn.Module | None:
        if type(module) is nn.Linear:
            rank = adaptor_rank(module.in_features, module.out_features, rho)
            return MixtureLinear(module, self.weights, rank=rank, bias_adaptors=bias)
        plain_conv = type(module) is nn.Conv2d and module.groups == 1
        if (
            convs
            and plain_conv
            and module.padding_mode == "zeros"
            and not isinstance(module.padding, str)
        ):
            k_h, k_w = module.kernel_size
            rank = conv_adaptor_rank(module.in_channels, module.out_channels, max(k_h, k_w), rho)
            return MixtureConv2d(module, self.weights, rank=rank, bias_adaptors=bias)
        return None

    @property
    def clustered(self) -> set[str]:
        return {n for n in self.federated_names() if n.endswith(ADAPTOR_SUFFIXES)}

    def adaptor_layers(self) -> list[MixtureLinear | MixtureConv2d]:
        """The adapted layers, in module order."""
        return [m for m in self.modules() if isinstance(m, MixtureLinear | MixtureConv2d)]

    def mixed_forward(self, pi: torch.Tensor, *args, **kwargs):
        self.weights.pi = pi
        try:
            return self.net(*args, **kwargs)
        finally:
            self.weights.pi = None


def _fresh_copy(net: nn.Module) -> nn.Module:
    """A copy of ``net`` with every layer re-initialised (``reset_parameters``)."""
    fresh = copy.deepcopy(net)
    for module in fresh.modules():
        if hasattr(module, "reset_parameters"):
            module.reset_parameters()
    return fresh


class EnsembleModel(RoutedModel):
    """C full copies of ``net`` with output mixing: ``sum_c pi_c net_c(x)`` (the Ensemble
    baseline: the mixture of logits, or of predictions for regression).

    The copies are stacked: parameter ``members.<name>`` has shape (C, *shape of <name>). Copy 0
    starts from ``net``'s values, every other copy from a fresh initialisation of the same
    architecture (``reset_parameters`` of each layer, from torch's global generator: seed the
    construction), as the authors build each member anew. A member whose weight is below
    ``SKIP_WEIGHT`` is left out of the forward pass (the authors' rule; with the oracle router
    and no floor the ensemble is clustered FL).
    """

    def __init__(self, net: nn.Module, *, n_members: int, noise: float, floor: float) -> None:
        super().__init__(n_members, noise=noise, floor=floor)
        self.template = copy.deepcopy(net)
        for p in self.template.parameters():
            p.requires_grad_(False)
        self.names = [n for n, _ in net.named_parameters()]
        copies = [net] + [_fresh_copy(net) for _ in range(n_members - 1)]
        self.members = nn.ParameterDict(
            {
                n.replace(".", "__"): nn.Parameter(
                    torch.stack([dict(m.named_parameters())[n].detach() for m in copies])
                )
                for n in self.names
            }
        )

    @property
    def clustered(self) -> set[str]:
        return set(self.federated_names())

    def federated_names(self) -> list[str]:
        """The stacked copies (the template's own parameters are never used)."""
        return [n for n, _ in self.named_parameters() if n.startswith("members.")]

    def mixed_forward(self, pi: torch.Tensor, *args, **kwargs):
        out = None
        for c in range(self.n_components):
            if pi[c] < SKIP_WEIGHT:  # the largest weight is >= 1 / C, never skipped
                continue
            values = {n: self.members[n.replace(".", "__")][c] for n in self.names}
            y = functional_call(self.template, values, args, kwargs)
            y = y.logits if hasattr(y, "logits") else y
            out = pi[c] * y if out is None else out + pi[c] * y
        return out
