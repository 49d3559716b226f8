"""Server aggregation of client updates (DESIGN item 9).

Updates are dicts name -> tensor (the sparse Delta each client sent). ``weighted_mean`` is
theta <- theta + sum_k p_k Delta_k / sum_k p_k over the arrived clients; ``unbiased`` is the
paper's Algorithm 3 estimator theta <- theta + (N / K) sum_k p_k Delta_k with p_k = |D_k| / |D|
over all N clients and K the scheduled count. They coincide for equal p_k when all K arrive.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch


def _weighted_mean(p: Sequence[float], n_clients: int, n_scheduled: int) -> list[float]:
    """p_k / sum of the arrived p_k (DESIGN item 9, the default)."""
    total = float(sum(p))
    return [x / total for x in p] if total > 0 else []


def _unbiased(p: Sequence[float], n_clients: int, n_scheduled: int) -> list[float]:
    """(N / K) p_k: Algorithm 3, lines 15-16."""
    return [n_clients / n_scheduled * x for x in p]


#: aggregation rule name -> weights(p_k of the arrived, N, K); one line per rule
AGGREGATIONS: dict[str, Callable[[Sequence[float], int, int], list[float]]] = {
    "weighted_mean": _weighted_mean,
    "unbiased": _unbiased,
}


def aggregation_weights(
    data_fractions: Sequence[float], *, rule: str, n_clients: int, n_scheduled: int
) -> list[float]:
    """Weights multiplying each arrived client's update.

    Args:
        data_fractions: p_k = |D_k| / |D| of the arrived clients.
        rule: a name in :data:`AGGREGATIONS`.
        n_clients: N.  n_scheduled: K^t.
    """
    if rule not in AGGREGATIONS:
        raise ValueError(f"aggregation must be one of {tuple(AGGREGATIONS)}, got {rule!r}")
    return AGGREGATIONS[rule](data_fractions, n_clients, n_scheduled)


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
