"""The per-client pieces of the joint solvers: each client's split at a price against scipy's
brentq on its slope, one client at a time, and each client's slope in its upload time (and the
slope's own derivative) against finite differences of its value (of the slope)."""

from __future__ import annotations

import numpy as np
from optim_instances import random_devices
from scipy.optimize import brentq

from optim import client_block, min_feasible_deadline_s
from optim.energy_min import priced_split
from optim.joint_client import (
    split_slope,
    split_slope_and_curvature,
    split_value,
)


def _client_slope(t: float, block, deadline: float, price: float, weight, i: int) -> float:
    """Client i's split slope at upload time t [s] (every client at t; i's entry)."""
    return float(split_slope(block, deadline, np.full(block.bits.size, t), price, weight)[i])


def test_the_split_at_a_price_is_the_root_of_its_slope_or_an_end():
    """Each client's split against scipy's brentq on its slope, one client at a time, from
    every start: none, the lower end of its range (next to the upload floor the slope has a
    pole, where Newton's steps are tiny but the root is far) and the upper end."""
    rng = np.random.default_rng(3)
    ends = set()
    for _ in range(20):
        block, deadline, _, price, weight = _random_split(rng, tight=rng.uniform() < 0.5)
        hi = deadline - block.fastest_compute_s()
        lo = np.minimum(
            np.maximum(deadline - block.slowest_compute_s(), block.upload_floor_s() * (1 + 1e-9)),
            hi,
        )
        expected = np.empty(hi.size)
        for i in range(hi.size):
            args = (block, deadline, price, weight, i)
            if _client_slope(lo[i], *args) >= 0.0:
                expected[i], end = lo[i], "lo"
            elif _client_slope(hi[i], *args) <= 0.0:
                expected[i], end = hi[i], "hi"
            else:
                root = brentq(_client_slope, lo[i], hi[i], args=args, xtol=1e-15 * hi[i])
                expected[i], end = root, "inside"
            ends.add(end)
        for guess in (None, lo * (1 + 1e-4), hi):
            upload, y, value = priced_split(block, deadline, price, weight, guess)
            assert np.allclose(upload, expected, rtol=1e-9), (guess, upload, expected)
            v, y_at = split_value(block, deadline, upload, price, weight)
            assert np.allclose(value, v) and np.allclose(y, y_at)
    assert ends == {"lo", "hi", "inside"}  # every case met


def _random_split(rng: np.random.Generator, k: int = 6, tight: bool = False):
    """(block, deadline [s], upload times t (K,) [s] inside each client's range, price,
    weights (K,)) of a random cell of K clients (``tight``: a deadline within 1 % of the least
    round time, where uploads sit near their floors)."""
    bits = rng.uniform(1e4, 4e5, k)
    block = client_block(bits=bits, **random_devices(rng, k))
    stretch = rng.uniform(1.0001, 1.01) if tight else rng.uniform(1.2, 3.0)
    deadline = min_feasible_deadline_s(block) * stretch
    weight = rng.uniform(0.0, 5.0, k)
    price = 10 ** rng.uniform(-3.0, 2.0)
    hi = deadline - block.fastest_compute_s()
    lo = np.maximum(deadline - block.slowest_compute_s(), block.upload_floor_s() * 1.01)
    return block, deadline, lo + rng.uniform(0.1, 0.9, k) * (hi - lo), price, weight


def test_split_slope_is_the_derivative_of_the_split_value():
    """Power free and power at its limit (large prices push y down to t b_min(t))."""
    rng = np.random.default_rng(1)
    for _ in range(30):
        block, deadline, t, price, weight = _random_split(rng)
        h = 1e-6 * t
        numeric = (
            split_value(block, deadline, t + h, price, weight)[0]
            - split_value(block, deadline, t - h, price, weight)[0]
        ) / (2 * h)
        assert np.allclose(split_slope(block, deadline, t, price, weight), numeric, rtol=1e-5)


def test_split_curvature_is_the_derivative_of_the_split_slope():
    """Both power branches; the curvature is what Newton's method on the split divides by."""
    rng = np.random.default_rng(2)
    for _ in range(30):
        block, deadline, t, price, weight = _random_split(rng)
        h = 1e-6 * t
        numeric = (
            split_slope(block, deadline, t + h, price, weight)
            - split_slope(block, deadline, t - h, price, weight)
        ) / (2 * h)
        slope, curvature = split_slope_and_curvature(block, deadline, t, price, weight)
        assert np.allclose(slope, split_slope(block, deadline, t, price, weight))
        assert np.all(curvature >= 0.0)  # the split's value is convex
        assert np.allclose(curvature, numeric, rtol=1e-5)
