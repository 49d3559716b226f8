"""Aggregation arithmetic on named-tensor states (parameter name -> tensor, peft naming).

Rank truncation and zero padding are in ``wirelessfl.training.rank_padding``.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

__all__ = ["add_weighted"]

State = dict[str, torch.Tensor]


@torch.no_grad()
def add_weighted(state: State, updates: Sequence[State], weights: Sequence[float]) -> None:
    """``state[name] += sum_k weights[k] * updates[k][name]`` in place, k in order."""
    for name, value in state.items():
        for w, update in zip(weights, updates, strict=True):
            value.add_(update[name], alpha=float(w))
