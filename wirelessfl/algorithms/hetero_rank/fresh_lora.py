"""Freshly initialised LoRA factors at a given rank, from an addressed generator.

peft's default initialisation: ``lora_A`` Kaiming-uniform with ``a = sqrt(5)`` (bound
``1 / sqrt(d_in')``, the fan-in does not depend on the rank) and ``lora_B = 0``, so the new
adapter starts as a zero update.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import torch

from wirelessfl.training.lora_state import LoraLayer

__all__ = ["fresh_factors"]

State = dict[str, torch.Tensor]


def fresh_factors(
    like: State, layers: Iterable[LoraLayer], rank: int, generator: torch.Generator
) -> State:
    """Rank-``rank`` factors of every layer, shaped like ``like``'s but for the rank:
    ``lora_A (rank, d_in[, k, k])`` drawn from ``generator``, ``lora_B (d_out, rank[, 1, 1])``
    zero."""
    out = {}
    for layer in layers:
        a, b = like[layer.a_param], like[layer.b_param]
        fresh_a = a.new_empty((rank, *a.shape[1:]))
        torch.nn.init.kaiming_uniform_(fresh_a, a=math.sqrt(5), generator=generator)
        out[layer.a_param] = fresh_a
        out[layer.b_param] = b.new_zeros((b.shape[0], rank, *b.shape[2:]))
    return out
