"""Sparsification of LoRA updates (SOFT and the section-V baselines) with error feedback.

Public API:

* :func:`sparsify` ``(name, B (d, r), A (r, l), ratio, generator) -> (B_s, A_s)`` keeps exactly
  ``round(ratio * r * (d + l))`` entries across ``B`` and ``A`` (``"none"`` keeps all);
* :data:`SPARSIFIERS` (``wirelessfl.registries``), :func:`get_sparsifier`, :class:`Sparsifier`;
* :func:`allocate_budget` (SOFT's integer budgets, eq. 3);
* :func:`compress_update` / :class:`CompressedUpdate` (per-layer error feedback, eqs. 4-7).

Built-in sparsifiers (one file each, one line each in ``wirelessfl.registries.SPARSIFIERS``):

=============  ========  ===============================================================
name           paper     rule
=============  ========  ===============================================================
``soft``       SOFT      per-component budget ~ ||B[:,i]||^2 ||A[i,:]||^2, top-o_i each
``topk``       TLoRA     global top-k by magnitude over B and A together
``random``     RLoRA     k entries uniformly at random (uses the generator)
``structured`` SLoRA     lowest rank indices first, last component partially by magnitude
``none``       ILoRA     no sparsification
=============  ========  ===============================================================

To add one, see the docstring of :mod:`wirelessfl.compress.base`: one file plus one registry
line.
"""

from __future__ import annotations

import torch
from torch import Tensor

from wirelessfl.compress.base import (
    SPARSIFIERS,
    Sparsifier,
    apply_masks,
    budget_for,
    check_pair,
    get_sparsifier,
)
from wirelessfl.compress.budget import allocate_budget
from wirelessfl.compress.error_feedback import CompressedUpdate, LayerCounts, compress_update

__all__ = [
    "SPARSIFIERS",
    "CompressedUpdate",
    "LayerCounts",
    "Sparsifier",
    "allocate_budget",
    "budget_for",
    "compress_update",
    "get_sparsifier",
    "sparsify",
    "sparsify_masks",
]


def sparsify_masks(
    name: str,
    B: Tensor,
    A: Tensor,
    ratio: float,
    generator: torch.Generator | None = None,
) -> tuple[Tensor, Tensor]:
    """Keep-masks ``(mask_B (d, r) bool, mask_A (r, l) bool)`` of sparsifier ``name``.

    The budget is ``round(ratio * r * (d + l))`` entries over ``B`` and ``A`` together
    (:func:`budget_for`); ``"none"`` ignores it and keeps everything.

    Raises:
        ValueError: unknown ``name`` (message lists the accepted names), ``ratio`` outside
            ``[0, 1]``, or ``B``/``A`` not of shapes ``(d, r)``/``(r, l)``.
    """
    sparsifier = get_sparsifier(name)
    d, r, l = check_pair(B, A)
    n_keep = budget_for(ratio, r, d, l)
    return sparsifier.masks(B, A, n_keep, generator)


def sparsify(
    name: str,
    B: Tensor,
    A: Tensor,
    ratio: float,
    generator: torch.Generator | None = None,
) -> tuple[Tensor, Tensor]:
    """Sparsify one LoRA pair: ``(B_s (d, r), A_s (r, l))`` with unkept entries zeroed.

    Exactly ``round(ratio * r * (d + l))`` entries are kept in total across ``B`` and ``A``
    (all of them for ``"none"``); outputs have the inputs' dtype and device. Deterministic
    given ``generator`` (only ``"random"`` draws from it).

    Raises:
        ValueError: unknown ``name`` (message lists the accepted names), ``ratio`` outside
            ``[0, 1]``, or a shape mismatch between ``B`` and ``A``.
    """
    mask_B, mask_A = sparsify_masks(name, B, A, ratio, generator)
    return apply_masks(B, A, mask_B, mask_A)
