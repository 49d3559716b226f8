"""RLoRA baseline (paper section V): ``n_keep`` entries uniformly at random.

The ``n_keep`` positions are drawn without replacement, uniformly over all ``r(d+l)`` entries of
``B (d, r)`` and ``A (r, l)`` together, with ``torch.randperm`` driven by ``generator`` (the
global torch RNG when ``None``), so the draw is reproducible given the generator's state.
Values are sent unscaled (no ``1/ratio`` rescaling), as the baseline is described.
"""

from __future__ import annotations

import torch
from torch import Tensor

from wirelessfl.compress.base import Sparsifier, split_flat_mask

__all__ = ["RandomKSparsifier"]


class RandomKSparsifier(Sparsifier):
    """RLoRA: keep ``n_keep`` entries chosen uniformly at random without replacement."""

    def masks(
        self,
        B: Tensor,
        A: Tensor,
        n_keep: int,
        generator: torch.Generator | None = None,
    ) -> tuple[Tensor, Tensor]:
        """Keep-masks ``(mask_B (d, r), mask_A (r, l))`` drawn with ``generator``.

        The permutation is drawn on the generator's device and moved to ``B.device``.
        """
        d, r, l = self.check_inputs(B, A, n_keep)
        n_total = r * (d + l)
        rng_device = generator.device if generator is not None else torch.device("cpu")
        perm = torch.randperm(n_total, generator=generator, device=rng_device)
        flat = torch.zeros(n_total, dtype=torch.bool, device=B.device)
        flat[perm[:n_keep].to(B.device)] = True
        return split_flat_mask(flat, d, r, l)
