"""LoRA states at another rank: truncate to the first components, or zero-pad.

A client of rank r_k < r trains on the model wrapped at r (``wirelessfl.training.runtime``):
it starts from the global factors cut to r_k components and padded back with zeros, and its
trained factors are cut to r_k again. States are dicts of peft-named tensors; ``lora_A`` is
``(r, d_in[, k, k])`` and ``lora_B`` ``(d_out, r[, 1, 1])``, so the rank is dim 0 of A and dim 1
of B. Other entries (the task head) are left as they are, and so are the layers of a fixed
rank of their own (``LoraLayer.fixed_rank``, ``learner.rank_pattern``): every client trains
them at that rank.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch

from wirelessfl.training.lora_state import LoraLayer

__all__ = ["lora_rank", "truncate_rank", "zero_pad_rank"]

State = dict[str, torch.Tensor]


def lora_rank(state: State, layers: Iterable[LoraLayer]) -> int:
    """The rank of the LoRA pairs in ``state`` (all layers but those of a fixed rank share it;
    0 without such layers)."""
    ranks = {int(state[layer.a_param].shape[0]) for layer in layers if layer.fixed_rank is None}
    if len(ranks) > 1:
        raise ValueError(f"LoRA layers of one state have different ranks {sorted(ranks)}")
    return ranks.pop() if ranks else 0


def truncate_rank(
    state: State, layers: Iterable[LoraLayer], rank: int, *, missing_ok: bool = False
) -> State:
    """``state`` with every LoRA pair (but those of a fixed rank) cut to its first ``rank``
    components (new tensors).

    ``lora_A (r, ...) -> (rank, ...)``, ``lora_B (d_out, r, ...) -> (d_out, rank, ...)``;
    other entries are shared with ``state``. With ``missing_ok`` a factor absent from
    ``state`` (a state of the frozen A factors alone) is skipped.
    """
    out = dict(state)
    for layer in layers:
        if layer.fixed_rank is not None:
            continue
        if layer.a_param in state or not missing_ok:
            out[layer.a_param] = state[layer.a_param][:rank].clone()
        if layer.b_param in state or not missing_ok:
            out[layer.b_param] = state[layer.b_param][:, :rank].clone()
    return out


def zero_pad_rank(state: State, layers: Iterable[LoraLayer], rank: int) -> State:
    """``state`` with every LoRA pair (but those of a fixed rank) padded with zero components
    up to ``rank`` (new tensors).

    The padded components contribute nothing to ``B A`` and, in training, receive exactly zero
    gradients (``dA[j] = s B[:, j]^T (...)``, ``dB[:, j] = s (...) A[j]^T``), so they stay zero.
    """
    out = dict(state)
    for layer in layers:
        if layer.fixed_rank is not None:
            continue
        a, b = state[layer.a_param], state[layer.b_param]
        extra = rank - a.shape[0]
        if extra < 0:
            raise ValueError(f"{layer.name}: rank {a.shape[0]} exceeds the padded rank {rank}")
        if extra == 0:
            continue
        out[layer.a_param] = torch.cat([a, a.new_zeros((extra, *a.shape[1:]))], dim=0)
        out[layer.b_param] = torch.cat([b, b.new_zeros((b.shape[0], extra, *b.shape[2:]))], dim=1)
    return out
