"""Offline stage: Lemma 2 (with the D_th erratum) and Algorithm 2, checked independently."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import brentq

from optim import (
    BoundConstants,
    InfeasibleError,
    average_delay_s,
    convergence_bound,
    offline_rank_search,
    offline_sparsification,
)

P = 36_864  # ViT-Base q,v adapters: 12 layers x 2 x (768 + 768) values per unit rank
V_BITS = 32
B_HZ = 1e6


def _mean_snr(n: int, seed: int = 0) -> np.ndarray:
    return 10 ** np.random.default_rng(seed).uniform(-0.5, 2.0, size=n)  # -5 .. 20 dB


def _expected_delay(o: float, r: int, snr: np.ndarray, k: int) -> float:
    """eq. (18)-(19) written out: E over a uniform K-subset of the equal-delay round time."""
    n = snr.size
    per_client = V_BITS * o * r * P / (B_HZ * np.log2(1.0 + snr))
    return k / n * float(np.sum(per_client))


@pytest.mark.parametrize("seed", range(5))
def test_lemma2_matches_root_of_delay_constraint(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 200))
    k = int(rng.integers(1, n + 1))
    snr = _mean_snr(n, seed)
    o_min = float(rng.uniform(0.01, 0.3))
    d_th = float(rng.uniform(0.05, 5.0))
    for r in (1, 3, 8, 32):
        # root of D^0(O) = D_th on a wide bracket, then the box constraint O_min <= O <= 1
        root = brentq(lambda o, r=r: _expected_delay(o, r, snr, k) - d_th, 1e-12, 1e6, xtol=1e-15)
        want = min(1.0, max(o_min, root))
        got = offline_sparsification(
            rank=r,
            mean_snr=snr,
            n_scheduled=k,
            d_th_s=d_th,
            params_per_rank=P,
            bits_per_value=V_BITS,
            bandwidth_hz=B_HZ,
            o_min=o_min,
        )
        assert got == pytest.approx(want, rel=1e-10)
        d = average_delay_s(
            rank=r,
            sparsification=got,
            mean_snr=snr,
            n_scheduled=k,
            params_per_rank=P,
            bits_per_value=V_BITS,
            bandwidth_hz=B_HZ,
        )
        assert d == pytest.approx(_expected_delay(got, r, snr, k), rel=1e-12)


def test_lemma2_is_dimensionally_consistent():
    # the erratum: O^0 scales with D_th (the printed N / (A K r) does not depend on it)
    snr = _mean_snr(50)
    kw = dict(
        rank=4,
        mean_snr=snr,
        n_scheduled=5,
        params_per_rank=P,
        bits_per_value=V_BITS,
        bandwidth_hz=B_HZ,
        o_min=1e-6,
    )
    o1 = offline_sparsification(d_th_s=0.01, **kw)
    o2 = offline_sparsification(d_th_s=0.02, **kw)
    assert o1 < 1 and o2 < 1
    assert o2 == pytest.approx(2 * o1, rel=1e-12)
    # halving the band B doubles every delay, which doubling D_th exactly compensates
    kw2 = dict(kw, bandwidth_hz=B_HZ / 2)
    assert offline_sparsification(d_th_s=0.02, **kw2) == pytest.approx(o1, rel=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_rank_search_matches_brute_force(seed):
    rng = np.random.default_rng(100 + seed)
    n, k = 100, 10
    snr = _mean_snr(n, seed)
    consts = BoundConstants(
        S=float(rng.uniform(0.5, 2)),
        H=float(rng.uniform(0.5, 2)),
        W=float(rng.uniform(0.3, 1)),
        phi=float(rng.uniform(0.01, 0.3)),
        r_max=32,
    )
    o_min = 0.05
    # a budget that makes the full payload fit only for the first few ranks
    d_th = _expected_delay(1.0, int(rng.integers(2, 10)), snr, k)
    res = offline_rank_search(
        mean_snr=snr,
        n_scheduled=k,
        d_th_s=d_th,
        params_per_rank=P,
        bits_per_value=V_BITS,
        bandwidth_hz=B_HZ,
        o_min=o_min,
        constants=consts,
    )
    grid = np.linspace(o_min, 1.0, 20001)
    best = (np.inf, None)
    for r in range(1, consts.r_max + 1):
        delays = k / n * np.sum(V_BITS * r * P / (B_HZ * np.log2(1 + snr))) * grid
        feas = delays <= d_th * (1 + 1e-12)
        if not feas.any():
            assert not res.feasible[r - 1] and np.isinf(res.bounds[r - 1])
            continue
        g = convergence_bound(
            rank=r, sparsification=grid[feas], n_scheduled=k, n_clients=n, constants=consts
        )
        # the Lemma 2 point is at least as good as any feasible grid point, and no better than
        # the next (infeasible) grid point: it lies in the last grid cell of the feasible set
        step = grid[1] - grid[0]
        assert res.bounds[r - 1] <= g.min() * (1 + 1e-12)
        o_last = grid[feas].max()
        assert o_last - 1e-12 <= res.sparsifications[r - 1] <= o_last + step
        if o_last < 1.0:
            g_next = convergence_bound(
                rank=r, sparsification=o_last + step, n_scheduled=k, n_clients=n, constants=consts
            )
            assert res.bounds[r - 1] >= g_next * (1 - 1e-12)
        if g.min() < best[0]:
            best = (g.min(), r)
    assert res.rank == best[1]
    assert res.bound == res.bounds[res.rank - 1]
    assert res.delay_s <= d_th * (1 + 1e-12)
    assert res.bounds.shape == res.sparsifications.shape == res.feasible.shape == (32,)
    assert res.delays_s.shape == (32,)
    np.testing.assert_array_equal(res.ranks, np.arange(1, 33))


def test_infeasible_ranks_are_inf_and_all_infeasible_raises():
    snr = _mean_snr(100)
    o_min = 0.1
    d_r3 = _expected_delay(o_min, 3, snr, 10)
    res = offline_rank_search(
        mean_snr=snr,
        n_scheduled=10,
        d_th_s=d_r3,
        params_per_rank=P,
        bits_per_value=V_BITS,
        bandwidth_hz=B_HZ,
        o_min=o_min,
        constants=BoundConstants(),
    )
    assert res.feasible[:3].all() and not res.feasible[3:].any()
    assert np.isinf(res.bounds[3:]).all() and np.isfinite(res.bounds[:3]).all()
    assert res.rank <= 3

    d_r1 = _expected_delay(o_min, 1, snr, 10)
    with pytest.raises(InfeasibleError) as err:
        offline_rank_search(
            mean_snr=snr,
            n_scheduled=10,
            d_th_s=0.5 * d_r1,
            params_per_rank=P,
            bits_per_value=V_BITS,
            bandwidth_hz=B_HZ,
            o_min=o_min,
            constants=BoundConstants(),
        )
    msg = str(err.value)
    assert f"{d_r1:.6g}" in msg and "d_th_s" in msg and "o_min=0.1" in msg
    assert isinstance(err.value, ValueError)


def test_ties_go_to_the_smaller_rank():
    # S = 0 zeroes every term of the bound: all ranks tie at gamma = 0
    res = offline_rank_search(
        mean_snr=_mean_snr(20),
        n_scheduled=4,
        d_th_s=100.0,
        params_per_rank=P,
        bits_per_value=V_BITS,
        bandwidth_hz=B_HZ,
        o_min=0.05,
        constants=BoundConstants(S=0.0, r_max=10),
    )
    assert res.rank == 1
    assert np.all(res.bounds == 0.0)


def test_generous_budget_prefers_high_rank():
    res = offline_rank_search(
        mean_snr=_mean_snr(100),
        n_scheduled=10,
        d_th_s=1e6,
        params_per_rank=P,
        bits_per_value=V_BITS,
        bandwidth_hz=B_HZ,
        o_min=0.05,
        constants=BoundConstants(),
    )
    assert res.rank == 64 and res.sparsification == 1.0  # no delay pressure: full rank, no loss


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        (dict(n_scheduled=101), "n_scheduled"),
        (dict(d_th_s=0.0), "d_th_s"),
        (dict(d_th_s=-1.0), "d_th_s"),
        (dict(o_min=0.0), "o_min"),
        (dict(o_min=1.0), "o_min"),
        (dict(mean_snr=np.array([1.0, -1.0])), "mean_snr"),
        (dict(mean_snr=np.array([1.0, np.nan])), "mean_snr"),
        (dict(mean_snr=np.ones((2, 2))), "mean_snr"),
        (dict(params_per_rank=-5), "params_per_rank"),
        (dict(bits_per_value=0), "bits_per_value"),
        (dict(bandwidth_hz=-1e6), "bandwidth_hz"),
        (dict(constants="x"), "constants"),
    ],
)
def test_rank_search_rejects_bad_arguments(kwargs, name):
    args = dict(
        mean_snr=_mean_snr(100),
        n_scheduled=10,
        d_th_s=1.0,
        params_per_rank=P,
        bits_per_value=V_BITS,
        bandwidth_hz=B_HZ,
        o_min=0.05,
        constants=BoundConstants(),
    )
    args.update(kwargs)
    with pytest.raises(ValueError, match=name):
        offline_rank_search(**args)
