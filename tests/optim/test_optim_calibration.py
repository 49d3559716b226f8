"""Calibration of (S, H, W, phi, G) on synthetic inputs whose answer is known by construction."""

from __future__ import annotations

import numpy as np
import pytest

from optim import BoundConstants, PilotRecord, calibrate_constants
from optim.calibration import (
    estimate_G,
    estimate_H,
    estimate_phi,
    estimate_S,
    estimate_W,
    lora_component_norms,
    lora_covariance,
)


def _orthonormal(rng, n, k):
    q, _ = np.linalg.qr(rng.normal(size=(n, k)))
    return q


def test_component_norms_and_W():
    rng = np.random.default_rng(0)
    d, r, l = 20, 4, 12
    col = np.array([1.0, 2.0, 0.5, 3.0])
    row = np.array([2.0, 0.25, 4.0, 1.0])
    B = _orthonormal(rng, d, r) * col
    A = (_orthonormal(rng, l, r) * row).T
    norms = lora_component_norms(B, A)
    np.testing.assert_allclose(norms, col * row, rtol=1e-12)
    rounds = np.stack([norms, 0.5 * norms, 1.1 * norms])
    assert estimate_W(rounds) == pytest.approx(1.1 * 3.0, rel=1e-12)


def test_G_is_the_largest_gradient_norm():
    assert estimate_G(np.array([[0.3, 2.5], [1.0, 0.1]])) == 2.5


def test_covariance_and_phi_known_by_construction():
    rng = np.random.default_rng(1)
    d, r, l = 6, 3, 5
    Bm, Am = rng.normal(size=(d, r)), rng.normal(size=(r, l))
    dB, dA = rng.normal(size=(d, r)), rng.normal(size=(r, l))
    # two equally weighted clients at mean +/- delta: Cov = E[(B_k - B)(A_k - A)] = dB dA
    Bc = np.stack([Bm + dB, Bm - dB])
    Ac = np.stack([Am + dA, Am - dA])
    cov = lora_covariance(Bc, Ac)
    np.testing.assert_allclose(cov, dB @ dA, rtol=1e-12, atol=1e-12)
    # unequal weights: three clients, weights 1/2, 1/4, 1/4
    w = np.array([2.0, 1.0, 1.0])
    Bc3 = np.stack([Bm, Bm + dB, Bm - dB])
    Ac3 = np.stack([Am, Am + dA, Am - dA])
    np.testing.assert_allclose(lora_covariance(Bc3, Ac3, w), 0.5 * dB @ dA, atol=1e-12)
    # phi = the largest ratio (an upper-bound constant); a round with ||theta_r|| = 0 is skipped
    cov_sq = np.array([1.0, 2.0, 3.0, 0.0])
    th_sq = np.array([10.0, 10.0, 30.0, 0.0])
    assert estimate_phi(cov_sq, th_sq) == pytest.approx(0.2)


def test_phi_is_the_bound_of_assumption_3_not_a_mean():
    # rounds whose ratio ||Cov||^2 / ||theta||^2 is drawn from U(0, phi_true), with one round
    # at phi_true exactly: the sup is known, and the old mean (~phi_true / 2) misses it
    rng = np.random.default_rng(5)
    phi_true, t = 0.37, 400
    ratios = rng.uniform(0.0, phi_true, t)
    ratios[123] = phi_true
    th_sq = rng.uniform(0.5, 20.0, t)
    cov_sq = ratios * th_sq
    phi = estimate_phi(cov_sq, th_sq)
    assert phi == pytest.approx(phi_true, rel=1e-12)
    assert np.all(cov_sq <= phi * th_sq * (1 + 1e-12))  # eq. (13) holds in every pilot round
    assert np.mean(cov_sq / th_sq) < 0.6 * phi_true
    # quantile = 1 is the largest ratio, computed here without numpy's quantile
    largest = 0.0
    for c, h in zip(cov_sq.tolist(), th_sq.tolist(), strict=True):
        largest = max(largest, c / h)
    assert estimate_phi(cov_sq, th_sq, quantile=1.0) == largest
    # a high quantile discards the top rounds: U(0, phi_true) has its 0.9 quantile at 0.9 phi
    q90 = estimate_phi(cov_sq, th_sq, quantile=0.9)
    assert q90 < phi and q90 == pytest.approx(0.9 * phi_true, rel=0.05)
    # calibrate_constants passes the quantile on
    rec = PilotRecord(cov_sq_norms=cov_sq, theta_sq_norms=th_sq)
    assert calibrate_constants(rec).phi == phi
    assert calibrate_constants(rec, phi_quantile=0.9).phi == q90


