"""Offline data sets: shapes, splits, label counts, natural groups; ArrayDataset batching."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from wirelessfl.data import DATASETS, ArrayDataset, load_dataset, partition  # noqa: E402

pytestmark = pytest.mark.train


@pytest.fixture(scope="module")
def rotten():
    return load_dataset("rotten_tomatoes", seed=0)


def test_registry_and_unknown_name():
    assert {"digits", "mnist5k", "rotten_tomatoes", "chatterbot_topic"} <= set(DATASETS)
    with pytest.raises(ValueError, match="unknown dataset 'cifar10'.*digits.*mnist5k") as err:
        load_dataset("cifar10")
    assert "\n" not in str(err.value) and str(err.value).endswith(", hub:<name-or-path>")


def test_registered_loader_gets_the_common_options():
    from wirelessfl.data import TaskData

    def load_ramp(*, seed, n=10):
        ramp = ArrayDataset(torch.arange(n, dtype=torch.float32)[:, None], torch.arange(n) % 2)
        return TaskData(ramp, ramp.subset([0, 1]), n_classes=2, kind="image", name="ramp")

    DATASETS.register("test_ramp", load_ramp)
    try:
        d = load_dataset("test_ramp", seed=0, n=20, max_train=5)
        assert len(d.train) == 5 and len(d.test) == 2
        with pytest.raises(ValueError, match="unknown option 'm'.*n, max_train, max_test"):
            load_dataset("test_ramp", m=3)
    finally:
        DATASETS.unregister("test_ramp")


def test_unknown_option_is_one_line():
    with pytest.raises(ValueError, match="unknown option 'imagesize'.*image_size"):
        load_dataset("mnist5k", imagesize=32)


def test_digits_shapes_split_and_range():
    d = load_dataset("digits", seed=0)
    assert d.kind == "image" and d.n_classes == 10 and d.name == "digits"
    assert d.train.x.shape[1:] == (1, 8, 8) and d.train.x.dtype == torch.float32
    assert len(d.train) + len(d.test) == 1797
    assert abs(len(d.test) / 1797 - 0.2) < 0.01
    assert float(d.train.x.min()) >= 0.0 and float(d.train.x.max()) <= 1.0
    assert d.train.y.dtype == torch.int64
    # stratified: every class in both splits, in proportion
    assert (np.bincount(d.test.labels, minlength=10) >= 30).all()
    same = load_dataset("digits", seed=0)
    assert torch.equal(same.test.y, d.test.y) and torch.equal(same.test.x, d.test.x)
    other = load_dataset("digits", seed=1)
    assert not torch.equal(other.test.x, d.test.x)


def test_mnist5k_balance_shapes_and_normalisation():
    d = load_dataset("mnist5k", seed=0)
    assert d.train.x.shape == (4000, 3, 32, 32) and d.test.x.shape == (1000, 3, 32, 32)
    all_labels = np.concatenate([d.train.labels, d.test.labels])
    assert (np.bincount(all_labels) == 500).all()  # 500 per class before the split
    assert (np.bincount(d.train.labels) == 400).all()
    assert (np.bincount(d.test.labels) == 100).all()
    # EfficientNet-Lite normalisation (x - 127) / 128 of 0..255 pixels
    assert -1.0 <= float(d.train.x.min()) < -0.98 and 0.99 < float(d.train.x.max()) <= 1.0
    assert torch.equal(d.train.x[:, 0], d.train.x[:, 2])  # grey repeated to 3 channels
    small = load_dataset("mnist5k", seed=0, image_size=28, channels=1, max_train=100, max_test=50)
    assert small.train.x.shape == (100, 1, 28, 28) and len(small.test) == 50


def test_rotten_tomatoes_labels_and_movie_split(rotten):
    d = rotten
    assert d.kind == "text" and d.n_classes == 2 and d.class_names == ["rotten", "fresh"]
    y = np.concatenate([d.train.labels, d.test.labels])
    assert int((y == 1).sum()) == 7403 and int((y == 0).sum()) == 5405
    assert d.train.x.shape == (len(d.train), 64) and d.train.x.dtype == torch.int64
    assert d.train.attention_mask.shape == d.train.x.shape
    assert set(d.train_groups.tolist()).isdisjoint(d.test_groups.tolist())
    names = d.info["movie_names"]
    assert len(names) == 508
    train_movies = {names[g] for g in d.train_groups}
    test_movies = {names[g] for g in d.test_groups}
    assert not train_movies & test_movies
    assert len(test_movies) == round(0.2 * 508)
    # the split stream: channels.streams.seed_sequence(seed, name, 0xDA7A), spelled out
    stream = np.random.default_rng([0, zlib.crc32(b"rotten_tomatoes"), 0xDA7A])
    assert set(d.test_groups.tolist()) == set(stream.permutation(508)[:102].tolist())
    # [CLS] first, padding masked
    assert (d.train.x[:, 0] == 101).all()
    assert ((d.train.attention_mask == 0) == (d.train.x == 0)).all()


def test_rotten_tomatoes_by_key_partition(rotten):
    p = partition("by_key", rotten.train.labels, 20, seed=0, groups=rotten.train_groups)
    assert p.sizes.sum() == len(rotten.train)
    for idx in p.indices:
        assert len(idx) > 0
    owners = {}
    for k, idx in enumerate(p.indices):
        for g in np.unique(rotten.train_groups[idx]):
            assert owners.setdefault(int(g), k) == k


def test_chatterbot_topic():
    d = load_dataset("chatterbot_topic", seed=0, max_length=32)
    assert d.kind == "text" and d.n_classes == 21 and len(d.class_names) == 21
    assert len(d.train) + len(d.test) == 2026
    assert d.train.x.shape[1] == 32
    assert "tech_support" in d.class_names


def test_array_dataset_subset_and_batches():
    ds = ArrayDataset(torch.arange(10, dtype=torch.float32).reshape(10, 1), torch.arange(10) % 3)
    sub = ds.subset([3, 1, 4])
    assert sub.x.flatten().tolist() == [3.0, 1.0, 4.0] and len(sub) == 3
    seen = torch.cat([b["y"] for b in ds.batches(4, np.random.default_rng(0))])
    assert sorted(seen.tolist()) == sorted(ds.y.tolist())
    order1 = [b["x"].flatten().tolist() for b in ds.batches(4, torch.Generator().manual_seed(1))]
    order2 = [b["x"].flatten().tolist() for b in ds.batches(4, torch.Generator().manual_seed(1))]
    assert order1 == order2 and [len(o) for o in order1] == [4, 4, 2]
    assert len(list(ds.batches(4, np.random.default_rng(0), drop_last=True))) == 2
    plain = [b["x"].flatten().tolist() for b in ds.batches(5, shuffle=False)]
    assert plain[0] == [0.0, 1.0, 2.0, 3.0, 4.0]
    with pytest.raises(ValueError, match="generator"):
        next(ds.batches(4))
    text = ArrayDataset(
        torch.ones(4, 6, dtype=torch.int64),
        torch.zeros(4, dtype=torch.int64),
        torch.ones(4, 6, dtype=torch.int64),
    )
    batch = next(text.batches(2, shuffle=False))
    assert set(batch) == {"x", "y", "attention_mask"} and batch["y"].dtype == torch.int64
