"""Aggregation arithmetic on named-tensor states (parameter name -> tensor, peft naming).

Rank truncation and zero padding are in ``wirelessfl.training.rank_padding``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import torch

from wirelessfl.algorithms.message import LoraTensors, Message
from wirelessfl.training.lora_state import LoraLayer

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
    slices scattered; eq. (5)); a layer's factors the message shares without naming them in
    :attr:`Message.lora` are its first components; the other tensors as they are. Each factor
    is placed at its own global factor's rank (a layer of a fixed rank, ``learner.rank_pattern``,
    at that rank)."""
    layers = list(layers)
    out = dict(message.shared)
    named = {group.layer for group in message.lora}
    groups = list(message.lora) + [
        LoraTensors(layer.name, layer.b_param, layer.a_param if layer.a_param in out else None)
        for layer in layers
        if layer.name not in named and layer.b_param in out
    ]
    for group in groups:
        for name, dim in ((group.a, 0), (group.b, 1)):
            if name is None:
                continue
            value = out[name]
            have, rank = value.shape[dim], global_state[name].shape[dim]
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
