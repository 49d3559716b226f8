"""Client selection: uniform (the paper), best-SNR and proportional-fair scheduling."""

from __future__ import annotations

import numpy as np
import pytest

from optim import select_clients, update_average_rate


def test_uniform_is_sorted_distinct_reproducible_and_uniform():
    idx = select_clients(np.random.default_rng(3), n_clients=100, n_scheduled=10)
    assert idx.dtype == np.int64 and idx.shape == (10,)
    assert np.all(np.diff(idx) > 0)
    again = select_clients(np.random.default_rng(3), n_clients=100, n_scheduled=10)
    np.testing.assert_array_equal(idx, again)
    rng = np.random.default_rng(0)
    counts = np.zeros(20)
    draws = 4000
    for _ in range(draws):
        counts[select_clients(rng, n_clients=20, n_scheduled=5)] += 1
    expected = draws * 5 / 20
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    assert chi2 < 45.3  # chi-square 19 dof, p = 0.999
    assert select_clients(rng, n_clients=7, n_scheduled=7).tolist() == list(range(7))


def test_best_snr_takes_the_strongest_and_breaks_ties_by_index():
    snr = np.array([1.0, 9.0, 3.0, 9.0, 0.0, 9.0])
    idx = select_clients(
        np.random.default_rng(0), n_clients=6, n_scheduled=2, method="best_snr", snr=snr
    )
    assert idx.tolist() == [1, 3]
    idx = select_clients(
        np.random.default_rng(0), n_clients=6, n_scheduled=4, method="best_snr", snr=snr
    )
    assert idx.tolist() == [1, 2, 3, 5]


def test_proportional_fair_metric_and_unserved_first():
    snr = np.array([15.0, 15.0, 3.0, 1.0])  # log2(1 + snr) = 4, 4, 2, 1
    avg = np.array([4.0, 1.0, 1.0, 0.0])  # metric 1, 4, 2, inf
    idx = select_clients(
        np.random.default_rng(0),
        n_clients=4,
        n_scheduled=2,
        method="proportional_fair",
        snr=snr,
        average_rate=avg,
    )
    assert idx.tolist() == [1, 3]
    idx = select_clients(
        np.random.default_rng(0),
        n_clients=4,
        n_scheduled=3,
        method="proportional_fair",
        snr=snr,
        average_rate=avg,
    )
    assert idx.tolist() == [1, 2, 3]


def test_proportional_fair_serves_everyone_over_time():
    rng = np.random.default_rng(5)
    n, k = 30, 3
    mean = np.linspace(0.5, 50, n)  # very unequal clients
    avg = np.zeros(n)
    served = np.zeros(n, dtype=int)
    for _ in range(600):
        snr = mean * rng.exponential(size=n)
        idx = select_clients(
            rng, n_clients=n, n_scheduled=k, method="proportional_fair", snr=snr, average_rate=avg
        )
        served[idx] += 1
        avg = update_average_rate(avg, scheduled=idx, served_rate=np.log2(1 + snr[idx]), beta=0.05)
    assert served.min() > 0.3 * 600 * k / n  # best-SNR would starve the weak clients


def test_update_average_rate_ewma():
    avg = update_average_rate(np.array([1.0, 2.0, 3.0]), scheduled=[2], served_rate=[5.0], beta=0.5)
    np.testing.assert_allclose(avg, [0.5, 1.0, 4.0])


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        (dict(n_scheduled=11, n_clients=10), "n_scheduled"),
        (dict(n_scheduled=0), "n_scheduled"),
        (dict(n_clients=0), "n_clients"),
        (dict(method="round_robin"), "method"),
        (dict(method="best_snr"), "snr"),
        (dict(method="best_snr", snr=np.ones(9)), "snr"),
        (dict(method="best_snr", snr=-np.ones(10)), "snr"),
        (dict(method="proportional_fair", snr=np.ones(10)), "average_rate"),
        (
            dict(method="proportional_fair", snr=np.ones(10), average_rate=-np.ones(10)),
            "average_rate",
        ),
    ],
)
def test_bad_arguments(kwargs, name):
    args = dict(n_clients=10, n_scheduled=3)
    args.update(kwargs)
    with pytest.raises(ValueError, match=name):
        select_clients(np.random.default_rng(0), **args)


def test_rng_must_be_a_generator():
    with pytest.raises(ValueError, match="rng"):
        select_clients(42, n_clients=10, n_scheduled=3)  # type: ignore[arg-type]
