"""SLoRA baseline (paper section V): keep the lower rank indices.

Reading implemented here: rank component ``i`` is ``B[:, i] ∪ A[i, :]`` (``d + l`` entries).
Whole components are kept in order of increasing rank index ``i = 0, 1, ...`` while the budget
allows (``n_keep // (d + l)`` of them); the next component, if budget is left, keeps its top
``n_keep mod (d + l)`` entries by magnitude over its ``B`` column and ``A`` row together (ties:
``B`` part first, then lower index); higher components are dropped. The paper only says that
"elements corresponding to lower rank indices" are preserved; it does not say how a partial
component is cut, and top-magnitude is the choice that wastes the least of the budget.
"""

from __future__ import annotations

import torch
from torch import Tensor

from wirelessfl.compress.base import Sparsifier, component_topk_masks

__all__ = ["StructuredSparsifier"]


class StructuredSparsifier(Sparsifier):
    """SLoRA: whole low-index rank components first, the last one partially by magnitude."""

    def masks(
        self,
        B: Tensor,
        A: Tensor,
        n_keep: int,
        generator: torch.Generator | None = None,
    ) -> tuple[Tensor, Tensor]:
        """Keep-masks ``(mask_B (d, r), mask_A (r, l))``; deterministic, ``generator`` unused."""
        d, r, l = self.check_inputs(B, A, n_keep)
        width = d + l
        counts = torch.zeros(r, dtype=torch.int64)
        if width > 0:
            full, rest = divmod(n_keep, width)
            counts[:full] = width
            if rest:
                counts[full] = rest
        return component_topk_masks(B, A, counts)
