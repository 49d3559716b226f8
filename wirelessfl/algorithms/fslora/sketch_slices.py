"""Rank slices of peft LoRA states: gather columns/rows I of every layer.

FSLoRA's client trains the rank-k slice ``B[:, I]``, ``A[I, :]`` of the global rank-r factors
(peft orientation: ``lora_A (r, d_in[, ...])`` so the rank is dim 0 of A, ``lora_B
(d_out, r[, ...])`` so it is dim 1 of B); the server puts the slice's update back at I in zero
rank-r tensors (eq. 5: ``wirelessfl.algorithms.state_ops.at_global_rank`` with the slice's
components). Other entries (the task head) are passed through unchanged. B and A of one layer
always share one index set.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from wirelessfl.training.lora_state import LoraLayer

__all__ = ["gather_slices"]

State = dict[str, torch.Tensor]


def _index(indices: Sequence[int], like: torch.Tensor) -> torch.Tensor:
    return torch.as_tensor(indices, dtype=torch.long, device=like.device)


def gather_slices(
    state: State, layers: Sequence[LoraLayer], index_sets: Sequence[Sequence[int]]
) -> State:
    """``state`` with ``lora_A[I]`` (k, d_in) and ``lora_B[:, I]`` (d_out, k) per layer.

    Args:
        state: peft-named tensors at rank r.
        layers: the adapted layers.
        index_sets: one index set I (k ascending ints in ``[0, r)``) per layer.

    Returns:
        New LoRA tensors at rank k; other entries shared with ``state``.
    """
    out = dict(state)
    for layer, indices in zip(layers, index_sets, strict=True):
        a, b = state[layer.a_param], state[layer.b_param]
        idx = _index(indices, a)
        out[layer.a_param] = a.index_select(0, idx)
        out[layer.b_param] = b.index_select(1, idx)
    return out
