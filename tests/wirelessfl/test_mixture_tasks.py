"""FLoRAL tasks: synthetic regressions match their ground truth (eqs. (43), (44)), concept-shift
MNIST clients get their cluster's transform, rows are per client, ``by_client`` splits them."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from wirelessfl.data import ArrayDataset, load_dataset, partition  # noqa: E402
from wirelessfl.data.concept_shift import _grid_rotate, rotate_images  # noqa: E402
from wirelessfl.data.mnist5k import load_mnist5k  # noqa: E402
from wirelessfl.data.preprocess import normalise_pixels  # noqa: E402
from wirelessfl.data.splits import split_generator  # noqa: E402
from wirelessfl.errors import UserError  # noqa: E402

pytestmark = pytest.mark.train

BLACK = float(normalise_pixels(torch.tensor(0.0)))


def _truth(name, seed, d_out, d_x, n_clusters, rank, alpha):
    """Independent redraw of W_c = W + alpha U_c V_c^T and b, in the documented order."""
    rng = split_generator(seed, name)
    w = rng.standard_normal((d_out, d_x)) / math.sqrt(d_x)
    b = rng.standard_normal(d_out) / math.sqrt(d_x)
    u = rng.standard_normal((n_clusters, d_out, rank)) / math.sqrt(d_x)
    v = rng.standard_normal((n_clusters, d_x, rank)) / math.sqrt(rank)
    w_c = np.stack([w + alpha * u[c] @ v[c].T for c in range(n_clusters)])
    return rng, w_c, b


def _rows(ds, groups, k):
    return ds.x[torch.as_tensor(groups == k)], ds.y[torch.as_tensor(groups == k)]


def _check_client_rows(data, n_clients, n_clusters):
    assert data.client_clusters.dtype == np.int64
    assert np.array_equal(data.client_clusters, np.arange(n_clients) % n_clusters)
    for groups in (data.train_groups, data.test_groups):
        assert np.all(np.diff(groups) >= 0), "rows are not in client order"
        assert np.array_equal(np.unique(groups), np.arange(n_clients))


# ---------------------------------------------------------------- containers and load_dataset


def test_array_dataset_float_targets_and_one_label_class():
    ds = ArrayDataset(torch.randn(5, 3), torch.randn(5, dtype=torch.float64))
    assert ds.y.dtype == torch.float32 and ds.y.shape == (5, 1)
    assert ds.labels.dtype == np.int64 and np.array_equal(ds.labels, np.zeros(5))
    assert ds.subset([4, 0]).y.shape == (2, 1)
    ints = ArrayDataset(torch.randn(3, 2), torch.tensor([2, 0, 1], dtype=torch.int32))
    assert ints.y.dtype == torch.int64 and np.array_equal(ints.labels, [2, 0, 1])
    with pytest.raises(UserError, match="float y must be"):
        ArrayDataset(torch.randn(2, 3), torch.randn(2, 1, 1))


def test_load_dataset_passes_n_clients_and_keeps_it_out_of_the_options():
    data = load_dataset("synthetic_linear", seed=0, n_clients=6)
    assert data.info["n_clients"] == 6 and len(data.client_clusters) == 6
    with pytest.raises(UserError, match="^dataset synthetic_linear needs n_clients$"):
        load_dataset("synthetic_linear", seed=0)
    with pytest.raises(UserError, match="unknown option 'clients'") as err:
        load_dataset("synthetic_linear", seed=0, n_clients=6, clients=3)
    accepted = str(err.value).split("accepted: ")[1].split(", ")
    assert "n_clients" not in accepted and "seed" not in accepted and "rank" in accepted


def test_max_train_keeps_client_ids_aligned():
    full = load_dataset("synthetic_linear", seed=1, n_clients=4, samples_per_client=50)
    small = load_dataset(
        "synthetic_linear", seed=1, n_clients=4, samples_per_client=50, max_train=60, max_test=9
    )
    assert len(small.train) == len(small.train_groups) == 60 and len(small.test_groups) == 9
    owner = {
        row.numpy().tobytes(): int(g)
        for row, g in zip(full.train.x, full.train_groups, strict=True)
    }
    assert [owner[r.numpy().tobytes()] for r in small.train.x] == small.train_groups.tolist()


# ---------------------------------------------------------------- synthetic regressions


def test_synthetic_linear_layout_and_targets_match_ground_truth():
    data = load_dataset("synthetic_linear", seed=3, n_clients=5, rank=2, alpha=1.5)
    assert data.kind == "regression" and data.n_classes == 1
    assert data.train.x.shape == (30, 10) and data.train.y.shape == (30, 3)
    assert data.test.x.shape == (10, 10) and data.test.y.dtype == torch.float32
    assert np.bincount(data.train_groups).tolist() == [6] * 5
    assert np.bincount(data.test_groups).tolist() == [2] * 5
    _check_client_rows(data, 5, 2)
    assert data.info["alphas"] == [1.5, 1.5] and data.info["rank"] == 2
    # client 3 (cluster 1) recomputed from an independent redraw
    rng, w_c, b = _truth("synthetic_linear", 3, 10, 10, 2, 2, 1.5)
    xs = [rng.standard_normal((8, 10)) for _ in range(5)]
    y3 = (xs[3] @ w_c[1].T + b)[:, :3]
    x_tr, y_tr = _rows(data.train, data.train_groups, 3)
    x_te, y_te = _rows(data.test, data.test_groups, 3)
    np.testing.assert_allclose(x_tr.numpy(), xs[3][:6], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(x_te.numpy(), xs[3][6:], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(y_tr.numpy(), y3[:6], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(y_te.numpy(), y3[6:], rtol=1e-5, atol=1e-5)


def test_synthetic_linear_least_squares_recovers_each_cluster():
    data = load_dataset("synthetic_linear", seed=0, n_clients=4, samples_per_client=100)
    _, w_c, b = _truth("synthetic_linear", 0, 10, 10, 2, 1, 2.0)
    fits = []
    for c in (0, 1):
        rows = np.isin(data.train_groups, np.flatnonzero(data.client_clusters == c))
        x = data.train.x.numpy()[rows].astype(np.float64)
        y = data.train.y.numpy()[rows].astype(np.float64)
        coef, *_ = np.linalg.lstsq(np.c_[x, np.ones(len(x))], y, rcond=None)  # (d_x + 1, d_y)
        np.testing.assert_allclose(coef[:-1].T, w_c[c][:3], atol=1e-4)
        np.testing.assert_allclose(coef[-1], b[:3], atol=1e-4)
        fits.append(coef[:-1].T)
    assert np.abs(fits[0] - fits[1]).max() > 0.1, "the clusters should differ"


def test_synthetic_mlp_targets_match_ground_truth():
    data = load_dataset("synthetic_mlp", seed=2, n_clients=6)
    assert data.train.y.shape == (6 * 96, 1) and data.test.y.shape == (6 * 24, 1)
    _check_client_rows(data, 6, 4)
    rng, w_c, b = _truth("synthetic_mlp", 2, 10, 10, 4, 1, 2.0)
    phi = rng.standard_normal((1, 10)) / math.sqrt(10)
    xs = [rng.standard_normal((120, 10)) for _ in range(6)]
    y5 = np.maximum(xs[5] @ w_c[1].T + b, 0.0) @ phi.T  # client 5 is in cluster 1
    x_tr, y_tr = _rows(data.train, data.train_groups, 5)
    np.testing.assert_allclose(x_tr.numpy(), xs[5][:96], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(y_tr.numpy(), y5[:96], rtol=1e-5, atol=1e-5)
    assert load_dataset("synthetic_mlp", seed=2, n_clients=6).train.y.equal(data.train.y)


@pytest.mark.parametrize(
    "options,message",
    [
        ({"n_clients": 1}, "n_clients must be >= n_clusters=2, got 1"),
        ({"n_clients": 4, "rank": 11}, "rank must be in 1..10, got 11"),
        ({"n_clients": 4, "rank": 0}, "rank must be an integer >= 1, got 0"),
        ({"n_clients": 4, "d_y": 11}, "d_y must be in 1..d_x=10, got 11"),
        ({"n_clients": 4, "n_clusters": 0}, "n_clusters must be an integer >= 1"),
        ({"n_clients": 4, "samples_per_client": 2}, "leaves 2 train / 0 test rows"),
        ({"n_clients": 4, "test_fraction": 1.0}, "test_fraction must be in"),
        ({"n_clients": 4, "alpha": float("inf")}, "alpha must be a finite number"),
    ],
)
def test_synthetic_options_fail_with_one_line(options, message):
    with pytest.raises(UserError, match=message) as err:
        load_dataset("synthetic_linear", seed=0, **options)
    assert "\n" not in str(err.value)


# ---------------------------------------------------------------- by_client


def test_by_client_partition_gives_each_client_its_rows():
    data = load_dataset("synthetic_mlp", seed=0, n_clients=5, samples_per_client=10)
    p = partition("by_client", data.train.labels, 5, seed=0, groups=data.train_groups)
    for k, idx in enumerate(p.indices):
        assert np.array_equal(idx, np.flatnonzero(data.train_groups == k))
    with pytest.raises(UserError, match=r"built for 5 clients \(5 with .*n_clients=6"):
        partition("by_client", data.train.labels, 6, seed=0, groups=data.train_groups)
    with pytest.raises(UserError, match=r"built for 5 clients .*n_clients=4"):
        partition("by_client", data.train.labels, 4, seed=0, groups=data.train_groups)
    with pytest.raises(UserError, match="by_client: needs groups="):
        partition("by_client", data.train.labels, 5, seed=0)


# ---------------------------------------------------------------- concept-shift MNIST


@pytest.fixture(scope="module")
def mnist():
    base = load_mnist5k(seed=0, image_size=28, channels=1)
    return {
        "base": base,
        "rotate": load_dataset("mnist_rotate", seed=0, n_clients=8),
        "shift": load_dataset("mnist_label_shift", seed=0, n_clients=8),
    }


def _shards(name, n_train, n_test, n_clients):
    rng = split_generator(0, name)
    train = [np.sort(s) for s in np.array_split(rng.permutation(n_train), n_clients)]
    test = [np.sort(s) for s in np.array_split(rng.permutation(n_test), n_clients)]
    return train, test


def test_rotate_clients_get_their_cluster_rotation(mnist):
    base, data = mnist["base"], mnist["rotate"]
    assert data.kind == "image" and data.n_classes == 10 and data.train.x.shape[1:] == (1, 28, 28)
    assert data.info["angles_deg"] == [0.0, 90.0, 180.0, 270.0]
    _check_client_rows(data, 8, 4)
    assert np.bincount(data.train_groups).tolist() == [500] * 8
    train, test = _shards("mnist_rotate", 4000, 1000, 8)
    for k, c in ((0, 0), (5, 1), (6, 2)):  # client k in cluster k mod 4
        mine = base.train.x[train[k]]
        by_hand = [mine, mine.transpose(-1, -2).flip(-2), mine.flip(-1, -2)][c]  # 0, 90, 180 ccw
        x, y = _rows(data.train, data.train_groups, k)
        assert torch.equal(x, by_hand) and torch.equal(y, base.train.y[train[k]])
    x_te, _ = _rows(data.test, data.test_groups, 1)
    assert torch.equal(x_te, base.test.x[test[1]].transpose(-1, -2).flip(-2))


def test_label_shift_maps_labels_and_keeps_images(mnist):
    base, data = mnist["base"], mnist["shift"]
    _check_client_rows(data, 8, 4)
    train, test = _shards("mnist_label_shift", 4000, 1000, 8)
    for k in range(8):
        x, y = _rows(data.train, data.train_groups, k)
        assert torch.equal(x, base.train.x[train[k]])
        assert torch.equal(y, (base.train.y[train[k]] + k % 4) % 10)
    _, y_te = _rows(data.test, data.test_groups, 7)
    assert torch.equal(y_te, (base.test.y[test[7]] + 3) % 10)
    # every base image exactly once: clients are disjoint and cover the split
    rows = {r.numpy().tobytes() for r in data.train.x}
    assert rows == {r.numpy().tobytes() for r in base.train.x} and len(data.train) == 4000


@pytest.mark.parametrize("n_clients,expected", [(8, 25), (40, 10)])
def test_reduced_keeps_max_of_minimum_and_fraction(mnist, n_clients, expected):
    # n_k = 4000 / n_clients: round(0.05 * 500) = 25; round(0.05 * 100) = 5 -> reduced_min 10
    data = load_dataset("mnist_label_shift", seed=0, n_clients=n_clients, reduced=True)
    n_k = 4000 // n_clients
    assert expected == max(10, round(0.05 * n_k))
    assert np.bincount(data.train_groups).tolist() == [expected] * n_clients
    assert np.bincount(data.test_groups).tolist() == [1000 // n_clients] * n_clients
    if n_clients == 8:  # each client keeps a subset of its own full shard
        full = mnist["shift"]
        for k in (0, 7):
            kept = {r.numpy().tobytes() for r in _rows(data.train, data.train_groups, k)[0]}
            mine = {r.numpy().tobytes() for r in _rows(full.train, full.train_groups, k)[0]}
            assert kept <= mine


def test_grid_rotation_agrees_with_rot90_and_fills_black():
    x = torch.randn(3, 2, 12, 12)
    torch.testing.assert_close(_grid_rotate(x, 90.0), torch.rot90(x, 1, dims=(-2, -1)))
    assert torch.equal(rotate_images(x, 270.0), torch.rot90(x, -1, dims=(-2, -1)))
    white = torch.ones(1, 1, 12, 12)
    tilted = rotate_images(white, 45.0)
    assert tilted[0, 0, 0, 0].item() == pytest.approx(BLACK)  # corner outside: black
    assert tilted[0, 0, 6, 6].item() == pytest.approx(1.0)  # centre kept


@pytest.mark.parametrize(
    "options,message",
    [
        ({"n_clients": 3}, "n_clients must be >= n_clusters=4, got 3"),
        ({"n_clients": 4, "reduced_fraction": 0.0}, r"reduced_fraction must be in \(0, 1\]"),
        ({"n_clients": 4, "reduced_min": 0}, "reduced_min must be an integer >= 1"),
        ({"n_clients": 4, "reduced": "yes"}, "reduced must be true or false"),
        ({"n_clients": 2000}, "needs at least 2000 test images, got 1000"),
    ],
)
def test_mnist_options_fail_with_one_line(options, message):
    with pytest.raises(UserError, match=message):
        load_dataset("mnist_rotate", seed=0, **options)
