"""A LoRA layer's scaling s(r) and its update ``s(r) B A`` as a dense matrix.

peft adds ``s(r) B A`` to an adapted layer, with ``B = lora_B`` of shape ``(d_out, r[, 1, 1])``,
``A = lora_A`` of shape ``(r, d_in[, k, k])`` and ``s(r) = alpha / r`` (``alpha / sqrt(r)``
with rsLoRA). Products are ``(d_out, d_in')`` matrices, ``d_in' = d_in k k`` for a conv.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from wirelessfl.training.lora_state import LoraLayer

__all__ = ["adapter_of", "layer_scaling", "lora_product"]

State = dict[str, torch.Tensor]


def adapter_of(layer: LoraLayer) -> str:
    """The peft adapter name in ``layer``'s parameter names (``default``)."""
    return layer.a_param.split(".lora_A.")[1].split(".")[0]


def layer_scaling(model: nn.Module, layer: LoraLayer, rank: int) -> float:
    """s(rank): alpha / rank, or alpha / sqrt(rank) when the layer uses rsLoRA."""
    module = model.get_submodule(layer.name)
    adapter = adapter_of(layer)
    alpha = float(module.lora_alpha[adapter])
    rslora = bool(getattr(module, "use_rslora", {}).get(adapter, False))
    return alpha / math.sqrt(rank) if rslora else alpha / rank


def lora_product(values: State, layer: LoraLayer) -> torch.Tensor:
    """``B A`` of ``layer`` in ``values``, unscaled: ``(d_out, d_in')``."""
    a, b = values[layer.a_param], values[layer.b_param]
    rank = a.shape[0]
    return b.reshape(b.shape[0], rank) @ a.reshape(rank, -1)
