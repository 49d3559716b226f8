"""LoRA maths used by SOFT and the convergence analysis (paper sections III-A, IV-A).

Shapes follow the paper: ``B`` (theta_B) is ``(d, r)``, ``A`` (theta_A) is ``(r, l)`` and the
adapted weight is ``theta_P + (alpha / r) B A`` (section II-A).

* :func:`orthogonality_penalty` - eq. (2)'s regularizer without zeta (differentiable, batched);
* :func:`orthogonality_residual` - the same, normalised to [0, 1], for Fig. 2-style plots;
* :func:`singular_value_proxy` - ``||B[:, i]|| ||A[i, :]||`` (Assumption 2, eq. 11);
* :func:`covariance_term` / :func:`covariance_norm` - ``Cov(theta_B, theta_A)`` of eq. (12).

torch only; no dependency on the rest of the package.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

__all__ = [
    "covariance_norm",
    "covariance_term",
    "orthogonality_penalty",
    "orthogonality_residual",
    "singular_value_proxy",
]


def _check_factors(B: Tensor, A: Tensor) -> None:
    if B.ndim < 2 or A.ndim < 2:
        raise ValueError(
            f"expected B (..., d, r) and A (..., r, l), got {tuple(B.shape)} and {tuple(A.shape)}"
        )
    if B.shape[-1] != A.shape[-2]:
        raise ValueError(
            f"shape mismatch: B {tuple(B.shape)} has rank {B.shape[-1]} but A "
            f"{tuple(A.shape)} has {A.shape[-2]}"
        )


def _grams(B: Tensor, A: Tensor) -> tuple[Tensor, Tensor]:
    """``(B^T B, A A^T)``, each ``(..., r, r)``."""
    return B.mT @ B, A @ A.mT


def _offdiag_sq(G: Tensor) -> Tensor:
    """``||G - diag(G)||_F^2`` over the last two dims of ``G (..., r, r)`` -> ``(...)``."""
    r = G.shape[-1]
    off = ~torch.eye(r, dtype=torch.bool, device=G.device)
    return (
        torch.where(off, G, torch.zeros((), dtype=G.dtype, device=G.device))
        .square()
        .sum(dim=(-2, -1))
    )


def orthogonality_penalty(B: Tensor, A: Tensor) -> Tensor:
    """Orthogonality regularizer of eq. (2) without the factor zeta.

    ``||B^T B - diag(B^T B)||_F^2 + ||A A^T - diag(A A^T)||_F^2``: zero iff the columns of
    ``B`` are mutually orthogonal and the rows of ``A`` are mutually orthogonal.

    Args:
        B: ``(..., d, r)``.
        A: ``(..., r, l)``; leading (batch) dims broadcast against ``B``'s, e.g. one pair
            per client stacked on dim 0.

    Returns:
        Differentiable tensor of shape ``(...)`` (a 0-d scalar for unbatched inputs). The
        training loss adds ``zeta * penalty`` per adapted layer (docs/training.md).
    """
    _check_factors(B, A)
    GB, GA = _grams(B, A)
    return _offdiag_sq(GB) + _offdiag_sq(GA)


def orthogonality_residual(B: Tensor, A: Tensor) -> float:
    """Normalised orthogonality residual in ``[0, 1]`` for one pair ``B (d, r)``, ``A (r, l)``.

    Normalisation: the eq. (2) penalty divided by the total Gram mass,
    ``penalty / (||B^T B||_F^2 + ||A A^T||_F^2)``, i.e. the fraction of the squared Frobenius
    mass of the two Gram matrices that lies off their diagonals. 0 means orthogonal factors
    (and is returned for ``B = A = 0``); it is scale-invariant, so runs and layers of
    different magnitudes can share a Fig. 2-style plot.
    """
    _check_factors(B, A)
    if B.ndim != 2 or A.ndim != 2:
        raise ValueError("orthogonality_residual takes one unbatched pair B (d, r), A (r, l)")
    with torch.no_grad():
        GB, GA = _grams(B.detach().to(torch.float64), A.detach().to(torch.float64))
        num = float(_offdiag_sq(GB) + _offdiag_sq(GA))
        den = float(GB.square().sum() + GA.square().sum())
    return num / den if den > 0 else 0.0


def singular_value_proxy(B: Tensor, A: Tensor) -> Tensor:
    """``s_i = ||B[:, i]||_2 ||A[i, :]||_2``, shape ``(..., r)``.

    Under the orthogonality that eq. (2) enforces these are the singular values of ``B A``
    (Assumption 2 writes sigma(theta_r) = max_i ||B[:, i]|| ||A[i, :]||). Section III-B writes
    the squared form ``||B[:, i]||^2 ||A[i, :]||^2`` as "the i-th singular value"; SOFT's budget
    (eq. 3) uses those squares, i.e. ``singular_value_proxy(B, A) ** 2``.

    Args:
        B: ``(..., d, r)``.
        A: ``(..., r, l)``.
    """
    _check_factors(B, A)
    return torch.linalg.vector_norm(B, dim=-2) * torch.linalg.vector_norm(A, dim=-1)


def _stack_clients(
    B_list: Sequence[Tensor], A_list: Sequence[Tensor], weights: Sequence[float] | Tensor | None
) -> tuple[Tensor, Tensor, Tensor]:
    if len(B_list) != len(A_list):
        raise ValueError(f"got {len(B_list)} B matrices but {len(A_list)} A matrices")
    if len(B_list) == 0:
        raise ValueError("need at least one client")
    Bs = torch.stack(list(B_list))  # (K, d, r)
    As = torch.stack(list(A_list))  # (K, r, l)
    if Bs.ndim != 3 or As.ndim != 3:
        raise ValueError("each B must be (d, r) and each A (r, l)")
    _check_factors(Bs, As)
    dtype = torch.promote_types(Bs.dtype, As.dtype)
    if not dtype.is_floating_point:
        dtype = torch.get_default_dtype()
    K = Bs.shape[0]
    if weights is None:
        p = torch.full((K,), 1.0 / K, dtype=dtype, device=Bs.device)
    else:
        p = torch.as_tensor(weights, dtype=torch.float64).to(Bs.device)
        if p.shape != (K,):
            raise ValueError(f"weights must have shape ({K},), got {tuple(p.shape)}")
        if not bool(torch.isfinite(p).all()) or bool((p < 0).any()) or float(p.sum()) <= 0:
            raise ValueError("weights must be finite, non-negative and not all zero")
        p = (p / p.sum()).to(dtype)
    return Bs.to(dtype), As.to(dtype), p


def covariance_term(
    B_list: Sequence[Tensor],
    A_list: Sequence[Tensor],
    weights: Sequence[float] | Tensor | None = None,
) -> Tensor:
    """``Cov(theta_B, theta_A)`` of eq. (12), shape ``(d, l)``.

    ``E_k[B_k A_k] - B_bar A_bar = E_k[(B_k - B_bar)(A_k - A_bar)]`` with
    ``E_k[X_k] = sum_k p_k X_k``, ``p_k = weights_k / sum_j weights_j`` (uniform when
    ``weights`` is None; the paper uses ``p_k = |D_k| / |D|``), ``B_bar = E_k[B_k]``,
    ``A_bar = E_k[A_k]``. It is what aggregating the factors separately (eq. 1) loses
    relative to aggregating the products. Computed in the centred form (no cancellation).

    Args:
        B_list: K tensors ``(d, r)``.
        A_list: K tensors ``(r, l)``.
        weights: K non-negative numbers, not all zero, or None.
    """
    Bs, As, p = _stack_clients(B_list, A_list, weights)
    B_bar = torch.einsum("k,kdr->dr", p, Bs)
    A_bar = torch.einsum("k,krl->rl", p, As)
    return torch.einsum("k,kdr,krl->dl", p, Bs - B_bar, As - A_bar)


def covariance_norm(
    B_list: Sequence[Tensor],
    A_list: Sequence[Tensor],
    weights: Sequence[float] | Tensor | None = None,
) -> float:
    """Frobenius norm ``||Cov(theta_B, theta_A)||_F`` of :func:`covariance_term` (eq. 12)."""
    with torch.no_grad():
        return float(torch.linalg.matrix_norm(covariance_term(B_list, A_list, weights)))
