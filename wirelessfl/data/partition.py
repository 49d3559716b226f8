"""Split a training set over federated clients: the partitioners and ``partition``.

``partition(name, labels, n_clients, seed=..., groups=..., **options) -> Partition``; the
names are ``wirelessfl.registries.PARTITIONERS``.

=============  ==========================================================================
``iid``        random permutation cut into ``n_clients`` near-equal parts
``shards``     McMahan et al. / the SOFT paper: sort by label, cut into ``n_shards``
               equal shards (default ``2 * n_clients``), deal ``n_shards / n_clients``
               random shards to each client
``dirichlet``  per class, proportions over clients drawn from ``Dir(alpha)`` (default
               ``alpha=0.5``); redrawn until every client has ``>= min_size`` samples
``by_key``     natural split: whole groups (``groups=``, e.g. movie ids) dealt so that
               client sizes are balanced; a group is never split
``by_client``  data built per client (``groups=`` the client id of every sample): client
               ``k`` gets exactly the samples with id ``k``; no draws
=============  ==========================================================================

Every partitioner is a pure function of ``(labels, n_clients, seed, options)``: the draws
come from the stream ``(seed, partitioner name)`` of ``channels.streams``. Add one by writing
``def my_split(labels, n_clients, rng, *, groups, **options) -> list[np.ndarray]`` plus one
line in ``PARTITIONERS`` (``wirelessfl/registries.py``).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass

import numpy as np

from channels.streams import stream_generator
from wirelessfl.errors import UserError
from wirelessfl.registries import PARTITIONERS

__all__ = [
    "Partition",
    "client_split",
    "dirichlet_split",
    "iid_split",
    "key_split",
    "partition",
    "shard_split",
]

#: Address word of the partition streams: ``stream_generator(seed, <partitioner>, 0x9A27)``.
_PARTITION_ADDRESS = 0x9A27


@dataclass
class Partition:
    """Client index sets into one training set.

    Attributes:
        indices: One sorted int64 array per client; pairwise disjoint.
        labels: The labels the partition was drawn from, int64 ``(n,)``.
        n_classes: Histogram width (``max(labels) + 1`` unless given).
    """

    indices: list[np.ndarray]
    labels: np.ndarray
    n_classes: int

    @property
    def n_clients(self) -> int:
        """Number of clients."""
        return len(self.indices)

    @property
    def sizes(self) -> np.ndarray:
        """Samples per client, int64 ``(n_clients,)``."""
        return np.array([len(i) for i in self.indices], dtype=np.int64)

    def label_histograms(self) -> np.ndarray:
        """Per-client label counts, int64 ``(n_clients, n_classes)``."""
        return np.stack(
            [np.bincount(self.labels[i], minlength=self.n_classes) for i in self.indices]
        ).astype(np.int64)


def _too_small(name: str, n_clients: int, what: str, have: int) -> UserError:
    return UserError(
        f"{name}: n_clients={n_clients} needs at least {n_clients} {what}, but the data set "
        f"has {have}"
    )


def iid_split(
    labels: np.ndarray, n_clients: int, rng: np.random.Generator, *, groups: np.ndarray | None
) -> list[np.ndarray]:
    """Uniformly random, sizes differ by at most one."""
    n = len(labels)
    if n < n_clients:
        raise _too_small("iid", n_clients, "samples", n)
    return list(np.array_split(rng.permutation(n), n_clients))


def shard_split(
    labels: np.ndarray,
    n_clients: int,
    rng: np.random.Generator,
    *,
    groups: np.ndarray | None,
    n_shards: int | None = None,
) -> list[np.ndarray]:
    """Sort by label (ties in random order), cut into ``n_shards`` contiguous shards of
    near-equal size, deal ``n_shards / n_clients`` random shards to each client.

    With class sizes that are multiples of the shard size, a client sees at most
    ``n_shards / n_clients`` labels (2 with the default ``n_shards = 2 * n_clients``).
    """
    n = len(labels)
    n_shards = 2 * n_clients if n_shards is None else int(n_shards)
    if n_shards < n_clients or n_shards % n_clients:
        raise UserError(
            f"shards: n_shards={n_shards} must be a positive multiple of n_clients={n_clients}"
        )
    if n < n_shards:
        raise UserError(
            f"shards: n_clients={n_clients} with n_shards={n_shards} needs at least "
            f"{n_shards} samples, but the data set has {n}"
        )
    shuffled = rng.permutation(n)
    order = shuffled[np.argsort(labels[shuffled], kind="stable")]
    shards = np.array_split(order, n_shards)
    dealt = rng.permutation(n_shards).reshape(n_clients, n_shards // n_clients)
    return [np.concatenate([shards[s] for s in row]) for row in dealt]


def dirichlet_split(
    labels: np.ndarray,
    n_clients: int,
    rng: np.random.Generator,
    *,
    groups: np.ndarray | None,
    alpha: float = 0.5,
    min_size: int = 1,
    max_draws: int = 1000,
) -> list[np.ndarray]:
    """Label-skewed split (Hsu et al. 2019): for each class ``c``, proportions
    ``p_c ~ Dir(alpha * 1_N)`` over the N clients; the class's samples (in random order) are
    cut at the cumulative proportions. Large ``alpha`` approaches IID, small ``alpha`` gives
    each client few classes.

    The whole draw is repeated (up to ``max_draws`` times, default 1,000) until every client
    has at least ``min_size`` samples (default 1, i.e. no empty client; raise it to keep a
    minimum local batch). If no draw qualifies, ``ValueError`` says to raise ``alpha`` or
    lower ``min_size`` / ``n_clients``.
    """
    n = len(labels)
    if not alpha > 0:
        raise UserError(f"dirichlet: alpha must be > 0, got {alpha}")
    if min_size < 1:
        raise UserError(f"dirichlet: min_size must be >= 1, got {min_size}")
    if n < n_clients * min_size:
        raise UserError(
            f"dirichlet: n_clients={n_clients} with min_size={min_size} needs at least "
            f"{n_clients * min_size} samples, but the data set has {n}"
        )
    classes = [rng.permutation(np.flatnonzero(labels == c)) for c in np.unique(labels)]
    for _ in range(max_draws):
        parts: list[list[np.ndarray]] = [[] for _ in range(n_clients)]
        for idx in classes:
            p = rng.dirichlet(np.full(n_clients, float(alpha)))
            cuts = (np.cumsum(p)[:-1] * len(idx)).astype(np.int64)
            for k, chunk in enumerate(np.split(idx, cuts)):
                parts[k].append(chunk)
        out = [np.concatenate(p) for p in parts]
        if min(len(o) for o in out) >= min_size:
            return out
    raise UserError(
        f"dirichlet: no draw in {max_draws} gave all n_clients={n_clients} at least "
        f"min_size={min_size} samples (n={n}, alpha={alpha}); raise alpha or lower min_size"
    )


def key_split(
    labels: np.ndarray, n_clients: int, rng: np.random.Generator, *, groups: np.ndarray | None
) -> list[np.ndarray]:
    """Natural split: whole groups go to clients, never split. Groups are dealt largest
    first (ties in random order) to the client with the fewest samples so far (ties to a
    random one of them), which keeps sizes balanced (greedy longest-processing-time rule).
    Needs ``groups=`` (one key per sample) and at least ``n_clients`` distinct keys.
    """
    if groups is None:
        raise UserError("by_key: needs groups= (one key per sample, e.g. TaskData.train_groups)")
    groups = np.asarray(groups)
    if len(groups) != len(labels):
        raise UserError(f"by_key: groups has {len(groups)} keys for {len(labels)} labels")
    keys, inverse, counts = np.unique(groups, return_inverse=True, return_counts=True)
    if len(keys) < n_clients:
        raise _too_small("by_key", n_clients, "distinct groups", len(keys))
    tie = rng.permutation(len(keys))
    order = np.lexsort((tie, -counts))  # largest first, random among equal sizes
    load = np.zeros(n_clients, dtype=np.int64)
    owner = np.empty(len(keys), dtype=np.int64)
    client_tie = rng.random(n_clients)
    for g in order:
        lightest = np.flatnonzero(load == load.min())
        k = lightest[np.argmin(client_tie[lightest])]
        owner[g] = k
        load[k] += counts[g]
        client_tie = rng.random(n_clients)
    sample_owner = owner[inverse]
    return [np.flatnonzero(sample_owner == k) for k in range(n_clients)]


def client_split(
    labels: np.ndarray, n_clients: int, rng: np.random.Generator, *, groups: np.ndarray | None
) -> list[np.ndarray]:
    """The split the data set was built with: ``groups`` holds the client id (``0 ..
    n_clients-1``) of every sample and client ``k`` gets the samples with id ``k``.
    """
    if groups is None:
        raise UserError("by_client: needs groups= (the client id of every sample)")
    groups = np.asarray(groups)
    if len(groups) != len(labels):
        raise UserError(f"by_client: groups has {len(groups)} ids for {len(labels)} labels")
    ids = np.unique(groups)
    if not np.array_equal(ids, np.arange(n_clients)):
        built = int(ids.max()) + 1 if ids.size else 0
        raise UserError(
            f"by_client: the data set was built for {built} clients ({len(ids)} with training "
            f"samples) but n_clients={n_clients}; build it with the same n_clients"
        )
    return [np.flatnonzero(groups == k) for k in range(n_clients)]


def partition(
    name: str,
    labels: np.ndarray,
    n_clients: int,
    *,
    seed: int,
    groups: np.ndarray | None = None,
    n_classes: int | None = None,
    **options,
) -> Partition:
    """Split the samples with ``labels`` over ``n_clients`` clients with partitioner ``name``.

    Args:
        name: A ``wirelessfl.registries.PARTITIONERS`` name.
        labels: Integer labels of the training set ``(n,)``.
        n_clients: Number of clients (>= 1).
        seed: Run seed (>= 0); the draw is a pure function of ``(seed, name, labels,
            options)``.
        groups: Natural keys or client ids ``(n,)`` (``by_key``, ``by_client``; ignored
            otherwise).
        n_classes: Histogram width (default ``max(labels) + 1``).
        **options: Partitioner options (``n_shards``; ``alpha``, ``min_size``, ``max_draws``).

    Returns:
        The client index sets.

    Raises:
        UserError: One line for an unknown name or option, and when the data set is too
            small for ``n_clients`` (fewer samples / groups than clients, or an empty client).
    """
    if name not in PARTITIONERS:
        raise UserError(str(PARTITIONERS.unknown(name)))
    fn = PARTITIONERS.load(name)
    accepted = [
        p
        for p in inspect.signature(fn).parameters
        if p not in ("labels", "n_clients", "rng", "groups")
    ]
    for key in options:
        if key not in accepted:
            raise UserError(
                f"unknown option {key!r} for partitioner {name!r}; accepted: "
                f"{', '.join(accepted) or '(none)'}"
            )
    n_clients = int(n_clients)
    if n_clients < 1:
        raise UserError(f"n_clients must be >= 1, got {n_clients}")
    labels = np.asarray(labels).astype(np.int64, copy=False)
    if labels.ndim != 1:
        raise UserError(f"labels must be 1-D, got shape {labels.shape}")
    if labels.size and labels.min() < 0:
        raise UserError("labels must be non-negative integers")
    rng = stream_generator(seed, name, _PARTITION_ADDRESS)
    parts = fn(labels, n_clients, rng, groups=groups, **options)
    indices = [np.sort(np.asarray(p, dtype=np.int64)) for p in parts]
    empty = [k for k, p in enumerate(indices) if len(p) == 0]
    if empty:
        raise UserError(
            f"{name}: n_clients={n_clients} leaves {len(empty)} client(s) empty with "
            f"{len(labels)} samples; use fewer clients or more data"
        )
    width = int(n_classes) if n_classes is not None else int(labels.max(initial=-1)) + 1
    return Partition(indices=indices, labels=labels, n_classes=width)
