"""Aggregation arithmetic on named-tensor states (parameter name -> tensor, peft naming).

Rank truncation and zero padding are in ``wirelessfl.training.rank_padding``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import torch

from wirelessfl.training.lora_state import LoraLayer
from wirelessfl.training.rank_padding import lora_rank, zero_pad_rank

__all__ = ["add_weighted", "add_zero_padded"]

State = dict[str, torch.Tensor]


@torch.no_grad()
def add_weighted(state: State, updates: Sequence[State], weights: Sequence[float]) -> None:
    """``state[name] += sum_k weights[k] * updates[k][name]`` in place, k in order."""
    for name, value in state.items():
        for w, update in zip(weights, updates, strict=True):
            value.add_(update[name], alpha=float(w))


def add_zero_padded(
    state: State, updates: Sequence[State], layers: Iterable[LoraLayer], weights: Sequence[float]
) -> None:
    """``state += sum_k weights[k] * pad_r(updates[k])`` in place: each update's LoRA pairs
    zero-padded to the rank r of ``state``'s (clients of a lower rank send fewer components)."""
    layers = list(layers)
    rank = lora_rank(state, layers)
    add_weighted(state, [zero_pad_rank(u, layers, rank) for u in updates], weights)
