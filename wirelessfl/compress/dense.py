"""ILoRA baseline (paper section V): no sparsification, every entry is sent.

``n_keep`` is ignored (the ratio is treated as 1): the masks are all ``True`` and the error
feedback memory of an ILoRA client therefore stays zero.
"""

from __future__ import annotations

import torch
from torch import Tensor

from wirelessfl.compress.base import Sparsifier, check_pair

__all__ = ["DenseSparsifier"]


class DenseSparsifier(Sparsifier):
    """ILoRA: keep everything (``n_keep`` ignored, ratio treated as 1)."""

    ignores_budget = True

    def masks(
        self,
        B: Tensor,
        A: Tensor,
        n_keep: int,
        generator: torch.Generator | None = None,
    ) -> tuple[Tensor, Tensor]:
        """All-``True`` masks ``(mask_B (d, r), mask_A (r, l))``."""
        check_pair(B, A)
        return (
            torch.ones(B.shape, dtype=torch.bool, device=B.device),
            torch.ones(A.shape, dtype=torch.bool, device=A.device),
        )
