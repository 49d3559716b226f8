"""SOFT: sparsified orthogonal fine-tuning (paper section III-B, eq. 3, Algorithm 1 line 9).

With orthogonal factors (eq. 2) the squared Frobenius norm of ``B @ A`` splits over the rank
components, ``||B A||_F^2 = sum_i ||B[:, i]||^2 ||A[i, :]||^2``, so component ``i``'s importance
is ``w_i = ||B[:, i]||_2^2 ||A[i, :]||_2^2`` (the paper calls this "the i-th singular value"; it
is the square of the proxy in :func:`wirelessfl.lora_math.singular_value_proxy`).

Reading of eq. (3) implemented here:

* by default the importances are computed from the matrices being sparsified (with error
  feedback these are ``u = m + Delta``, eqs. 4-7). This is a reading: eq. (2) makes the
  trained *factors* ``theta_B, theta_A`` orthogonal, and the decomposition above holds for
  them, not for their updates (``Delta B Delta A`` is not the change of ``B A``, and the
  update's columns and rows need not be orthogonal). The alternative reading computes the
  weights from the client's local factors after training, ``weights_from=(theta_B, theta_A)``
  (``strategy.importance: factors``), while the entries kept are still chosen, and sent, from
  ``u``;
* the real shares ``o_i = n_keep * w_i / sum_j w_j`` become integers summing exactly to
  ``n_keep`` by largest-remainder rounding, each capped at ``d + l`` with the overflow
  redistributed in proportion to the other components' weights until none exceeds
  (:func:`wirelessfl.compress.budget.allocate_budget`); all-zero importances share uniformly;
* component ``i`` keeps its top-``o_i`` entries by magnitude among the ``d + l`` entries of
  ``B[:, i]`` and ``A[i, :]`` taken together; ties go to the lower position (``B`` part first,
  then lower index).
"""

from __future__ import annotations

import torch
from torch import Tensor

from wirelessfl.compress.base import Sparsifier, component_topk_masks
from wirelessfl.compress.budget import allocate_budget

__all__ = ["SoftSparsifier", "soft_importance"]

LoRAPair = tuple[Tensor, Tensor]


def soft_importance(B: Tensor, A: Tensor) -> Tensor:
    """Component importances ``w_i = ||B[:, i]||^2 ||A[i, :]||^2`` (eq. 3), ``(r,)`` float64.

    Computed in float64 on rescaled norms (divided by the largest column/row norm), which
    leaves the proportions of eq. (3) unchanged and avoids under/overflow.
    """
    with torch.no_grad():
        nb = torch.linalg.vector_norm(B.detach().to(torch.float64), dim=0)  # (r,)
        na = torch.linalg.vector_norm(A.detach().to(torch.float64), dim=1)  # (r,)
        if nb.numel() and nb.max() > 0:
            nb = nb / nb.max()
        if na.numel() and na.max() > 0:
            na = na / na.max()
        return (nb * na) ** 2


class SoftSparsifier(Sparsifier):
    """SOFT: per-component budgets proportional to ``||B[:, i]||^2 ||A[i, :]||^2`` (eq. 3)."""

    takes_importance = True

    def component_budget(
        self, B: Tensor, A: Tensor, n_keep: int, weights_from: LoRAPair | None = None
    ) -> Tensor:
        """Integer budgets ``o (r,)`` (int64, on CPU) summing to ``n_keep``, each ``<= d + l``.

        The weights of eq. (3) come from ``weights_from`` (a pair shaped like ``(B, A)``, e.g.
        the local factors) when given, else from ``B`` and ``A`` themselves.
        """
        d, r, l = self.check_inputs(B, A, n_keep)
        if r == 0:
            return torch.zeros(0, dtype=torch.int64)
        if weights_from is None:
            w = soft_importance(B, A)
        else:
            wB, wA = weights_from
            if tuple(wB.shape) != (d, r) or tuple(wA.shape) != (r, l):
                raise ValueError(
                    f"weights_from shapes {tuple(wB.shape)}, {tuple(wA.shape)} do not match "
                    f"B {tuple(B.shape)}, A {tuple(A.shape)}"
                )
            w = soft_importance(wB, wA)
        return torch.from_numpy(allocate_budget(w, n_keep, d + l))

    def masks(
        self,
        B: Tensor,
        A: Tensor,
        n_keep: int,
        generator: torch.Generator | None = None,
        *,
        weights_from: LoRAPair | None = None,
    ) -> tuple[Tensor, Tensor]:
        """Keep-masks ``(mask_B (d, r), mask_A (r, l))``; deterministic, ``generator`` unused.

        Component ``i`` keeps its top-``o_i`` entries of ``B[:, i]`` and ``A[i, :]``, with the
        budgets ``o`` of :meth:`component_budget` (weights from ``weights_from`` if given).
        """
        counts = self.component_budget(B, A, n_keep, weights_from)
        return component_topk_masks(B, A, counts)
