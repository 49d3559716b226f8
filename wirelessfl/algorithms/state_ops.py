"""Aggregation arithmetic on named-tensor states (parameter name -> tensor, peft naming).

Rank truncation and zero padding are in ``wirelessfl.training.rank_padding``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import torch

from wirelessfl.algorithms.message import Message
from wirelessfl.training.lora_state import LoraLayer
from wirelessfl.training.rank_padding import lora_rank

__all__ = ["add_weighted", "at_global_rank"]

State = dict[str, torch.Tensor]


@torch.no_grad()
def add_weighted(state: State, updates: Sequence[State], weights: Sequence[float]) -> None:
    """``state[name] += sum_k weights[k] * updates[k][name]`` in place, k in order, over the
    updates that hold ``name`` (a B-only update leaves A as it is)."""
    for name, value in state.items():
        for w, update in zip(weights, updates, strict=True):
            if name in update:
                value.add_(update[name], alpha=float(w))


def at_global_rank(message: Message, global_state: State, layers: Iterable[LoraLayer]) -> State:
    """``message.shared`` with every LoRA factor of :attr:`Message.lora` placed at its rank
    components of the global factors, zeros elsewhere (a lower rank zero-padded, FSLoRA's
    slices scattered; eq. (5)); the other tensors as they are."""
    rank = lora_rank(global_state, layers)
    out = dict(message.shared)
    for group in message.lora:
        for name, dim in ((group.a, 0), (group.b, 1)):
            if name is None:
                continue
            value = out[name]
            have = value.shape[dim]
            if group.components is None and have == rank:
                continue
            comps = list(group.components) if group.components is not None else list(range(have))
            shape = list(value.shape)
            shape[dim] = rank
            full = value.new_zeros(shape)
            index = torch.tensor(comps, device=value.device)
            full.index_copy_(dim, index, value)
            out[name] = full
    return out
