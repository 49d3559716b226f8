"""Grouped forwards for a peft model's LoRA and head layers, K clients' parameters at once.

While :meth:`ForwardPatch.patched` is active, the ``forward`` of every peft ``lora_A`` /
``lora_B`` sub-layer and of every head layer is replaced (instance attribute, removed
afterwards, also on errors) by a grouped version: the layer input ``x`` of shape
``(G * b, ..., d_in)`` (the G active clients' samples, client-major, b per client) is
multiplied by the clients' stacked parameters of the current :class:`StepContext` with the
kernels of :mod:`wirelessfl.training.grouped`. peft's own ``lora.Linear`` / ``lora.Conv2d``
forward (base layer, dropout, dtype casts, ``scaling``) runs unchanged around it, so the
frozen base is applied once to all ``G * b`` samples and every client's LoRA factors and head
touch only its own samples.

Why patch the LoRA sub-layers rather than ``torch.func.vmap`` the whole model over stacked
parameters: vmap would run the transformers forward (mask building, attention dispatch,
data-dependent checks) under a batching transform that several of those paths do not
support, and its result is not obviously one base GEMM; replacing only the rank-r products
keeps peft's and transformers' code paths exactly as the sequential trainer runs them.
(``vmap`` is used only for head modules that are not ``nn.Linear``.)

Supported layers
----------------
LoRA: peft ``lora.Linear`` (vanilla LoRA, any ``lora_dropout``: MiniLM/BERT, ViT, SmolLM2
projections, ``tiny_mlp``'s fc layers) and peft ``lora.Conv2d`` whose factors are plain
``nn.Conv2d`` with zero padding (EfficientNet-Lite0's 1x1 convs, any kernel, stride,
dilation). Any other LoRA layer (``lora.Embedding``, ``lora.Conv1d`` / ``Conv3d``,
transformers ``Conv1D``, conv subclasses with their own padding logic, DoRA and other
variants) raises ``NotImplementedError`` naming the layer and its type when
:class:`ForwardPatch` is built: there is no silent sequential fallback; use
:class:`~wirelessfl.training.local.LocalTrainer` for such models. Head parameters:
``nn.Linear`` owners use ``baddbmm``; any other module owning a trainable full parameter runs
under ``torch.func.vmap`` over the clients. No layer may couple samples: batch-norm layers
must be in eval mode (:func:`~wirelessfl.training.local.train_mode` freezes them). LoRA inputs
must be batch-first (first dim = samples); other layouts raise ``NotImplementedError`` at the
first step.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from wirelessfl.training.grouped import grouped_factor, grouped_linear
from wirelessfl.training.lora_state import TrainableState


@dataclass
class LoraSite:
    """One adapted peft ``lora.Linear`` / ``lora.Conv2d`` layer."""

    name: str
    a_mod: nn.Module  # lora_A[adapter]: nn.Linear or nn.Conv2d
    b_mod: nn.Module  # lora_B[adapter]
    a_param: str
    b_param: str
    rank: int
    rslora: bool
    fixed: bool = False  # a rank of its own (learner.rank_pattern): no client's rank applies


@dataclass
class FullSite:
    """A module owning trainable full (head) parameters: attribute -> parameter name."""

    name: str
    module: nn.Module
    attrs: dict[str, str]


@dataclass
class StepContext:
    """What the grouped forwards need at one step."""

    n_groups: int
    n_samples: int
    views: dict[str, torch.Tensor]  # parameter name -> (G, *shape) rows of the stacks
    factors: dict[str, torch.Tensor | None]  # site name -> (G, 1, 1) rank factors or None


def _unsupported(name: str, module: nn.Module, why: str) -> NotImplementedError:
    kind = f"{type(module).__module__}.{type(module).__qualname__}"
    return NotImplementedError(
        f"BatchedTrainer cannot batch layer {name!r} of type {kind}: {why}. Train this model "
        "with LocalTrainer (sequential clients)"
    )


class ForwardPatch:
    """The LoRA and head layers of a peft model, and their grouped forwards.

    Args:
        model: the peft model.
        state: its :class:`TrainableState`.

    Raises:
        NotImplementedError: a LoRA or head layer that cannot be grouped (see the module
            docstring).

    Attributes:
        lora_sites: the adapted layers, in ``state.layers`` order.
        full_sites: the modules owning trainable full (head) parameters.
        ctx: the step the grouped forwards compute; set before each forward pass.
    """

    def __init__(self, model: nn.Module, state: TrainableState):
        from peft.tuners.lora.layer import Conv2d as LoraConv2d
        from peft.tuners.lora.layer import Linear as LoraLinear
        from peft.tuners.tuners_utils import BaseTunerLayer

        self.lora_sites: list[LoraSite] = []
        for layer in state.layers:
            module = model.get_submodule(layer.name)
            if type(module) not in (LoraLinear, LoraConv2d):
                raise _unsupported(
                    layer.name, module, "only peft lora.Linear and lora.Conv2d layers are grouped"
                )
            adapter = layer.a_param.split(".lora_A.")[1].split(".")[0]
            if adapter in getattr(module, "lora_variant", {}):
                raise _unsupported(layer.name, module, "LoRA variants (e.g. DoRA) are not grouped")
            a_mod, b_mod = module.lora_A[adapter], module.lora_B[adapter]
            kinds = {type(a_mod), type(b_mod)}
            if kinds != {nn.Linear} and kinds != {nn.Conv2d}:
                raise _unsupported(
                    layer.name,
                    module,
                    f"lora_A / lora_B are {type(a_mod).__name__} / {type(b_mod).__name__}, not "
                    "both nn.Linear or both plain nn.Conv2d",
                )
            if isinstance(a_mod, nn.Conv2d) and any(
                m.padding_mode != "zeros" for m in (a_mod, b_mod)
            ):
                raise _unsupported(layer.name, module, "conv padding_mode other than 'zeros'")
            if a_mod.bias is not None or b_mod.bias is not None:
                raise _unsupported(layer.name, module, "LoRA factors with a bias")
            self.lora_sites.append(
                LoraSite(
                    name=layer.name,
                    a_mod=a_mod,
                    b_mod=b_mod,
                    a_param=layer.a_param,
                    b_param=layer.b_param,
                    rank=int(module.r[adapter]),
                    rslora=bool(getattr(module, "use_rslora", {}).get(adapter, False)),
                    fixed=layer.fixed_rank is not None,
                )
            )

        owners: dict[str, dict[str, str]] = {}
        for name in state.full_names:
            owner, _, attr = name.rpartition(".")
            owners.setdefault(owner, {})[attr] = name
            parts = owner.split(".")
            for i in range(len(parts), 0, -1):  # a tuner layer's own parameters (e.g.
                path = ".".join(parts[:i])  # lora_embedding_A) are not LoRA pairs we group
                up = model.get_submodule(path)
                if isinstance(up, BaseTunerLayer):
                    raise _unsupported(path, up, "this LoRA layer type is not grouped")
        self.full_sites = [
            FullSite(owner, model.get_submodule(owner), attrs) for owner, attrs in owners.items()
        ]
        self.ctx: StepContext | None = None

    def _lora_a_forward(self, site: LoraSite) -> Callable[[torch.Tensor], torch.Tensor]:
        def forward(x: torch.Tensor) -> torch.Tensor:
            ctx = self.ctx
            assert ctx is not None
            return grouped_factor(site.a_mod, x, ctx.views[site.a_param], ctx.n_samples, site.name)

        return forward

    def _lora_b_forward(self, site: LoraSite) -> Callable[[torch.Tensor], torch.Tensor]:
        def forward(h: torch.Tensor) -> torch.Tensor:
            ctx = self.ctx
            assert ctx is not None
            y = grouped_factor(site.b_mod, h, ctx.views[site.b_param], ctx.n_samples, site.name)
            factor = ctx.factors.get(site.name)
            if factor is not None:  # rank-padded clients: alpha / r_k instead of alpha / r
                scale = factor.to(y.dtype).reshape(ctx.n_groups, 1)
                y = (y.reshape(ctx.n_groups, -1) * scale).reshape(y.shape)
            return y

        return forward

    def _full_forward(self, site: FullSite) -> Callable[..., torch.Tensor]:
        module = site.module
        if isinstance(module, nn.Linear):

            def linear(x: torch.Tensor) -> torch.Tensor:
                ctx = self.ctx
                assert ctx is not None
                w = ctx.views.get(site.attrs.get("weight", ""))
                if w is None:
                    w = module.weight.expand(ctx.n_groups, *module.weight.shape)
                b = ctx.views.get(site.attrs.get("bias", ""), module.bias)
                return grouped_linear(x, w, b, ctx.n_samples, site.name)

            return linear

        cls_forward = type(module).forward
        inside = [False]

        def generic(x: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
            if inside[0]:  # called by functional_call below, with one client's parameters
                return cls_forward(module, x, *args, **kwargs)
            ctx = self.ctx
            assert ctx is not None
            if x.shape[0] != ctx.n_samples:
                raise NotImplementedError(
                    f"BatchedTrainer: layer {site.name!r} got an input of shape "
                    f"{tuple(x.shape)} whose first dim is not the {ctx.n_samples} samples"
                )
            params = {attr: ctx.views[name] for attr, name in site.attrs.items()}
            xg = x.reshape(ctx.n_groups, -1, *x.shape[1:])

            def one(p: dict[str, torch.Tensor], xi: torch.Tensor) -> torch.Tensor:
                return torch.func.functional_call(module, p, (xi, *args), kwargs)

            inside[0] = True
            try:
                y = torch.func.vmap(one)(params, xg)
            finally:
                inside[0] = False
            return y.reshape(-1, *y.shape[2:])

        return generic

    @contextmanager
    def patched(self) -> Iterator[None]:
        """Install the grouped forwards; always restore the modules' own (and clear ``ctx``)
        afterwards."""
        patches: list[tuple[nn.Module, Callable[..., torch.Tensor]]] = []
        for site in self.lora_sites:
            patches.append((site.a_mod, self._lora_a_forward(site)))
            patches.append((site.b_mod, self._lora_b_forward(site)))
        for full in self.full_sites:
            patches.append((full.module, self._full_forward(full)))
        saved: list[tuple[nn.Module, Any]] = []
        try:
            for module, fn in patches:
                saved.append((module, module.__dict__.get("forward")))
                module.forward = fn  # type: ignore[method-assign]
            yield
        finally:
            for module, old in reversed(saved):
                if old is None:
                    del module.forward
                else:
                    module.forward = old  # type: ignore[method-assign]
            self.ctx = None
