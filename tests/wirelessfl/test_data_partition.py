"""Partitioners: disjoint, complete, seeded, label skew as advertised, clear too-small errors."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

pytest.importorskip("torch")

from wirelessfl.data.partition import PARTITIONERS, partition  # noqa: E402

pytestmark = pytest.mark.train


def _balanced_labels(n_classes=10, per_class=50, shuffle_seed=None):
    labels = np.repeat(np.arange(n_classes), per_class)
    if shuffle_seed is not None:
        labels = np.random.default_rng(shuffle_seed).permutation(labels)
    return labels


def _check_disjoint_complete(p, n):
    allidx = np.concatenate(p.indices)
    assert len(allidx) == len(np.unique(allidx)), "clients overlap"
    assert set(allidx.tolist()) == set(range(n)), "some samples unassigned"
    assert p.sizes.sum() == n
    assert (p.sizes > 0).all()
    assert p.label_histograms().sum() == n


@pytest.mark.parametrize(
    "name,opts", [("iid", {}), ("shards", {}), ("dirichlet", {"alpha": 0.5}), ("by_key", {})]
)
def test_disjoint_complete_and_seeded(name, opts):
    labels = _balanced_labels(shuffle_seed=1)
    groups = np.arange(len(labels)) // 7
    p = partition(name, labels, 10, seed=3, groups=groups, **opts)
    assert p.n_clients == 10
    _check_disjoint_complete(p, len(labels))
    assert p.label_histograms().shape == (10, 10)
    again = partition(name, labels, 10, seed=3, groups=groups, **opts)
    assert all(np.array_equal(a, b) for a, b in zip(p.indices, again.indices, strict=True))
    other = partition(name, labels, 10, seed=4, groups=groups, **opts)
    assert not all(np.array_equal(a, b) for a, b in zip(p.indices, other.indices, strict=True))


def test_registry_names():
    assert set(PARTITIONERS) == {"iid", "shards", "dirichlet", "by_key", "by_client"}


def test_iid_sizes_and_histograms():
    labels = _balanced_labels(shuffle_seed=0)
    p = partition("iid", labels, 7, seed=0)
    assert p.sizes.max() - p.sizes.min() <= 1


def test_iid_is_one_permutation_of_the_partition_stream():
    # the stream: channels.streams.seed_sequence(seed, name, 0x9A27), spelled out
    labels = _balanced_labels()
    order = np.random.default_rng([5, zlib.crc32(b"iid"), 0x9A27]).permutation(len(labels))
    expected = [np.sort(part) for part in np.array_split(order, 4)]
    p = partition("iid", labels, 4, seed=5)
    assert all(np.array_equal(a, b) for a, b in zip(p.indices, expected, strict=True))


@pytest.mark.parametrize("shuffle_seed", [None, 5])
def test_shards_at_most_shards_per_client_labels(shuffle_seed):
    labels = _balanced_labels(10, 50, shuffle_seed)  # 500 samples, 20 shards of 25
    p = partition("shards", labels, 10, seed=0)
    _check_disjoint_complete(p, 500)
    labels_per_client = (p.label_histograms() > 0).sum(axis=1)
    assert (labels_per_client <= 2).all()
    assert (p.sizes == 50).all()
    p4 = partition("shards", labels, 5, seed=0, n_shards=20)  # 4 shards per client
    assert ((p4.label_histograms() > 0).sum(axis=1) <= 4).all()


def test_shards_must_be_multiple_of_clients():
    with pytest.raises(ValueError, match="n_shards=15.*n_clients=10"):
        partition("shards", _balanced_labels(), 10, seed=0, n_shards=15)


def test_dirichlet_large_alpha_is_near_iid_small_alpha_is_concentrated():
    labels = _balanced_labels(10, 300, shuffle_seed=2)
    global_frac = np.bincount(labels) / len(labels)
    near_iid = partition("dirichlet", labels, 10, seed=0, alpha=1e4)
    h = near_iid.label_histograms()
    frac = h / h.sum(axis=1, keepdims=True)
    assert np.abs(frac - global_frac).max() < 0.05
    assert near_iid.sizes.min() > 0.8 * len(labels) / 10

    skewed = partition("dirichlet", labels, 10, seed=0, alpha=0.05)
    h = skewed.label_histograms()
    top = h.max(axis=1) / h.sum(axis=1)
    assert top.mean() > 0.6
    assert (skewed.sizes >= 1).all()


def test_dirichlet_min_size_is_guaranteed():
    labels = _balanced_labels(10, 30, shuffle_seed=0)
    p = partition("dirichlet", labels, 10, seed=1, alpha=0.3, min_size=10)
    assert p.sizes.min() >= 10


def test_by_key_never_splits_a_group_and_balances():
    rng = np.random.default_rng(0)
    groups = rng.integers(0, 100, size=3000)
    labels = rng.integers(0, 2, size=3000)
    p = partition("by_key", labels, 8, seed=0, groups=groups)
    _check_disjoint_complete(p, 3000)
    owner = {}
    for k, idx in enumerate(p.indices):
        for g in np.unique(groups[idx]):
            assert owner.setdefault(int(g), k) == k, f"group {g} split"
    assert p.sizes.max() <= 1.2 * p.sizes.min()


def test_by_key_needs_groups():
    with pytest.raises(ValueError, match="groups="):
        partition("by_key", _balanced_labels(), 3, seed=0)


@pytest.mark.parametrize(
    "name,n,opts,pattern",
    [
        ("iid", 3, {}, r"n_clients=5 .*has 3"),
        ("shards", 6, {}, r"n_clients=5 .*n_shards=10.*has 6"),
        ("dirichlet", 4, {"alpha": 1.0}, r"n_clients=5 .*has 4"),
        ("by_key", 9, {}, r"n_clients=5 .*3 distinct groups|n_clients=5 .*has 3"),
    ],
)
def test_too_small_raises_one_clear_line(name, n, opts, pattern):
    labels = np.arange(n) % 2
    groups = np.arange(n) % 3
    with pytest.raises(ValueError, match=pattern) as err:
        partition(name, labels, 5, seed=0, groups=groups, **opts)
    assert "\n" not in str(err.value)


def test_unknown_name_and_option():
    with pytest.raises(ValueError, match="unknown partitioner 'nope'.*iid"):
        partition("nope", np.zeros(4, dtype=int), 2, seed=0)
    with pytest.raises(ValueError, match="unknown option 'beta'.*alpha"):
        partition("dirichlet", np.zeros(4, dtype=int), 2, seed=0, beta=1.0)
