"""Clients of different LoRA ranks in one set of stacks, by zero padding to the model's rank.

Client k starts from the global state truncated to its first ``r_k`` components (the rest
zeroed), and its LoRA output is rescaled by :func:`rank_multiplier`: by default so that it
uses ``lora_alpha / r_k`` (or ``/ sqrt(r_k)`` with rsLoRA), i.e. it trains as its unpadded
self; for FSLoRA's sketch, by ``r / r_k`` in both cases. The padded components
receive exactly zero gradients (``dA[j] = s B[:, j]^T (...)`` and ``dB[:, j] = s (...)
A[j]^T``, and eq. (2)'s Gram off-diagonals involving a zero row vanish), so they stay exactly
zero under SGD and Adam (zero moments give a zero step); results come out padded to the
model's rank. A layer of a fixed rank of its own (``learner.rank_pattern``) is neither padded
nor rescaled: every client trains it at that rank, with peft's scaling.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import torch

from wirelessfl.training.forward_patch import LoraSite

#: How a client's LoRA scaling follows its rank k (``FederatedAlgorithm.RANK_SCALING``):
#: ``"own_rank"``, the client trains its own rank-k LoRA (HetLoRA, FlexLoRA, FedStack, ...);
#: ``"sketch"``, the client trains FSLoRA's random-k sketch of the rank-r LoRA.
RankScaling = Literal["own_rank", "sketch"]
RANK_SCALINGS: tuple[RankScaling, ...] = ("own_rank", "sketch")


def rank_multiplier(
    model_rank: int, rank: int, *, rslora: bool, rank_scaling: RankScaling = "own_rank"
) -> float:
    """The factor turning the model's LoRA scaling at rank r = ``model_rank`` (``alpha / r``,
    or ``alpha / sqrt(r)`` with rsLoRA) into a rank-k = ``rank`` client's; both trainers use it.

    * ``"own_rank"``: the scaling of a rank-k LoRA, ``alpha / k`` (``alpha / sqrt(k)``): the
      factor ``r / k`` (``sqrt(r / k)`` with rsLoRA).
    * ``"sketch"``: FSLoRA (arXiv:2501.19389) eq. (2), ``l(W0 + s_r B S A)`` with ``S = (r/k)
      sum_{j in I} e_j e_j^T`` and ``s_r`` the model's scaling at rank r; the rank-k slice
      trained alone is scaled ``s_r r / k``: the factor ``r / k`` with or without rsLoRA
      (``alpha / k`` plain, ``(alpha / sqrt(r)) (r / k)`` with rsLoRA).

    Raises:
        ValueError: an unknown ``rank_scaling``.
    """
    ratio = model_rank / rank
    if rank_scaling == "own_rank":
        return math.sqrt(ratio) if rslora else ratio
    if rank_scaling == "sketch":  # eq. (2): s_r * (r / k), whatever s_r is
        return ratio
    raise ValueError(f"rank_scaling must be one of {RANK_SCALINGS}, got {rank_scaling!r}")


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
        if site.fixed:
            continue
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
    sites: list[LoraSite],
    order: list[int],
    ranks: Sequence[int] | None,
    device: torch.device,
    *,
    rank_scaling: RankScaling = "own_rank",
) -> dict[str, torch.Tensor | None]:
    """Per LoRA layer, ``(K, 1, 1)`` float64 multipliers (by position) turning the model's
    scaling into each client's (:func:`rank_multiplier`: ``r / r_k``, or ``sqrt(r / r_k)``
    for rsLoRA with ``"own_rank"``); ``None`` if all are 1."""
    out: dict[str, torch.Tensor | None] = {}
    for site in sites:
        if site.fixed or ranks is None or all(int(ranks[k]) == site.rank for k in order):
            out[site.name] = None
            continue
        vals = [
            rank_multiplier(site.rank, int(ranks[k]), rslora=site.rslora, rank_scaling=rank_scaling)
            for k in order
        ]
        out[site.name] = torch.tensor(vals, dtype=torch.float64, device=device).reshape(-1, 1, 1)
    return out
