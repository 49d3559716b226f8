"""FLoRAL's synthetic regression tasks (Almansoori et al., arXiv 2410.03497, App. eqs. (43),
(44)): clients in clusters, each cluster's ground truth a rank-``r`` perturbation of a
shared one.

Client ``k`` belongs to cluster ``c = k mod n_clusters``; its layer is
``W_c = W + alpha U_c V_c^T`` (eqs. (43)/(44)) and every client has its own train and test
rows. ``train_groups`` / ``test_groups`` hold the client id of every row (for the
``by_client`` partitioner), ``client_clusters`` the cluster of every client; the true
router is one-hot at ``client_clusters``.

Draws, all from ``split_generator(seed, <data set name>)`` in this order: ``W``, ``b``,
``U`` ``(n_clusters, d_out, rank)``, ``V`` ``(n_clusters, d_x, rank)``, (MLP: ``Phi``), then
``x`` ``(samples_per_client, d_x)`` for client 0, 1, ...; each client's first rows train,
its last ``round(test_fraction * samples_per_client)`` rows test. No label noise.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from wirelessfl.data.arrays import ArrayDataset, TaskData
from wirelessfl.data.splits import split_generator
from wirelessfl.errors import UserError

__all__ = ["load_synthetic_linear", "load_synthetic_mlp"]


def _positive_int(name: str, value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise UserError(f"{name} must be an integer >= 1, got {value!r}")
    return value


def _check(
    n_clients: int,
    n_clusters: int,
    rank: int,
    max_rank: int,
    alpha: float,
    samples_per_client: int,
    test_fraction: float,
) -> int:
    """Validate the shared options; returns the test rows per client."""
    _positive_int("n_clusters", n_clusters)
    if _positive_int("n_clients", n_clients) < n_clusters:
        raise UserError(f"n_clients must be >= n_clusters={n_clusters}, got {n_clients}")
    if not 1 <= _positive_int("rank", rank) <= max_rank:
        raise UserError(f"rank must be in 1..{max_rank}, got {rank}")
    if isinstance(alpha, bool) or not isinstance(alpha, int | float) or not math.isfinite(alpha):
        raise UserError(f"alpha must be a finite number, got {alpha!r}")
    n = _positive_int("samples_per_client", samples_per_client)
    if not 0.0 < test_fraction < 1.0:
        raise UserError(f"test_fraction must be in (0, 1), got {test_fraction!r}")
    n_test = round(test_fraction * n)
    if not 1 <= n_test <= n - 1:
        raise UserError(
            f"samples_per_client={n} with test_fraction={test_fraction} leaves "
            f"{n - n_test} train / {n_test} test rows per client; each needs >= 1"
        )
    return n_test


def _low_rank_layers(
    rng: np.random.Generator, d_out: int, d_x: int, n_clusters: int, rank: int, alpha: float
) -> tuple[np.ndarray, np.ndarray]:
    """``W_c = W + alpha U_c V_c^T`` ``(n_clusters, d_out, d_x)`` and bias ``b`` ``(d_out,)``.

    ``W``, ``U``, ``b`` ~ N(0, 1) / sqrt(d_x); ``V`` ~ N(0, 1) / sqrt(rank).
    """
    w = rng.standard_normal((d_out, d_x)) / math.sqrt(d_x)
    b = rng.standard_normal(d_out) / math.sqrt(d_x)
    u = rng.standard_normal((n_clusters, d_out, rank)) / math.sqrt(d_x)
    v = rng.standard_normal((n_clusters, d_x, rank)) / math.sqrt(rank)
    return w + alpha * u @ v.transpose(0, 2, 1), b  # eqs. (43)/(44)


def _task(
    name: str,
    rng: np.random.Generator,
    target: Callable[[np.ndarray, int], np.ndarray],
    n_clients: int,
    n_clusters: int,
    n_test: int,
    settings: dict[str, Any],
) -> TaskData:
    """Draw ``x ~ N(0, I_{d_x})`` per client, ``y = target(x, cluster)``, split, pack."""
    clusters = np.arange(n_clients, dtype=np.int64) % n_clusters
    n = settings["samples_per_client"]
    n_train = n - n_test
    xs, ys = [], []
    for c in clusters:
        x = rng.standard_normal((n, settings["d_x"]))
        xs.append(x)
        ys.append(target(x, c))
    x = torch.as_tensor(np.stack(xs), dtype=torch.float32)  # (K, n, d_x)
    y = torch.as_tensor(np.stack(ys), dtype=torch.float32)  # (K, n, d_y)
    ids = np.arange(n_clients, dtype=np.int64)
    return TaskData(
        train=ArrayDataset(x[:, :n_train].flatten(0, 1), y[:, :n_train].flatten(0, 1)),
        test=ArrayDataset(x[:, n_train:].flatten(0, 1), y[:, n_train:].flatten(0, 1)),
        n_classes=1,
        kind="regression",
        name=name,
        train_groups=np.repeat(ids, n_train),
        test_groups=np.repeat(ids, n_test),
        client_clusters=clusters,
        info={
            **settings,
            "n_clients": n_clients,
            "n_clusters": n_clusters,
            "train_per_client": n_train,
            "test_per_client": n_test,
            "alphas": [settings["alpha"]] * n_clusters,  # alpha of each cluster's U_c V_c^T
        },
    )


def load_synthetic_linear(
    *,
    seed: int,
    n_clients: int,
    n_clusters: int = 2,
    d_x: int = 10,
    d_y: int = 3,
    rank: int = 1,
    alpha: float = 2.0,
    samples_per_client: int = 8,
    test_fraction: float = 0.2,
) -> TaskData:
    """Linear regression per cluster (eq. (43)): ``y = (W_c x + b)[:d_y]``, ``W_c`` d_x x d_x.

    Args:
        seed: Seeds the ground truth and the features.
        n_clients: Clients (>= n_clusters); supplied by the scenario.
        n_clusters: Clusters C (default 2); client k is in cluster k mod C.
        d_x: Feature dimension (default 10).
        d_y: Target dimension, the first d_y rows of ``W_c x + b`` (default 3, <= d_x).
        rank: Rank r of each cluster's perturbation ``U_c V_c^T`` (1..d_x, default 1).
        alpha: Scale of the perturbation (default 2).
        samples_per_client: Rows per client, train plus test (default 8, the paper code's
            0.25 x the 33 parameters of ``Linear(10, 3)``).
        test_fraction: Share of each client's rows held out (default 0.2).

    Returns:
        A ``"regression"`` task: x float32 ``(n, d_x)``, y float32 ``(n, d_y)``, rows in
        client order.
    """
    n_test = _check(n_clients, n_clusters, rank, d_x, alpha, samples_per_client, test_fraction)
    if not 1 <= _positive_int("d_y", d_y) <= _positive_int("d_x", d_x):
        raise UserError(f"d_y must be in 1..d_x={d_x}, got {d_y}")
    rng = split_generator(seed, "synthetic_linear")
    w_c, b = _low_rank_layers(rng, d_x, d_x, n_clusters, rank, alpha)

    def target(x: np.ndarray, c: int) -> np.ndarray:
        return (x @ w_c[c].T + b)[:, :d_y]  # eq. (43), first d_y coordinates

    settings = dict(d_x=d_x, d_y=d_y, rank=rank, alpha=float(alpha))
    settings.update(samples_per_client=samples_per_client, test_fraction=test_fraction)
    return _task("synthetic_linear", rng, target, n_clients, n_clusters, n_test, settings)


def load_synthetic_mlp(
    *,
    seed: int,
    n_clients: int,
    n_clusters: int = 4,
    d_x: int = 10,
    d_hidden: int = 10,
    d_y: int = 1,
    rank: int = 1,
    alpha: float = 2.0,
    samples_per_client: int = 120,
    test_fraction: float = 0.2,
) -> TaskData:
    """One-hidden-layer ReLU network per cluster (eq. (44)): ``y = Phi ReLU(W_c x + b)``,
    ``W_c`` d_hidden x d_x, ``Phi`` d_y x d_hidden ~ N(0, 1) / sqrt(d_hidden) shared.

    Args:
        seed: Seeds the ground truth and the features.
        n_clients: Clients (>= n_clusters); supplied by the scenario.
        n_clusters: Clusters C (default 4); client k is in cluster k mod C.
        d_x: Feature dimension (default 10).
        d_hidden: Hidden width of the generating network (default 10).
        d_y: Target dimension (default 1).
        rank: Rank r of each cluster's perturbation (1..min(d_x, d_hidden), default 1).
        alpha: Scale of the perturbation (default 2).
        samples_per_client: Rows per client, train plus test (default 120, the paper code's
            0.5 x the 241 parameters of ``Linear(10, 20)-ReLU-Linear(20, 1)``).
        test_fraction: Share of each client's rows held out (default 0.2).

    Returns:
        A ``"regression"`` task: x float32 ``(n, d_x)``, y float32 ``(n, d_y)``, rows in
        client order.
    """
    _positive_int("d_x", d_x)
    _positive_int("d_hidden", d_hidden)
    _positive_int("d_y", d_y)
    max_rank = min(d_x, d_hidden)
    n_test = _check(n_clients, n_clusters, rank, max_rank, alpha, samples_per_client, test_fraction)
    rng = split_generator(seed, "synthetic_mlp")
    w_c, b = _low_rank_layers(rng, d_hidden, d_x, n_clusters, rank, alpha)
    phi = rng.standard_normal((d_y, d_hidden)) / math.sqrt(d_hidden)

    def target(x: np.ndarray, c: int) -> np.ndarray:
        return np.maximum(x @ w_c[c].T + b, 0.0) @ phi.T  # eq. (44)

    settings = dict(d_x=d_x, d_hidden=d_hidden, d_y=d_y, rank=rank, alpha=float(alpha))
    settings.update(samples_per_client=samples_per_client, test_fraction=test_fraction)
    return _task("synthetic_mlp", rng, target, n_clients, n_clusters, n_test, settings)
