"""gamma^t of Theorem 1 (eq. 14) against a hand-written evaluation of the printed formula."""

from __future__ import annotations

import math

import numpy as np
import pytest

from optim import BoundConstants, bound_terms, convergence_bound
from optim.bound import bound_offset, scalar_bound_parts, sparsification_coefficient


def _gamma_by_hand(r, o, k, n, S, H, W, phi, G, eta, E, r_max):  # noqa: N803
    """Eq. (14) summand typed straight from the paper, term by term."""
    t1 = 2 * S**2 * H * (r_max - r) * W**2
    t2 = 4 * S**2 * phi * r * W**2
    t3 = eta * S * E**2 * G**2
    t4 = 0.0 if k == n else 8 * (n - k) / (k * (n - 1)) * eta**2 * S**2 * E**2 * G**2
    t5 = 4 * n * (1 - o) ** 2 / (k * o**4) * r * S**2 * W**4
    t6 = E * (E - 1) * (2 * E - 1) * S**2 * eta**2 / 6 * G**2
    return t1 + t2 + t3 + t4 + t5 + t6


CASES = [
    dict(S=1.0, H=1.0, W=1.0, phi=0.1, G=1.0, eta=1e-3, E=5, r_max=64),
    dict(S=2.5, H=0.3, W=0.7, phi=0.02, G=3.0, eta=0.05, E=3, r_max=16),
    dict(S=0.1, H=4.0, W=1.9, phi=1.5, G=0.2, eta=0.5, E=1, r_max=8),
]


@pytest.mark.parametrize("consts", CASES)
def test_bound_matches_printed_formula(consts):
    c = BoundConstants(**consts)
    for r, o, k, n in [(1, 1.0, 1, 1), (3, 0.5, 10, 100), (c.r_max, 0.05, 7, 7), (2, 0.9, 1, 50)]:
        got = convergence_bound(rank=r, sparsification=o, n_scheduled=k, n_clients=n, constants=c)
        want = _gamma_by_hand(r, o, k, n, **consts)
        assert isinstance(got, float)
        assert got == pytest.approx(want, rel=1e-13)


def test_terms_sum_and_named_fields():
    c = BoundConstants(**CASES[1])
    t = bound_terms(rank=4, sparsification=0.3, n_scheduled=5, n_clients=40, constants=c)
    d = t.as_dict()
    assert set(d) == {
        "rank_gap",
        "covariance",
        "local_sgd",
        "sampling",
        "sparsification",
        "local_drift",
        "total",
    }
    assert d["total"] == pytest.approx(sum(v for k, v in d.items() if k != "total"), rel=1e-14)
    assert t.rank_gap == pytest.approx(2 * 2.5**2 * 0.3 * (16 - 4) * 0.7**2)
    assert t.sampling == pytest.approx(8 * 35 / (5 * 39) * 0.05**2 * 2.5**2 * 9 * 9.0)


def test_vectorised_matches_scalar_loop():
    c = BoundConstants()
    ranks = np.arange(1, 65)
    o = np.linspace(0.05, 1.0, 64)
    vec = convergence_bound(
        rank=ranks, sparsification=o, n_scheduled=10, n_clients=100, constants=c
    )
    loop = [
        convergence_bound(
            rank=int(r), sparsification=float(x), n_scheduled=10, n_clients=100, constants=c
        )
        for r, x in zip(ranks, o, strict=True)
    ]
    np.testing.assert_allclose(vec, loop, rtol=1e-14)
    grid = convergence_bound(
        rank=ranks[:, None], sparsification=o[None, :], n_scheduled=10, n_clients=100, constants=c
    )
    assert grid.shape == (64, 64)


def test_full_participation_and_single_client_have_no_sampling_term():
    c = BoundConstants()
    for n in (1, 5):
        t = bound_terms(rank=2, sparsification=0.5, n_scheduled=n, n_clients=n, constants=c)
        assert t.sampling == 0.0
        assert math.isfinite(t.total)


def test_bound_decreases_in_sparsification_ratio():
    c = BoundConstants()
    o = np.linspace(0.01, 1.0, 500)
    g = convergence_bound(rank=8, sparsification=o, n_scheduled=10, n_clients=100, constants=c)
    assert np.all(np.diff(g) < 0)


def test_offset_and_coefficient_split():
    c = BoundConstants(**CASES[1])
    for r in (1, 7, 16):
        off = bound_offset(rank=r, n_scheduled=3, n_clients=30, constants=c)
        a = sparsification_coefficient(rank=r, n_scheduled=3, n_clients=30, constants=c)
        off2, a2 = scalar_bound_parts(rank=r, n_scheduled=3, n_clients=30, constants=c)
        assert off2 == pytest.approx(off, rel=1e-14) and a2 == pytest.approx(a, rel=1e-14)
        for o in (0.1, 0.6, 1.0):
            g = convergence_bound(
                rank=r, sparsification=o, n_scheduled=3, n_clients=30, constants=c
            )
            assert g == pytest.approx(off + a * (1 - o) ** 2 / o**4, rel=1e-13)


def test_constants_defaults_and_dict():
    c = BoundConstants()
    assert c.to_dict() == dict(S=1.0, H=1.0, W=1.0, phi=0.1, G=1.0, eta=1e-3, E=5, r_max=64)
    with pytest.raises(AttributeError):
        c.S = 2.0  # type: ignore[misc]


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        (dict(S=-1.0), "S"),
        (dict(H=-0.1), "H"),
        (dict(W=float("nan")), "W"),
        (dict(phi=-1e-9), "phi"),
        (dict(G=float("inf")), "G"),
        (dict(eta=0.0), "eta"),
        (dict(E=0), "E"),
        (dict(E=2.5), "E"),
        (dict(r_max=0), "r_max"),
    ],
)
def test_constants_reject_bad_values(kwargs, name):
    with pytest.raises(ValueError, match=name):
        BoundConstants(**kwargs)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        (dict(rank=0), "rank"),
        (dict(rank=65), "rank"),
        (dict(rank=2.5), "rank"),
        (dict(sparsification=0.0), "sparsification"),
        (dict(sparsification=1.2), "sparsification"),
        (dict(n_scheduled=101), "n_scheduled"),
        (dict(n_scheduled=0), "n_scheduled"),
        (dict(n_clients=0), "n_clients"),
    ],
)
def test_bound_rejects_bad_arguments(kwargs, name):
    args = dict(
        rank=8, sparsification=0.5, n_scheduled=10, n_clients=100, constants=BoundConstants()
    )
    args.update(kwargs)
    with pytest.raises(ValueError, match=name):
        convergence_bound(**args)
