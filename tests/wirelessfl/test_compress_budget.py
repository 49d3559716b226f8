"""allocate_budget: exact sums, caps, largest remainder, overflow redistribution (eq. 3)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
import torch

from wirelessfl.compress.budget import allocate_budget


def reference_allocate(weights: list[float], total: int, capacity: int) -> list[int]:
    """Independent exact reference (rational arithmetic, explicit loops)."""
    w = [Fraction(float(x)) for x in weights]
    n = len(w)
    capped = [False] * n
    while True:
        free = [i for i in range(n) if not capped[i]]
        remaining = total - capacity * (n - len(free))
        s = sum((w[i] for i in free), Fraction(0))
        if s == 0:
            quota = {i: Fraction(remaining, len(free)) for i in free}
        else:
            quota = {i: remaining * w[i] / s for i in free}
        over = [i for i in free if quota[i] > capacity]
        if not over:
            break
        for i in over:
            capped[i] = True
    out = [capacity if capped[i] else math.floor(quota[i]) for i in range(n)]
    left = total - sum(out)
    by_fraction = sorted(free, key=lambda i: (-(quota[i] - math.floor(quota[i])), i))
    for i in by_fraction[:left]:
        out[i] += 1
    return out


@pytest.mark.parametrize(
    ("weights", "total", "capacity", "expected"),
    [
        ([1, 1, 1], 4, 5, [2, 1, 1]),  # tie on fractions -> lower index first
        ([0.5, 0.3, 0.2], 7, 10, [4, 2, 1]),  # quotas 3.5, 2.1, 1.4
        ([10, 1, 1], 6, 3, [3, 2, 1]),  # quota 5 > 3: overflow 2 split 1.5/1.5, then tie
        ([100, 10, 1], 9, 3, [3, 3, 3]),  # two rounds of capping
        ([0, 0, 0, 0], 6, 2, [2, 2, 1, 1]),  # all zero -> uniform
        ([5, 0, 0], 4, 2, [2, 1, 1]),  # overflow into zero-weight bins -> uniform among them
        ([3, 1], 0, 5, [0, 0]),
        ([1, 2, 3], 12, 4, [4, 4, 4]),  # total == capacity * n
    ],
)
def test_hand_computed(weights, total, capacity, expected):
    out = allocate_budget(np.asarray(weights, dtype=float), total, capacity)
    assert out.tolist() == expected
    assert reference_allocate(weights, total, capacity) == expected


def test_random_against_reference():
    rng = np.random.default_rng(0)
    for _ in range(400):
        n = int(rng.integers(1, 9))
        capacity = int(rng.integers(0, 12))
        total = int(rng.integers(0, capacity * n + 1))
        kind = rng.integers(0, 3)
        if kind == 0:
            w = rng.random(n)
        elif kind == 1:  # heavy-tailed: forces capping
            w = rng.random(n) ** 8
        else:  # some exact zeros
            w = rng.random(n) * (rng.random(n) < 0.5)
        out = allocate_budget(w, total, capacity)
        assert out.dtype == np.int64
        assert out.sum() == total
        assert np.all(out >= 0) and np.all(out <= capacity)
        assert out.tolist() == reference_allocate(w.tolist(), total, capacity)


def test_torch_weights_and_scale_invariance():
    w = torch.tensor([1e-30, 3e-30, 2e-30], dtype=torch.float64)
    a = allocate_budget(w, 11, 11)
    b = allocate_budget(np.array([1.0, 3.0, 2.0]), 11, 11)
    assert a.tolist() == b.tolist() == reference_allocate([1.0, 3.0, 2.0], 11, 11)


def test_errors():
    with pytest.raises(ValueError, match="exceeds"):
        allocate_budget(np.ones(3), 10, 3)
    with pytest.raises(ValueError):
        allocate_budget(np.array([1.0, -1.0]), 1, 3)
    with pytest.raises(ValueError):
        allocate_budget(np.array([1.0, np.nan]), 1, 3)
    with pytest.raises(ValueError):
        allocate_budget(np.ones((2, 2)), 1, 3)
    with pytest.raises(ValueError):
        allocate_budget(np.ones(2), -1, 3)
