"""lora_math: eq. (2) regularizer, residual, singular-value proxy, eq. (12) covariance."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from wirelessfl.compress.soft import soft_importance
from wirelessfl.lora_math import (
    covariance_norm,
    covariance_term,
    orthogonality_penalty,
    orthogonality_residual,
    singular_value_proxy,
)


def orthogonal_factors(seed: int, d: int, r: int, l: int) -> tuple[torch.Tensor, torch.Tensor]:
    """B with orthogonal columns, A with orthogonal rows, distinct scales (via QR)."""
    g = torch.Generator().manual_seed(seed)
    qb, _ = torch.linalg.qr(torch.randn(d, r, generator=g, dtype=torch.float64))
    qa, _ = torch.linalg.qr(torch.randn(l, r, generator=g, dtype=torch.float64))
    sb = torch.rand(r, generator=g, dtype=torch.float64) * 3 + 0.1
    sa = torch.rand(r, generator=g, dtype=torch.float64) * 2 + 0.1
    return qb * sb, (qa * sa).T


def numpy_penalty(B: np.ndarray, A: np.ndarray) -> float:
    total = 0.0
    r = B.shape[1]
    for i in range(r):
        for j in range(r):
            if i != j:
                total += float(np.dot(B[:, i], B[:, j])) ** 2
                total += float(np.dot(A[i, :], A[j, :])) ** 2
    return total


# ----------------------------------------------------------------------------- eq. (2)


def test_penalty_zero_for_orthogonal_factors():
    for seed, (d, r, l) in enumerate([(8, 3, 5), (16, 4, 12), (5, 1, 7)]):
        B, A = orthogonal_factors(seed, d, r, l)
        assert float(orthogonality_penalty(B, A)) == pytest.approx(0.0, abs=1e-24)
        assert orthogonality_residual(B, A) == pytest.approx(0.0, abs=1e-24)


def test_penalty_matches_numpy_and_positive():
    rng = np.random.default_rng(0)
    for d, r, l in [(6, 3, 4), (10, 4, 8), (3, 2, 3)]:
        B = rng.standard_normal((d, r))
        A = rng.standard_normal((r, l))
        p = orthogonality_penalty(torch.from_numpy(B), torch.from_numpy(A))
        assert p.ndim == 0
        assert float(p) > 0
        assert float(p) == pytest.approx(numpy_penalty(B, A), rel=1e-12)


def test_penalty_one_factor_nonorthogonal():
    B, A = orthogonal_factors(3, 6, 3, 5)
    B2 = B.clone()
    B2[:, 1] += 0.3 * B2[:, 0]
    assert float(orthogonality_penalty(B2, A)) > 1e-6
    A2 = A.clone()
    A2[2] += A2[0]
    assert float(orthogonality_penalty(B, A2)) > 1e-6


def test_penalty_batched():
    g = torch.Generator().manual_seed(1)
    Bs = torch.randn(5, 7, 3, generator=g, dtype=torch.float64)
    As = torch.randn(5, 3, 4, generator=g, dtype=torch.float64)
    p = orthogonality_penalty(Bs, As)
    assert p.shape == (5,)
    for k in range(5):
        torch.testing.assert_close(p[k], orthogonality_penalty(Bs[k], As[k]))


def test_penalty_gradcheck():
    g = torch.Generator().manual_seed(2)
    B = torch.randn(5, 3, generator=g, dtype=torch.float64, requires_grad=True)
    A = torch.randn(3, 4, generator=g, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(orthogonality_penalty, (B, A))
    Bb = torch.randn(2, 4, 2, generator=g, dtype=torch.float64, requires_grad=True)
    Ab = torch.randn(2, 2, 3, generator=g, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda b, a: orthogonality_penalty(b, a).sum(), (Bb, Ab))


def test_penalty_gradient_analytic():
    """d/dB ||B^T B - diag||^2 = 4 B (G - diag G) with G = B^T B."""
    g = torch.Generator().manual_seed(3)
    B = torch.randn(6, 3, generator=g, dtype=torch.float64, requires_grad=True)
    A = torch.randn(3, 5, generator=g, dtype=torch.float64, requires_grad=True)
    orthogonality_penalty(B, A).backward()
    with torch.no_grad():
        GB = B.T @ B
        GA = A @ A.T
        torch.testing.assert_close(B.grad, 4 * B @ (GB - torch.diag(torch.diag(GB))))
        torch.testing.assert_close(A.grad, 4 * (GA - torch.diag(torch.diag(GA))) @ A)


def test_residual_normalisation():
    rng = np.random.default_rng(4)
    B = rng.standard_normal((6, 3))
    A = rng.standard_normal((3, 4))
    den = np.linalg.norm(B.T @ B) ** 2 + np.linalg.norm(A @ A.T) ** 2
    res = orthogonality_residual(torch.from_numpy(B), torch.from_numpy(A))
    assert res == pytest.approx(numpy_penalty(B, A) / den, rel=1e-12)
    assert 0.0 < res < 1.0
    # scale invariant (joint scaling), float32 input accepted
    res2 = orthogonality_residual(torch.from_numpy(5 * B).float(), torch.from_numpy(5 * A).float())
    assert res2 == pytest.approx(res, rel=1e-5)
    assert orthogonality_residual(torch.zeros(3, 2), torch.zeros(2, 3)) == 0.0
    with pytest.raises(ValueError):
        orthogonality_residual(torch.zeros(2, 3, 2), torch.zeros(2, 2, 3))


def test_shape_errors():
    with pytest.raises(ValueError):
        orthogonality_penalty(torch.ones(4, 2), torch.ones(3, 4))
    with pytest.raises(ValueError):
        singular_value_proxy(torch.ones(4), torch.ones(1, 4))


# ----------------------------------------------------------------------------- proxy


def test_proxy_equals_singular_values_for_orthogonal_factors():
    for seed, (d, r, l) in enumerate([(8, 3, 5), (20, 6, 9), (4, 4, 4)]):
        B, A = orthogonal_factors(seed + 10, d, r, l)
        proxy = singular_value_proxy(B, A)
        assert proxy.shape == (r,)
        sv = torch.linalg.svdvals(B @ A)[:r]
        torch.testing.assert_close(torch.sort(proxy, descending=True).values, sv)
        # SOFT's importance (eq. 3) is proportional to the squared singular values
        w = soft_importance(B, A)
        w = torch.sort(w, descending=True).values
        torch.testing.assert_close(w / w.sum(), sv**2 / (sv**2).sum())
        # ||B A||_F^2 = sum_i ||B[:, i]||^2 ||A[i, :]||^2 (section III-A)
        torch.testing.assert_close(torch.linalg.matrix_norm(B @ A) ** 2, (proxy**2).sum())


def test_proxy_direct_and_batched():
    rng = np.random.default_rng(5)
    B = rng.standard_normal((3, 6, 4))
    A = rng.standard_normal((3, 4, 5))
    p = singular_value_proxy(torch.from_numpy(B), torch.from_numpy(A))
    assert p.shape == (3, 4)
    for k in range(3):
        for i in range(4):
            expected = np.sqrt(np.sum(B[k, :, i] ** 2)) * np.sqrt(np.sum(A[k, i, :] ** 2))
            assert float(p[k, i]) == pytest.approx(expected, rel=1e-12)


# ----------------------------------------------------------------------------- eq. (12)


def numpy_cov(Bs: list[np.ndarray], As: list[np.ndarray], w: list[float]) -> np.ndarray:
    p = np.asarray(w, dtype=float) / np.sum(w)
    d, l = Bs[0].shape[0], As[0].shape[1]
    e_prod = np.zeros((d, l))
    b_bar = np.zeros_like(Bs[0])
    a_bar = np.zeros_like(As[0])
    for k in range(len(Bs)):
        e_prod += p[k] * (Bs[k] @ As[k])
        b_bar += p[k] * Bs[k]
        a_bar += p[k] * As[k]
    return e_prod - b_bar @ a_bar


def test_covariance_both_forms_and_numpy():
    rng = np.random.default_rng(6)
    K, d, r, l = 5, 7, 3, 4
    Bs = [rng.standard_normal((d, r)) for _ in range(K)]
    As = [rng.standard_normal((r, l)) for _ in range(K)]
    w = [3.0, 1.0, 0.5, 2.0, 7.0]
    tB = [torch.from_numpy(b) for b in Bs]
    tA = [torch.from_numpy(a) for a in As]
    cov = covariance_term(tB, tA, w)
    assert cov.shape == (d, l)
    # form 1: E_k[B_k A_k] - B_bar A_bar
    p = torch.tensor(w, dtype=torch.float64) / sum(w)
    e_prod = sum(p[k] * tB[k] @ tA[k] for k in range(K))
    b_bar = sum(p[k] * tB[k] for k in range(K))
    a_bar = sum(p[k] * tA[k] for k in range(K))
    torch.testing.assert_close(cov, e_prod - b_bar @ a_bar)
    # form 2: E_k[(B_k - B_bar)(A_k - A_bar)]
    torch.testing.assert_close(cov, sum(p[k] * (tB[k] - b_bar) @ (tA[k] - a_bar) for k in range(K)))
    # direct numpy
    np.testing.assert_allclose(cov.numpy(), numpy_cov(Bs, As, w), rtol=1e-10, atol=1e-12)
    assert covariance_norm(tB, tA, w) == pytest.approx(
        np.linalg.norm(numpy_cov(Bs, As, w)), rel=1e-10
    )
    # weights are normalised: scaling them changes nothing
    torch.testing.assert_close(covariance_term(tB, tA, [10 * x for x in w]), cov)
    # default weights are uniform
    torch.testing.assert_close(covariance_term(tB, tA), covariance_term(tB, tA, [1.0] * K))


def test_covariance_zero_cases():
    rng = np.random.default_rng(7)
    B = torch.from_numpy(rng.standard_normal((5, 2)))
    A = torch.from_numpy(rng.standard_normal((2, 3)))
    assert covariance_norm([B, B, B], [A, A, A]) == pytest.approx(0.0, abs=1e-14)
    assert covariance_norm([B], [A]) == 0.0
    # clients that differ only in B (or only in A) have zero covariance
    B2 = torch.from_numpy(rng.standard_normal((5, 2)))
    assert covariance_norm([B, B2], [A, A]) == pytest.approx(0.0, abs=1e-14)


def test_covariance_errors():
    B = torch.ones(3, 2)
    A = torch.ones(2, 4)
    with pytest.raises(ValueError):
        covariance_term([B, B], [A])
    with pytest.raises(ValueError):
        covariance_term([], [])
    with pytest.raises(ValueError):
        covariance_term([B], [A], [0.0])
    with pytest.raises(ValueError):
        covariance_term([B, B], [A, A], [1.0, -1.0])
    with pytest.raises(ValueError):
        covariance_term([B, B], [A, A], [1.0])
    with pytest.raises(ValueError):
        covariance_term([B], [torch.ones(3, 4)])
