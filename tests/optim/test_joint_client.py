"""The per-client pieces of the joint solvers: the parallel root of increasing functions against
scipy's brentq one at a time, and each client's slope in its upload time (and the slope's own
derivative) against finite differences of its value (of the slope)."""

from __future__ import annotations

import math

import numpy as np
from optim_instances import random_devices
from scipy.optimize import brentq

from optim import client_block, min_feasible_deadline_s
from optim.joint_client import (
    increasing_root,
    split_slope,
    split_slope_and_curvature,
    split_value,
)


def test_increasing_root_matches_brentq_and_takes_the_ends():
    rng = np.random.default_rng(0)
    for _ in range(50):
        k = 20
        c, d = rng.uniform(0.0, 5.0, k), rng.uniform(-3.0, 12.0, k)

        def fn(x, c=c, d=d):
            return x**3 + c * x - d, 3 * x**2 + c  # increasing; some roots lie beyond [0, 2]

        lo, hi = np.zeros(k), np.full(k, 2.0)
        roots = increasing_root(fn, lo, hi, guess=rng.uniform(0.0, 2.0, k))
        for i in range(k):
            f_i = lambda x, ci=c[i], di=d[i]: x**3 + ci * x - di  # noqa: E731
            if f_i(0.0) >= 0.0:
                expected = 0.0
            elif f_i(2.0) <= 0.0:
                expected = 2.0
            else:
                expected = brentq(f_i, 0.0, 2.0, xtol=1e-14)
            assert math.isclose(roots[i], expected, abs_tol=1e-10)


def test_increasing_root_survives_an_infinite_end():
    """-inf at the lower end (an upload at its floor) forces bisection steps, not nan."""
    k = 5
    b = np.linspace(0.5, 3.0, k)
    with np.errstate(divide="ignore"):
        roots = increasing_root(lambda x: (np.log(x) + b, 1.0 / x), np.zeros(k), np.ones(k))
    assert np.allclose(roots, np.exp(-b), rtol=1e-9)


def test_increasing_root_is_not_fooled_by_tiny_newton_steps_next_to_a_pole():
    """f = 1 - (r / x)^6 next to x = 0: f / f' is tiny there, far from the root r; started at
    the lower end the search must still find r (bisection when |f| does not halve)."""
    r = np.array([1e-3, 3e-2, 0.5])
    lo, hi = np.full(3, 1e-9), np.ones(3)

    def fn(x):
        return 1.0 - (r / x) ** 6, 6.0 * r**6 / x**7

    for guess in (lo * 1.0001, None, np.full(3, 0.9)):
        roots = increasing_root(fn, lo, hi, guess=guess)
        assert np.allclose(roots, r, rtol=1e-9), (guess, roots)


def _random_split(rng: np.random.Generator, k: int = 6):
    """(block, deadline [s], upload times t (K,) [s] inside each client's range, price,
    weights (K,)) of a random cell of K clients."""
    bits = rng.uniform(1e4, 4e5, k)
    block = client_block(bits=bits, **random_devices(rng, k))
    deadline = min_feasible_deadline_s(block) * rng.uniform(1.2, 3.0)
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
