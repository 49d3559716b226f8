"""Round metrics of SOFT: the covariance term (eq. 12) and orthogonality (Fig. 2). Pure
functions of tensors, each tested on its own."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch

from wirelessfl.lora_math import covariance_norm, orthogonality_residual
from wirelessfl.training.lora_state import TrainableState

__all__ = ["covariance_norm_over", "orthogonality_of"]

Factors = Sequence[tuple[torch.Tensor, torch.Tensor]]  # per layer: (theta_B (d, r), theta_A (r, l))


def _padded(b: torch.Tensor, a: torch.Tensor, rank: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(theta_B, theta_A) with zero rank components up to ``rank`` (the same B A)."""
    extra = rank - b.shape[1]
    if extra == 0:
        return b, a
    return (
        torch.cat([b, b.new_zeros(b.shape[0], extra)], dim=1),
        torch.cat([a, a.new_zeros(extra, a.shape[1])], dim=0),
    )


def covariance_norm_over(clients: Sequence[Factors], weights: Sequence[float]) -> float:
    """sqrt(sum over layers of ||Cov(theta_B, theta_A)||_F^2) over clients (eq. 12).

    Args:
        clients: per client, its per-layer local factors (ranks may differ: zero-padded to
            the largest, which leaves each client's B A unchanged).
        weights: p_k per client.

    Returns:
        The norm; NaN for fewer than two clients (no covariance).
    """
    if len(clients) < 2:
        return math.nan
    total = 0.0
    for layer in range(len(clients[0])):
        rank = max(factors[layer][0].shape[1] for factors in clients)
        pairs = [_padded(*factors[layer], rank) for factors in clients]
        total += covariance_norm([b for b, _ in pairs], [a for _, a in pairs], list(weights)) ** 2
    return math.sqrt(total)


def orthogonality_of(global_state: dict[str, torch.Tensor], state: TrainableState) -> float:
    """Mean over adapted layers of the normalised orthogonality residual; NaN without layers."""
    values = [
        orthogonality_residual(*state.paper_factors(global_state, layer)) for layer in state.layers
    ]
    return float(np.mean(values)) if values else math.nan
