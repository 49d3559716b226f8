"""The offline stage planning with the expected upload time (``inverse_efficiency``)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from channels import rayleigh_inverse_efficiency, rayleigh_outage_snr
from optim import BoundConstants, average_delay_s, offline_rank_search, offline_sparsification
from optim.offline import (
    DEFAULT_PLANNING_OUTAGE_PROB,
    OFFLINE_CHANNELS,
    planning_inverse_efficiency,
)

P = 36_864  # ViT-Base q,v adapters
V_BITS = 32
B_HZ = 10e6
C = BoundConstants(r_max=64)


def _mean_snr(n: int, seed: int = 0) -> np.ndarray:
    return 10 ** np.random.default_rng(seed).uniform(0.0, 2.0, size=n)  # 0 .. 20 dB


def _search(snr: np.ndarray, w: np.ndarray | None, d_th: float = 2.0, k: int = 10):
    return offline_rank_search(
        mean_snr=snr,
        n_scheduled=k,
        d_th_s=d_th,
        params_per_rank=P,
        bits_per_value=V_BITS,
        bandwidth_hz=B_HZ,
        o_min=0.05,
        constants=C,
        inverse_efficiency=w,
    )


def test_mean_snr_planner_is_the_paper():
    snr = _mean_snr(100)
    w = planning_inverse_efficiency(snr, channel="mean_snr")
    np.testing.assert_allclose(w, 1.0 / np.log2(1.0 + snr), rtol=1e-15)
    paper, same = _search(snr, None), _search(snr, w)
    assert paper.rank == same.rank
    assert paper.sparsification == pytest.approx(same.sparsification, rel=1e-14)
    np.testing.assert_allclose(paper.bounds, same.bounds, rtol=1e-12)


def test_expected_rate_is_the_channel_function():
    snr = _mean_snr(50)
    w = planning_inverse_efficiency(snr, channel="expected_rate", outage_snr=1.0)
    np.testing.assert_array_equal(w, rayleigh_inverse_efficiency(snr, 1.0))
    w = planning_inverse_efficiency(snr, channel="expected_rate")
    theta = rayleigh_outage_snr(snr, DEFAULT_PLANNING_OUTAGE_PROB)
    np.testing.assert_array_equal(w, rayleigh_inverse_efficiency(snr, theta, conditional=True))
    assert OFFLINE_CHANNELS == ("mean_snr", "expected_rate")
    with pytest.raises(ValueError, match="channel must be one of"):
        planning_inverse_efficiency(snr, channel="ergodic")
    with pytest.raises(ValueError, match="outage_prob"):
        planning_inverse_efficiency(snr, channel="expected_rate", outage_prob=0.0)


@pytest.mark.parametrize("eps", [0.1, 0.01, 1e-3])
def test_jensen_makes_the_average_channel_optimistic(eps):
    snr = _mean_snr(100)
    w_mean = planning_inverse_efficiency(snr, channel="mean_snr")
    w_exp = planning_inverse_efficiency(snr, channel="expected_rate", outage_prob=eps)
    assert np.all(w_exp > w_mean)
    ranks = np.arange(1, 65)
    kw = dict(
        rank=ranks,
        mean_snr=snr,
        n_scheduled=10,
        d_th_s=2.0,
        params_per_rank=P,
        bits_per_value=V_BITS,
        bandwidth_hz=B_HZ,
        o_min=0.05,
    )
    o_mean = offline_sparsification(**kw)
    o_exp = offline_sparsification(**kw, inverse_efficiency=w_exp)
    assert np.all(o_exp <= o_mean) and np.any(o_exp < o_mean)
    # a smaller eps drops less of the fade's tail: a larger planned delay
    w_smaller = planning_inverse_efficiency(snr, channel="expected_rate", outage_prob=eps / 10)
    assert np.all(w_smaller > w_exp)


def test_planned_delay_matches_simulated_rounds_with_outage():
    """E[D^t] of the simulator's round model (K uniform of N, Rayleigh, outage clients send
    nothing, eq. 31 shares so D^t = sum_k bits / (B log2(1 + SNR_k))) against D^0."""
    rng = np.random.default_rng(7)
    n, k, theta = 40, 8, 10 ** (0.0 / 10)  # outage below 0 dB
    snr_bar = _mean_snr(n, seed=3)
    o, r = 0.5, 4
    bits = V_BITS * o * r * P
    rounds = 200_000
    idx = np.argsort(rng.random((rounds, n)), axis=1)[:, :k]
    snr = snr_bar[idx] * rng.exponential(size=(rounds, k))
    up = snr >= theta
    per = np.where(up, bits / (B_HZ * np.log2(1.0 + np.where(up, snr, 1.0))), 0.0)
    d = per.sum(axis=1)
    w = planning_inverse_efficiency(snr_bar, channel="expected_rate", outage_snr=theta)
    planned = average_delay_s(
        rank=r,
        sparsification=o,
        mean_snr=snr_bar,
        n_scheduled=k,
        params_per_rank=P,
        bits_per_value=V_BITS,
        bandwidth_hz=B_HZ,
        inverse_efficiency=w,
    )
    assert planned == pytest.approx(d.mean(), abs=5 * d.std() / math.sqrt(rounds))


def test_outage_can_make_the_average_channel_pessimistic():
    """With an outage threshold a client often below it rarely sends: its expected upload time
    can fall below 1/log2(1 + SNR_bar) (0 dB mean, 0 dB threshold: 63 % outage), while a
    client well above it pays Jensen's gap (10 dB mean)."""
    w_mean = planning_inverse_efficiency(np.array([1.0, 10.0]))
    w = planning_inverse_efficiency(np.array([1.0, 10.0]), channel="expected_rate", outage_snr=1.0)
    assert w[0] < w_mean[0] and w[1] > w_mean[1]


def test_ten_db_cell_numbers():
    """The numbers docs/solvers.md quotes for the paper's online setting (N = 100, K = 10,
    10 dB, ViT-Base q/v, B = 10 MHz, D_th = 2 s)."""
    snr = np.full(100, 10.0)
    w_mean = planning_inverse_efficiency(snr)[0]
    w_exp = planning_inverse_efficiency(snr, channel="expected_rate")[0]
    assert w_mean == pytest.approx(0.2891, abs=1e-4)
    assert w_exp == pytest.approx(0.5221, abs=1e-4)
    paper = _search(snr, None)
    planned = _search(snr, np.full(100, w_exp))
    assert (paper.rank, round(paper.sparsification, 3)) == (6, 0.978)
    assert (planned.rank, planned.sparsification) == (3, 1.0)


def test_inverse_efficiency_validation_and_always_in_outage():
    snr = _mean_snr(5)
    with pytest.raises(ValueError, match="inverse_efficiency must have length 5"):
        _search(snr, np.ones(4), k=2)
    with pytest.raises(ValueError, match="inverse_efficiency"):
        _search(snr, np.array([1.0, 1.0, -1.0, 1.0, 1.0]), k=2)
    res = _search(snr, np.zeros(5), k=2)  # nobody ever sends: no delay, O^0 = 1
    assert np.all(res.sparsifications == 1.0) and np.all(res.delays_s == 0.0)