def test_smoothness_recovers_the_largest_curvature_of_a_quadratic():
    rng = np.random.default_rng(2)
    p = 8
    q = _orthonormal(rng, p, p)
    eig = np.array([0.1, 0.5, 1.0, 2.0, 3.0, 4.0, 6.0, 7.5])
    M = q @ np.diag(eig) @ q.T  # F = 1/2 x^T M x, S = 7.5
    x = [rng.normal(size=p)]
    for _ in range(30):  # gradient descent trajectory
        x.append(x[-1] - 0.05 * M @ x[-1])
    x.append(x[-1] + 0.3 * q[:, -1])  # one step along the top eigenvector: ratio exactly 7.5
    X = np.array(x)
    Gr = X @ M.T
    assert estimate_S(X, Gr) == pytest.approx(7.5, rel=1e-10)
    ratios_ok = estimate_S(X, Gr, quantile=0.5)
    assert 0.1 <= ratios_ok <= 7.5


def test_H_from_a_rank_sweep_of_a_known_spectrum():
    rng = np.random.default_rng(3)
    d, l, r_o = 30, 25, 16
    U, Vt = _orthonormal(rng, d, r_o), _orthonormal(rng, l, r_o).T
    s = np.linspace(3.0, 1.0, r_o)  # singular values of theta_o
    ranks = np.array([1, 2, 4, 8, 16])
    updates, sigma = [], []
    for r in ranks:
        theta_r = (U[:, :r] * s[:r]) @ Vt[:r]  # best rank-r approximation
        updates.append(theta_r.ravel())
        sigma.append(s[0])  # largest component norm of theta_r
    h = estimate_H(ranks, np.array(updates), np.array(sigma))
    want = max(np.sum(s[r:] ** 2) / ((r_o - r) * s[0] ** 2) for r in ranks[:-1])
    assert h == pytest.approx(want, rel=1e-10)
    # equal singular values: ||theta_o - theta_r||^2 = (r_o - r) s^2 exactly, so H = 1
    s1 = np.full(r_o, 2.0)
    upd = np.array([((U[:, :r] * s1[:r]) @ Vt[:r]).ravel() for r in ranks])
    assert estimate_H(ranks, upd, np.full(5, 2.0)) == pytest.approx(1.0, rel=1e-10)
    # an explicit r_max above the swept top rank lowers H accordingly
    assert estimate_H(ranks, upd, np.full(5, 2.0), r_max=32) < 1.0


def test_calibrate_constants_fills_what_was_measured():
    rng = np.random.default_rng(4)
    rec = PilotRecord(
        grad_norms=[0.5, 4.0],
        component_norms=[[0.2, 0.9], [0.3, 0.1]],
        cov_sq_norms=[1.0, 3.0],
        theta_sq_norms=[4.0, 4.0],
    )
    base = BoundConstants(S=2.0, H=0.7, eta=0.01, E=3, r_max=32)
    c = calibrate_constants(rec, defaults=base, eta=0.02, E=4)
    assert (c.G, c.W, c.phi) == (4.0, 0.9, 0.75)
    assert (c.S, c.H, c.eta, c.E, c.r_max) == (2.0, 0.7, 0.02, 4, 32)
    full = PilotRecord(
        trajectory_params=rng.normal(size=(5, 3)),
        trajectory_grads=rng.normal(size=(5, 3)),
        sweep_ranks=np.array([2, 4]),
        sweep_updates=np.array([[1.0, 0.0], [1.0, 1.0]]),
        sweep_sigma=np.array([1.0, 1.0]),
    )
    c2 = calibrate_constants(full)
    assert isinstance(c2, BoundConstants)
    h_est = c2.H
    assert h_est == pytest.approx(0.5)
    assert c2.S > 0


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: estimate_G([-1.0]), "grad_norms"),
        (lambda: estimate_W([np.nan]), "component_norms"),
        (lambda: estimate_phi([1.0], [0.0]), "theta_sq_norms"),
        (lambda: estimate_phi([1.0, 2.0], [1.0]), "length"),
        (lambda: estimate_phi([1.0], [2.0], quantile=1.5), "quantile"),
        (lambda: estimate_S(np.zeros((1, 3)), np.zeros((1, 3))), "T >= 2"),
        (lambda: estimate_S(np.ones((3, 2)), np.ones((3, 2))), "params"),
        (lambda: estimate_S(np.eye(3), np.eye(3), quantile=0.0), "quantile"),
        (lambda: estimate_H([4, 4], np.ones((2, 3)), [1.0, 1.0]), "ranks"),
        (lambda: estimate_H([1, 4], np.ones((2, 3)), [0.0, 1.0]), "sigma"),
        (lambda: lora_component_norms(np.ones((3, 2)), np.ones((3, 4))), "B"),
        (lambda: calibrate_constants(PilotRecord(cov_sq_norms=[1.0])), "theta_sq_norms"),
        (lambda: calibrate_constants(PilotRecord(grad_norms=[1.0]), eta=-1.0), "eta"),
        (lambda: calibrate_constants("x"), "record"),  # type: ignore[arg-type]
    ],
)
def test_bad_inputs(call, name):
    with pytest.raises(ValueError, match=name):
        call()
