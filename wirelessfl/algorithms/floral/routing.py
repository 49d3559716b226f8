"""How well learned routers match the true clusters (numpy; no torch).

Components are unlabelled (any permutation of the C adaptors is the same model), so routing
is scored under the best matching of components to clusters.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linear_sum_assignment

__all__ = ["aggregation_mismatch", "routing_accuracy"]


def routing_accuracy(pis: np.ndarray, clusters: np.ndarray) -> float:
    """Share of clients whose largest mixture weight is their cluster's component, under the
    matching of components to clusters that maximises it.

    Args:
        pis: Mixture weights ``(K, C)``.
        clusters: True cluster of each client, ints ``(K,)`` in 0..M-1.
    """
    pis, clusters = np.asarray(pis, dtype=float), np.asarray(clusters, dtype=np.int64)
    if len(clusters) == 0:
        return float("nan")
    top = pis.argmax(axis=1)
    n_clusters = int(clusters.max()) + 1
    counts = np.zeros((pis.shape[1], n_clusters))
    np.add.at(counts, (top, clusters), 1.0)
    comp, clus = linear_sum_assignment(-counts)
    return float(counts[comp, clus].sum() / len(clusters))


def aggregation_mismatch(pis: np.ndarray, clusters: np.ndarray, sizes: np.ndarray) -> float:
    """Mean over components of ||p-hat(.|c) - p(.|c)||_1 (§4's aggregation mismatch), with
    components matched to clusters so that the total mismatch is smallest.

    p(k|c) = 1{k in c} N^k / sum_{k' in c} N^k' and p-hat(k|c) = pi_c^k N^k / sum pi_c^k' N^k'
    over the given clients; a component matched to no cluster (C > M) is left out.
    """
    pis = np.asarray(pis, dtype=float)
    clusters = np.asarray(clusters, dtype=np.int64)
    sizes = np.asarray(sizes, dtype=float)
    n_clusters = int(clusters.max()) + 1
    truth = np.zeros((len(clusters), n_clusters))
    truth[np.arange(len(clusters)), clusters] = sizes
    truth_sum = truth.sum(axis=0)
    p = np.divide(truth, truth_sum, out=np.zeros_like(truth), where=truth_sum > 0)
    joint = pis * sizes[:, None]
    total = joint.sum(axis=0, keepdims=True)
    p_hat = np.divide(joint, total, out=np.zeros_like(joint), where=total > 0)
    cost = np.abs(p_hat[:, :, None] - p[:, None, :]).sum(axis=0)  # (C, M)
    comp, clus = linear_sum_assignment(cost)
    present = truth_sum[clus] > 0
    return float(cost[comp, clus][present].mean()) if present.any() else float("nan")
