"""Bandwidth shares: eq. (31) and the min-max completion-time allocation (checked with CVXPY)."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest

from optim import completion_times_s, equal_delay_bandwidth, minmax_bandwidth, minmax_deadline_s

B_HZ = 1e6


def test_equal_delay_shares_eq31():
    rng = np.random.default_rng(0)
    for k in (1, 2, 10, 1000):
        snr = 10 ** rng.uniform(-2, 3, size=k)
        b = equal_delay_bandwidth(snr)
        assert b.shape == (k,) and b.sum() == pytest.approx(1.0, abs=1e-12)
        inv = 1.0 / np.log2(1.0 + snr)
        np.testing.assert_allclose(b, inv / inv.sum(), rtol=1e-12)
        # the same payload on every client: everyone finishes together
        t = 1e5 / (b * B_HZ * np.log2(1.0 + snr))
        np.testing.assert_allclose(t, t[0], rtol=1e-12)


def _cvxpy_minmax(c, bits, snr):
    """min t s.t. c_k + w_k / b_k <= t, sum b = 1, b >= 0 (w_k: upload time on the whole band)."""
    w = bits / (B_HZ * np.log2(1.0 + snr))
    b = cp.Variable(len(c), nonneg=True)
    t = cp.Variable()
    cons = [cp.sum(b) == 1]
    cons += [c[i] + w[i] * cp.inv_pos(b[i]) <= t for i in range(len(c)) if bits[i] > 0]
    prob = cp.Problem(cp.Minimize(t), cons)
    prob.solve(solver=cp.CLARABEL)
    assert prob.status == cp.OPTIMAL
    return float(t.value), np.asarray(b.value)


@pytest.mark.parametrize("seed", range(6))
def test_minmax_matches_cvxpy_and_equalises_finish_times(seed):
    rng = np.random.default_rng(seed)
    k = int(rng.integers(2, 25))
    c = rng.uniform(0, 3, size=k)
    bits = rng.uniform(1e4, 1e7, size=k)
    snr = 10 ** rng.uniform(-1, 3, size=k)
    b = minmax_bandwidth(compute_s=c, bits=bits, snr=snr, bandwidth_hz=B_HZ)
    t_star = minmax_deadline_s(compute_s=c, bits=bits, snr=snr, bandwidth_hz=B_HZ)
    assert b.sum() == pytest.approx(1.0, abs=1e-12) and np.all(b > 0)
    times = completion_times_s(compute_s=c, bits=bits, snr=snr, bandwidth_hz=B_HZ, shares=b)
    np.testing.assert_allclose(times, t_star, rtol=1e-10)
    t_cvx, b_cvx = _cvxpy_minmax(c, bits, snr)
    assert t_star == pytest.approx(t_cvx, rel=1e-6)
    np.testing.assert_allclose(b, b_cvx, rtol=1e-2, atol=1e-6)
    # CVXPY's t may sit a hair below T* (constraints hold to ~1e-8); its shares, made exactly
    # feasible, never finish before T*
    b_feas = np.clip(b_cvx, 1e-15, None)
    b_feas /= b_feas.sum()
    t_feas = completion_times_s(
        compute_s=c, bits=bits, snr=snr, bandwidth_hz=B_HZ, shares=b_feas
    ).max()
    assert t_feas >= t_star * (1 - 1e-12)


def test_minmax_random_perturbations_never_lower_the_max():
    rng = np.random.default_rng(42)
    k = 12
    c = rng.uniform(0, 1, size=k)
    bits = rng.uniform(1e5, 1e6, size=k)
    snr = 10 ** rng.uniform(0, 2, size=k)
    b = minmax_bandwidth(compute_s=c, bits=bits, snr=snr, bandwidth_hz=B_HZ)
    best = completion_times_s(compute_s=c, bits=bits, snr=snr, bandwidth_hz=B_HZ, shares=b).max()
    for scale in (1e-6, 1e-3, 1e-1):
        for _ in range(300):
            d = rng.normal(size=k) * scale
            d -= d.mean()  # keep sum b = 1
            nb = b + d
            if np.any(nb <= 0):
                continue
            t = completion_times_s(
                compute_s=c, bits=bits, snr=snr, bandwidth_hz=B_HZ, shares=nb
            ).max()
            assert t >= best * (1 - 1e-12)


def test_minmax_reduces_to_equal_delay_for_identical_clients():
    snr = np.array([0.5, 3.0, 40.0, 900.0])
    b = minmax_bandwidth(compute_s=0.2, bits=np.full(4, 1e6), snr=snr, bandwidth_hz=B_HZ)
    np.testing.assert_allclose(b, equal_delay_bandwidth(snr), rtol=1e-10)


def test_zero_bit_clients_get_no_bandwidth_even_in_outage():
    bits = np.array([1e6, 0.0, 2e6, 0.0])
    snr = np.array([5.0, 0.0, 2.0, 7.0])
    b = minmax_bandwidth(compute_s=np.zeros(4), bits=bits, snr=snr, bandwidth_hz=B_HZ)
    assert b[1] == 0.0 and b[3] == 0.0 and b.sum() == pytest.approx(1.0)


def test_one_active_client_takes_the_whole_band():
    b = minmax_bandwidth(compute_s=[1.0, 0.0], bits=[5e5, 0.0], snr=[3.0, 3.0], bandwidth_hz=B_HZ)
    np.testing.assert_array_equal(b, [1.0, 0.0])
    t = minmax_deadline_s(compute_s=[1.0, 0.0], bits=[5e5, 0.0], snr=[3.0, 3.0], bandwidth_hz=B_HZ)
    assert t == pytest.approx(1.0 + 5e5 / (B_HZ * 2.0))


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        (dict(snr=[1.0, 0.0]), "snr"),  # outage client with a payload
        (dict(snr=[1.0, np.nan]), "snr"),
        (dict(snr=[1.0]), "snr"),  # wrong length
        (dict(bits=[0.0, 0.0]), "bits"),
        (dict(bits=[1.0, -1.0]), "bits"),
        (dict(compute_s=[-1.0, 0.0]), "compute_s"),
        (dict(compute_s=[0.0, 0.0, 0.0]), "compute_s"),
        (dict(bandwidth_hz=0.0), "bandwidth_hz"),
    ],
)
def test_minmax_bad_inputs(kwargs, name):
    args = dict(compute_s=[0.0, 0.0], bits=[1e5, 1e5], snr=[1.0, 2.0], bandwidth_hz=B_HZ)
    args.update(kwargs)
    with pytest.raises(ValueError, match=name):
        minmax_bandwidth(**args)


@pytest.mark.parametrize("snr", [[1.0, 0.0], [1.0, -1.0], [np.inf, 1.0], [], [[1.0, 2.0]]])
def test_equal_delay_bad_inputs(snr):
    with pytest.raises(ValueError, match="snr"):
        equal_delay_bandwidth(np.asarray(snr, dtype=float))
