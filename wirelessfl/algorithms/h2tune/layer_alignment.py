"""H2Tune's relation-guided layer alignment (§4.3): a client's per-block shared matrices R_k
(L_k blocks) mapped onto the server's L_g global slots and back through the relation matrix
Omega_k (L_k, L_g).

From "H2Tune: Federated Foundation Model Fine-Tuning with Hybrid Heterogeneity" (Guo et al.,
arXiv 2507.22633):

    R_{k->g}[m] = sum_l Omega[l, m] R_k[l]                                  (eq. (4))
    R_{g->k}[l] = sum_m Omega[l, m] R_g[m]                                  (eq. (5))

Both are einsums, differentiable in Omega and in the matrices. The paper gives no
initialisation of Omega; ``initial_alignment`` is the project's depth-block reading.
"""

from __future__ import annotations

import math

import torch

__all__ = ["initial_alignment", "to_global", "to_local"]


def initial_alignment(n_local: int, n_global: int) -> torch.Tensor:
    """Depth-block initialisation of Omega, ``(n_local, n_global)``, default float dtype.

    The project's reading (the paper gives no initialisation): blocks at the same relative
    depth are related.

    * ``n_global >= n_local``: global slot m belongs to local layer l(m) = floor(m n_local /
      n_global); Omega[l, m] = 1 / sqrt(n_l) for the n_l slots of layer l, 0 elsewhere. The rows
      are orthonormal (Omega Omega^T = I), so eq. (5) after eq. (4) is the identity.
    * ``n_global < n_local``: local layer l belongs to slot m(l) = floor(l n_global / n_local);
      Omega[l, m(l)] = 1 / sqrt(c_m) for the c_m local layers of slot m. The columns are
      orthonormal, and eq. (5) after eq. (4) replaces each layer by the mean of its slot.
    """
    if n_local < 1 or n_global < 1:
        raise ValueError(f"layer counts must be >= 1, got n_local={n_local}, n_global={n_global}")
    omega = torch.zeros(n_local, n_global, dtype=torch.float64)
    if n_global >= n_local:
        owner = [m * n_local // n_global for m in range(n_global)]  # l(m)
        for m, l in enumerate(owner):
            omega[l, m] = 1.0 / math.sqrt(owner.count(l))
    else:
        slot = [l * n_global // n_local for l in range(n_local)]  # m(l)
        for l, m in enumerate(slot):
            omega[l, m] = 1.0 / math.sqrt(slot.count(m))
    return omega.to(torch.get_default_dtype())


def _check(matrices: torch.Tensor, omega: torch.Tensor, axis: int, what: str) -> None:
    if omega.dim() != 2 or matrices.dim() != 3 or matrices.shape[0] != omega.shape[axis]:
        raise ValueError(
            f"{what}: matrices {tuple(matrices.shape)} do not match Omega {tuple(omega.shape)} "
            f"on Omega's dimension {axis}"
        )


def to_global(r_local: torch.Tensor, omega: torch.Tensor) -> torch.Tensor:
    """Eq. (4): ``(L_k, r, r)`` local -> ``(L_g, r, r)`` global, R[m] = sum_l Omega[l, m] R_k[l]."""
    _check(r_local, omega, 0, "to_global")
    return torch.einsum("lm,lij->mij", omega, r_local)


def to_local(r_global: torch.Tensor, omega: torch.Tensor) -> torch.Tensor:
    """Eq. (5): ``(L_g, r, r)`` global -> ``(L_k, r, r)`` local, R[l] = sum_m Omega[l, m] R_g[m]."""
    _check(r_global, omega, 1, "to_local")
    return torch.einsum("lm,mij->lij", omega, r_global)
