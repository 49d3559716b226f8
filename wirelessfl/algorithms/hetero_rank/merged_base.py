"""Base weights with a merged update: FedStack's (FLoRA's) model ``W0 + Delta`` per layer.

The merged update ``Delta`` of an adapted layer is kept in a state under
:func:`delta_name` (``<layer>.merged_delta``, the shape of the layer's base weight, e.g.
``(d_out, d_in)``); no model parameter has that name, so code that reads a state by parameter
names (``TrainableState.load``, ``rank_padding``) ignores it. :func:`merged_base` writes
``W0 + Delta`` into the peft layers' base weights for a block and restores W0 bit for bit.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence

import torch
from torch import nn

from wirelessfl.training.lora_state import LoraLayer

__all__ = ["as_base_shape", "base_weight", "delta_name", "merged_base", "zero_deltas"]

State = dict[str, torch.Tensor]


def delta_name(layer: LoraLayer) -> str:
    """The state key of ``layer``'s merged update."""
    return f"{layer.name}.merged_delta"


def base_weight(model: nn.Module, layer: LoraLayer) -> torch.Tensor:
    """The frozen base weight W0 of ``layer`` (the peft module's ``base_layer.weight``)."""
    return model.get_submodule(layer.name).base_layer.weight


def as_base_shape(model: nn.Module, layer: LoraLayer, product: torch.Tensor) -> torch.Tensor:
    """A ``(d_out, d_in')`` product in the base weight's layout (transposed for peft's
    ``fan_in_fan_out`` layers, reshaped for convs)."""
    module = model.get_submodule(layer.name)
    if getattr(module, "fan_in_fan_out", False):
        product = product.T
    return product.reshape(module.base_layer.weight.shape)


def zero_deltas(model: nn.Module, layers: Sequence[LoraLayer]) -> State:
    """A zero merged update per layer (nothing merged yet)."""
    return {delta_name(layer): torch.zeros_like(base_weight(model, layer)) for layer in layers}


@contextlib.contextmanager
def merged_base(model: nn.Module, layers: Sequence[LoraLayer], state: State) -> Iterator[None]:
    """Inside, every layer's base weight is ``W0 + state[delta_name(layer)]``; afterwards W0,
    copied back from a clone taken on entry (exact, no subtraction)."""
    saved = []
    try:
        with torch.no_grad():
            for layer in layers:
                weight = base_weight(model, layer)
                saved.append((weight, weight.detach().clone()))
                weight.add_(state[delta_name(layer)].to(weight.dtype))
        yield
    finally:
        with torch.no_grad():
            for weight, original in saved:
                weight.copy_(original)
