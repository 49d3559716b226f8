"""TLoRA baseline (paper section V): global top-``n_keep`` entries by magnitude.

The candidates are all ``r(d+l)`` entries of ``B (d, r)`` and ``A (r, l)`` together (one
global threshold, not one per matrix). Ties go to the lower flat index (``B`` row-major, then
``A`` row-major).
"""

from __future__ import annotations

import torch
from torch import Tensor

from wirelessfl.compress.base import Sparsifier, flat_topk_masks

__all__ = ["TopKSparsifier"]


class TopKSparsifier(Sparsifier):
    """TLoRA: keep the ``n_keep`` largest-magnitude entries over ``B`` and ``A`` together."""

    def masks(
        self,
        B: Tensor,
        A: Tensor,
        n_keep: int,
        generator: torch.Generator | None = None,
    ) -> tuple[Tensor, Tensor]:
        """Keep-masks ``(mask_B (d, r), mask_A (r, l))``; deterministic, ``generator`` unused."""
        self.check_inputs(B, A, n_keep)
        return flat_topk_masks(B, A, n_keep)
