"""FLoRAL's concept-shift MNIST tasks (Almansoori et al., arXiv 2410.03497): every client's
images (train and test) go through its cluster's transform.

Base: the ``mnist5k`` images (4,000 train / 1,000 test at the defaults, normalised
``(x - 127) / 128``). Each split is cut IID into ``n_clients`` near-equal shards; client ``k``
is in cluster ``c = k mod n_clusters`` and gets

====================  ==========================================================
``mnist_rotate``      images rotated ``360 c / n_clusters`` degrees counter-clockwise
``mnist_label_shift`` labels ``y -> (y + c) mod 10``
====================  ==========================================================

``reduced=True`` keeps a random ``max(reduced_min, round(reduced_fraction * n_k))`` of each
client's ``n_k`` training images (the test shards stay whole). Rows are in client order;
``train_groups`` / ``test_groups`` hold the client id of every row (``by_client``
partitioner) and ``client_clusters`` the cluster of every client. The draws come from
``split_generator(seed, <data set name>)``: train permutation, test permutation, then the
reduced subsets client by client.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import torch
import torch.nn.functional as F

from wirelessfl.data.arrays import ArrayDataset, TaskData
from wirelessfl.data.mnist5k import load_mnist5k
from wirelessfl.data.preprocess import normalise_pixels
from wirelessfl.data.splits import split_generator
from wirelessfl.errors import UserError

__all__ = ["load_mnist_label_shift", "load_mnist_rotate", "rotate_images"]

#: ``(x, y, cluster, n_clusters) -> (x, y)`` applied to one client's shard.
Transform = Callable[[torch.Tensor, torch.Tensor, int, int], tuple[torch.Tensor, torch.Tensor]]


def _grid_rotate(x: torch.Tensor, degrees: float) -> torch.Tensor:
    """Bilinear rotation about the image centre, outside filled with black (a 0 pixel)."""
    t = math.radians(degrees)
    # output (u, v) samples input R(-t) (u, v); image y axis points down, so this is
    # counter-clockwise on screen
    theta = torch.tensor([[math.cos(t), -math.sin(t), 0.0], [math.sin(t), math.cos(t), 0.0]])
    grid = F.affine_grid(theta.expand(len(x), 2, 3), list(x.shape), align_corners=False)
    black = normalise_pixels(torch.tensor(0.0))
    out = F.grid_sample(x - black, grid, mode="bilinear", padding_mode="zeros", align_corners=False)
    return out + black


def rotate_images(x: torch.Tensor, degrees: float) -> torch.Tensor:
    """Rotate images ``(n, C, H, W)`` by ``degrees`` counter-clockwise (as displayed).

    Multiples of 90: exact ``torch.rot90``. Else bilinear ``grid_sample`` with the corners
    filled black (the normalised value of a 0 pixel, so no grey border appears).
    """
    quarter, rest = divmod(float(degrees), 90.0)
    if rest == 0.0:
        return torch.rot90(x, int(quarter) % 4, dims=(-2, -1))
    return _grid_rotate(x, degrees)


def _rotate(
    x: torch.Tensor, y: torch.Tensor, c: int, n_clusters: int
) -> tuple[torch.Tensor, torch.Tensor]:
    return rotate_images(x, 360.0 * c / n_clusters), y


def _shift_labels(
    x: torch.Tensor, y: torch.Tensor, c: int, n_clusters: int
) -> tuple[torch.Tensor, torch.Tensor]:
    return x, (y + c) % 10


def _check(
    n_clients: int, n_clusters: int, reduced: bool, reduced_fraction: float, reduced_min: int
) -> None:
    for key, value in (("n_clients", n_clients), ("n_clusters", n_clusters)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise UserError(f"{key} must be an integer >= 1, got {value!r}")
    if n_clients < n_clusters:
        raise UserError(f"n_clients must be >= n_clusters={n_clusters}, got {n_clients}")
    if not isinstance(reduced, bool):
        raise UserError(f"reduced must be true or false, got {reduced!r}")
    if isinstance(reduced_fraction, bool) or not (
        isinstance(reduced_fraction, int | float) and 0.0 < reduced_fraction <= 1.0
    ):
        raise UserError(f"reduced_fraction must be in (0, 1], got {reduced_fraction!r}")
    if not isinstance(reduced_min, int) or isinstance(reduced_min, bool) or reduced_min < 1:
        raise UserError(f"reduced_min must be an integer >= 1, got {reduced_min!r}")


def _shards(n: int, n_clients: int, rng: np.random.Generator, split: str) -> list[np.ndarray]:
    """IID near-equal shards of ``range(n)``, each sorted."""
    if n < n_clients:
        raise UserError(f"n_clients={n_clients} needs at least {n_clients} {split} images, got {n}")
    return [np.sort(s) for s in np.array_split(rng.permutation(n), n_clients)]


def _reduced_size(n_k: int, fraction: float, minimum: int) -> int:
    """Training images a client keeps when reduced: ``max(minimum, round(fraction n_k))``,
    capped at ``n_k``."""
    return min(n_k, max(minimum, round(fraction * n_k)))


def _per_client(
    ds: ArrayDataset, shards: list[np.ndarray], transform: Transform, n_clusters: int
) -> tuple[ArrayDataset, np.ndarray]:
    """Transformed shards in client order: ``(data set, client id per row)``."""
    xs, ys = [], []
    for k, idx in enumerate(shards):
        shard = ds.subset(idx)
        x, y = transform(shard.x, shard.y, k % n_clusters, n_clusters)
        xs.append(x)
        ys.append(y)
    groups = np.repeat(np.arange(len(shards), dtype=np.int64), [len(s) for s in shards])
    return ArrayDataset(torch.cat(xs), torch.cat(ys)), groups


def _load(
    name: str,
    transform: Transform,
    describe: Callable[[int], dict[str, list]],
    *,
    seed: int,
    n_clients: int,
    n_clusters: int,
    reduced: bool,
    reduced_fraction: float,
    reduced_min: int,
    image_size: int,
    channels: int,
    n_test: int,
) -> TaskData:
    """The shared loader; ``describe(n_clusters)`` gives the per-cluster settings for ``info``."""
    _check(n_clients, n_clusters, reduced, reduced_fraction, reduced_min)
    base = load_mnist5k(seed=seed, image_size=image_size, channels=channels, n_test=n_test)
    rng = split_generator(seed, name)
    train = _shards(len(base.train), n_clients, rng, "training")
    test = _shards(len(base.test), n_clients, rng, "test")
    if reduced:
        train = [
            np.sort(rng.choice(s, _reduced_size(len(s), reduced_fraction, reduced_min), False))
            for s in train
        ]
    train_ds, train_groups = _per_client(base.train, train, transform, n_clusters)
    test_ds, test_groups = _per_client(base.test, test, transform, n_clusters)
    return TaskData(
        train=train_ds,
        test=test_ds,
        n_classes=10,
        kind="image",
        name=name,
        train_groups=train_groups,
        test_groups=test_groups,
        class_names=[str(i) for i in range(10)],
        client_clusters=np.arange(n_clients, dtype=np.int64) % n_clusters,
        info={
            **base.info,
            "base": "mnist5k",
            "n_test": n_test,
            "n_clients": n_clients,
            "n_clusters": n_clusters,
            "reduced": reduced,
            "reduced_fraction": reduced_fraction,
            "reduced_min": reduced_min,
            **describe(n_clusters),
        },
    )


def load_mnist_rotate(
    *,
    seed: int,
    n_clients: int,
    n_clusters: int = 4,
    reduced: bool = False,
    reduced_fraction: float = 0.05,
    reduced_min: int = 10,
    image_size: int = 28,
    channels: int = 1,
    n_test: int = 1000,
) -> TaskData:
    """MNIST with cluster c's images rotated ``360 c / n_clusters`` degrees counter-clockwise.

    Args:
        seed: Seeds the mnist5k split, the client shards and the reduced subsets.
        n_clients: Clients (>= n_clusters); supplied by the scenario.
        n_clusters: Clusters C (default 4: 0, 90, 180, 270 degrees); client k is in cluster
            k mod C.
        reduced: Keep only a few training images per client (default false).
        reduced_fraction: Share kept when reduced, in (0, 1] (default 0.05).
        reduced_min: At least this many kept when reduced (default 10, capped at the shard).
        image_size: Side in pixels (default 28, no resize).
        channels: 1 (default) or 3 (grey repeated).
        n_test: Test images of the base split, shared out over the clients (default 1,000).

    Returns:
        A 10-class ``"image"`` task, x float32 ``(n, channels, image_size, image_size)``,
        rows in client order.
    """
    return _load(
        "mnist_rotate",
        _rotate,
        lambda n: {"angles_deg": [360.0 * c / n for c in range(n)]},
        seed=seed,
        n_clients=n_clients,
        n_clusters=n_clusters,
        reduced=reduced,
        reduced_fraction=reduced_fraction,
        reduced_min=reduced_min,
        image_size=image_size,
        channels=channels,
        n_test=n_test,
    )


def load_mnist_label_shift(
    *,
    seed: int,
    n_clients: int,
    n_clusters: int = 4,
    reduced: bool = False,
    reduced_fraction: float = 0.05,
    reduced_min: int = 10,
    image_size: int = 28,
    channels: int = 1,
    n_test: int = 1000,
) -> TaskData:
    """MNIST with cluster c's labels shifted ``y -> (y + c) mod 10``, train and test; the
    options are those of :func:`load_mnist_rotate`."""
    return _load(
        "mnist_label_shift",
        _shift_labels,
        lambda n: {"label_shifts": list(range(n))},
        seed=seed,
        n_clients=n_clients,
        n_clusters=n_clusters,
        reduced=reduced,
        reduced_fraction=reduced_fraction,
        reduced_min=reduced_min,
        image_size=image_size,
        channels=channels,
        n_test=n_test,
    )
