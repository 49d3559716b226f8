"""FlexLoRA's server step: a rank-r truncated SVD of the mean update, cut per client.

The server holds, per adapted layer, the truncation ``W_r = U_r diag(s_r) V_r^T`` of the
weighted mean ``W`` of the clients' effective products, stored as LoRA factors at the model
rank r with Sigma in B: ``lora_B = U_r diag(s_r) / s(r)``, ``lora_A = V_r^T``, so that
``s(r) lora_B lora_A = W_r``
(s: :func:`~wirelessfl.algorithms.hetero_rank.lora_products.layer_scaling`).
Components come in decreasing singular value, so a client of rank r_i gets the top-r_i
truncation ``W_{r_i}`` by taking the first r_i components, B rescaled by ``s(r) / s(r_i)``.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch

from wirelessfl.training.lora_state import LoraLayer

__all__ = ["client_start", "svd_flops", "truncated_factors"]

State = dict[str, torch.Tensor]


def truncated_factors(
    w: torch.Tensor, rank: int, scaling: float
) -> tuple[torch.Tensor, torch.Tensor, float]:
    """B ``(d_out, rank)``, A ``(rank, d_in')`` with ``scaling B A = W_rank``, and the
    squared residual ``||W - W_rank||_F^2``.

    The SVD runs in float32 at least (``torch.linalg.svd`` has no half precision); a rank
    above ``min(d_out, d_in')`` is padded with zero components.
    """
    u, s, vh = torch.linalg.svd(
        w.to(torch.promote_types(w.dtype, torch.float32)), full_matrices=False
    )
    k = min(rank, s.numel())
    b = w.new_zeros((w.shape[0], rank))
    a = w.new_zeros((rank, w.shape[1]))
    b[:, :k] = (u[:, :k] * (s[:k] / scaling)).to(w.dtype)
    a[:k] = vh[:k].to(w.dtype)
    return b, a, float((s[k:] ** 2).sum())


def client_start(
    state: State, layers: Iterable[LoraLayer], rank: int, scale_ratio: dict[str, float]
) -> State:
    """``state`` cut to ``rank`` components, each layer's B times ``scale_ratio[layer.name]``
    (``s(r) / s(rank)``): the client's rank-``rank`` truncation of the global update."""
    out = dict(state)
    for layer in layers:
        out[layer.a_param] = state[layer.a_param][:rank].clone()
        out[layer.b_param] = state[layer.b_param][:, :rank] * scale_ratio[layer.name]
    return out


def svd_flops(rows: int, cols: int) -> float:
    """FLOPs of a thin SVD with U and V of a ``rows x cols`` matrix: ``14 m n^2 + 8 n^3``,
    m = max and n = min of the two (Golub-Reinsch; Golub & Van Loan, Matrix Computations)."""
    m, n = max(rows, cols), min(rows, cols)
    return float(14 * m * n**2 + 8 * n**3)
