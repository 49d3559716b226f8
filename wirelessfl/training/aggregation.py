"""Server aggregation of client updates (DESIGN item 9).

Updates are dicts name -> tensor (the sparse Delta each client sent). ``weighted_mean`` is
theta <- theta + sum_k p_k Delta_k / sum_k p_k over the arrived clients; ``unbiased`` is the
paper's Algorithm 3 estimator theta <- theta + (N / K) sum_k p_k Delta_k with p_k = |D_k| / |D|
over all N clients and K the scheduled count. They coincide for equal p_k when all K arrive.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

AGGREGATIONS = ("weighted_mean", "unbiased")


def aggregation_weights(
    data_fractions: Sequence[float], *, rule: str, n_clients: int, n_scheduled: int
) -> list[float]:
    """Weights multiplying each arrived client's update.

    Args:
        data_fractions: p_k = |D_k| / |D| of the arrived clients.
        rule: ``weighted_mean`` or ``unbiased``.
        n_clients: N.  n_scheduled: K^t.
    """
    if rule == "weighted_mean":
        total = float(sum(data_fractions))
        return [p / total for p in data_fractions] if total > 0 else []
    if rule == "unbiased":
        return [n_clients / n_scheduled * p for p in data_fractions]
    raise ValueError(f"aggregation must be one of {AGGREGATIONS}, got {rule!r}")


@torch.no_grad()
def apply_updates(
    global_state: dict[str, torch.Tensor],
    updates: Sequence[dict[str, torch.Tensor]],
    weights: Sequence[float],
) -> None:
    """global_state[name] += sum_k weights[k] * updates[k][name], in place."""
    for name, value in global_state.items():
        for w, up in zip(weights, updates, strict=True):
            value.add_(up[name], alpha=float(w))
