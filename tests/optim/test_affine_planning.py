"""The solvers other algorithms are planned with: P3 for a payload affine in O, Lemma 2 per
candidate rank, and the sketch sweep over tables; each against brute force or the closed form."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from optim import BoundConstants, solve_slot
from optim.bound import scalar_bound_parts
from optim.offline import affine_offline_ratio
from optim.online import solve_affine_slot
from optim.sketch_ratio import solve_sketch_ratios, solve_sketch_table


def _grid_minimum(q: float, V: float, c: float, c0: float, offset: float, a: float, o_min: float):
    grid = np.linspace(o_min, 1.0, 400_001)
    f = q * (c0 + c * grid) + V * (offset + a * (1.0 - grid) ** 2 / grid**4)
    return grid[int(np.argmin(f))], float(f.min())


@pytest.mark.parametrize("seed", range(12))
def test_affine_slot_is_the_grid_minimum(seed: int) -> None:
    rng = np.random.default_rng(seed)
    q, V = rng.uniform(0.0, 5.0), 10.0 ** rng.uniform(-6, -2)
    c, c0 = rng.uniform(0.1, 20.0), rng.uniform(0.0, 3.0)
    offset, a, o_min = rng.uniform(0.0, 50.0), rng.uniform(1.0, 1e4), rng.uniform(0.01, 0.3)
    sol = solve_affine_slot(
        queue=q,
        V=V,
        delay_per_ratio_s=c,
        fixed_delay_s=c0,
        offset=offset,
        a=a,
        o_min=o_min,
        shares=np.array([0.5, 0.5]),
    )
    o_grid, f_grid = _grid_minimum(q, V, c, c0, offset, a, o_min)
    assert abs(sol.sparsification - o_grid) <= 1e-4
    assert sol.objective <= f_grid + 1e-9 * max(1.0, abs(f_grid))
    assert sol.delay_s == pytest.approx(c0 + c * sol.sparsification, rel=1e-15)
    assert sol.bound == pytest.approx(
        offset + a * (1 - sol.sparsification) ** 2 / sol.sparsification**4
    )


def test_affine_slot_with_no_fixed_part_is_solve_slot_bit_for_bit() -> None:
    constants = BoundConstants()
    snr = np.array([3.0, 12.0, 0.7, 40.0])
    v, r, p, bw = 32.0, 8, 36864.0, 1e6
    sum_inv = float((1.0 / np.log2(1.0 + snr)).sum())
    offset, a = scalar_bound_parts(rank=r, n_scheduled=4, n_clients=100, constants=constants)
    for q in (0.0, 0.3, 7.0):
        old = solve_slot(
            queue=q,
            V=1e-4,
            snr=snr,
            rank=r,
            n_clients=100,
            params_per_rank=p,
            bits_per_value=v,
            bandwidth_hz=bw,
            o_min=0.05,
            constants=constants,
        )
        new = solve_affine_slot(
            queue=q,
            V=1e-4,
            delay_per_ratio_s=v * r * p * sum_inv / bw,
            offset=offset,
            a=a,
            o_min=0.05,
            shares=old.shares,
        )
        assert (new.sparsification, new.delay_s, new.bound) == (
            old.sparsification,
            old.delay_s,
            old.bound,
        )


def test_affine_offline_ratio_meets_d_th_where_it_can() -> None:
    c = np.array([4.0, 2.0, 1.0, 0.0, 3.0])
    f = np.array([0.5, 2.5, 0.0, 1.5, 2.9])
    o, feasible = affine_offline_ratio(delay_per_ratio_s=c, fixed_delay_s=f, d_th_s=2.0, o_min=0.1)
    # rank 0: (2 - 0.5)/4 = 0.375; rank 1: F alone exceeds D_th; rank 2: clipped to 1;
    # rank 3: nothing scales, F = 1.5 fits at O = 1; rank 4: 2.9 + 0.3 > 2
    np.testing.assert_allclose(o, [0.375, 0.1, 1.0, 1.0, 0.1])
    assert feasible.tolist() == [True, False, True, True, False]
    d = f + c * o
    assert np.all(d[feasible] <= 2.0 + 1e-12)


def _brute_force(q, V, lat, pen):
    n, m = lat.shape
    best = None
    for ks in itertools.product(range(m), repeat=n):
        idx = np.array(ks)
        d = lat[np.arange(n), idx].max()
        obj = V * pen[np.arange(n), idx].mean() + q * d
        if best is None or obj < best - 1e-12:
            best = obj
    return best


@pytest.mark.parametrize("seed", range(20))
def test_sketch_table_is_the_brute_force_optimum(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, m = 3, 5
    lat = np.cumsum(rng.uniform(0.0, 1.0, (n, m)), axis=1)  # non-decreasing in k
    pen = rng.uniform(0.0, 10.0, (n, m))  # any penalty, not monotone
    q, V = rng.uniform(0.0, 3.0), rng.uniform(0.0, 3.0)
    sol = solve_sketch_table(
        queue=q,
        V=V,
        ranks=np.arange(1, m + 1),
        latencies_s=lat,
        penalties=pen,
        shares=np.full(n, 1 / n),
    )
    assert sol.objective == pytest.approx(_brute_force(q, V, lat, pen), abs=1e-10)
    picked = sol.ranks - 1
    assert sol.delay_s == lat[np.arange(n), picked].max()


def test_sketch_table_equals_the_affine_sweep_on_its_own_inputs() -> None:
    snr = np.array([2.0, 9.0, 30.0, 0.5])
    compute = np.array([0.2, 0.05, 0.3, 0.1])
    args = dict(
        snr=snr,
        compute_s=compute,
        rank=16,
        k_min=2,
        params_per_rank=3000.0,
        bits_per_value=32.0,
        bandwidth_hz=1e6,
        dense_values=500.0,
        lora_flops_fraction=0.2,
    )
    from optim.sketch_ratio import sketch_latency_coefficients

    alpha, beta, shares = sketch_latency_coefficients(
        **{k: v for k, v in args.items() if k != "k_min"}
    )
    ks = np.arange(2, 17)
    lat = alpha[:, None] + beta[:, None] * ks[None, :]
    pen = np.broadcast_to((16 / ks) ** 2, lat.shape)
    for q in (0.0, 0.5, 5.0):
        old = solve_sketch_ratios(queue=q, V=0.05, **args)
        new = solve_sketch_table(
            queue=q, V=0.05, ranks=ks, latencies_s=lat, penalties=pen, shares=shares
        )
        np.testing.assert_array_equal(new.ranks, old.ranks)
        assert new.objective == pytest.approx(old.objective, rel=1e-12)
