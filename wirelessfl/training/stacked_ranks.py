"""Clients of different LoRA ranks in one set of stacks, by zero padding to the model's rank.

Client k starts from the global state truncated to its first ``r_k`` components (the rest
zeroed), and its LoRA output is rescaled so that it uses ``lora_alpha / r_k`` (or
``/ sqrt(r_k)`` with rsLoRA), i.e. it trains as its unpadded self. The padded components
receive exactly zero gradients (``dA[j] = s B[:, j]^T (...)`` and ``dB[:, j] = s (...)
A[j]^T``, and eq. (2)'s Gram off-diagonals involving a zero row vanish), so they stay exactly
zero under SGD and Adam (zero moments give a zero step); results come out padded to the
model's rank.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from wirelessfl.training.forward_patch import LoraSite


def zero_padding(
    stacks: dict[str, torch.Tensor],
    sites: list[LoraSite],
    order: list[int],
    ranks: Sequence[int],
) -> None:
    """Zero, in place, the components beyond each client's rank in the LoRA stacks
    (``A (K, r, ...)`` rows ``r_k:``, ``B (K, d_out, r, ...)`` columns ``r_k:``).

    Args:
        stacks: parameter name -> ``(K, *shape)``, row ``pos`` = client ``order[pos]``.
        sites: the model's LoRA layers.
        order: position -> client index.
        ranks: per client (by client index), its rank ``1 .. site.rank``.

    Raises:
        ValueError: a rank out of range.
    """
    for site in sites:
        for pos, k in enumerate(order):
            r_k = int(ranks[k])
            if not 1 <= r_k <= site.rank:
                raise ValueError(
                    f"client {k}: rank {r_k} is out of range for layer {site.name!r} "
                    f"(accepted 1..{site.rank})"
                )
            stacks[site.a_param][pos, r_k:] = 0
            stacks[site.b_param][pos, :, r_k:] = 0


def rank_factors(
    sites: list[LoraSite], order: list[int], ranks: Sequence[int] | None, device: torch.device
) -> dict[str, torch.Tensor | None]:
    """Per LoRA layer, ``(K, 1, 1)`` float64 multipliers (by position) turning the model's
    scaling into each client's own (``r / r_k``, or ``sqrt(r / r_k)`` for rsLoRA); ``None``
    if all are 1."""
    out: dict[str, torch.Tensor | None] = {}
    for site in sites:
        if ranks is None or all(int(ranks[k]) == site.rank for k in order):
            out[site.name] = None
            continue
        ratios = [site.rank / int(ranks[k]) for k in order]
        vals = [math.sqrt(x) if site.rslora else x for x in ratios]
        out[site.name] = torch.tensor(vals, dtype=torch.float64, device=device).reshape(-1, 1, 1)
    return out
