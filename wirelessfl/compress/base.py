"""Sparsifier interface, registry and the shared masking kernels.

A sparsifier decides *which* entries of one adapted layer's LoRA pair survive: given
``B`` of shape ``(d, r)``, ``A`` of shape ``(r, l)`` and an integer budget ``n_keep`` it returns
two boolean masks of the same shapes with exactly ``n_keep`` ``True`` entries in total (except
``"none"``, which keeps everything). Everything else (the sparse tensors, the error-feedback
memory, the payload bits) is derived from the masks.

Index conventions (used for deterministic tie-breaking, "lower index first"):

* the *flat order* of a layer is ``B`` flattened row-major, followed by ``A`` flattened
  row-major (``r*d + r*l = r(d+l)`` positions);
* the *component view* is the ``(r, d+l)`` matrix whose row ``i`` is ``B[:, i]`` (rows
  ``0..d-1`` of ``B``) followed by ``A[i, :]`` (columns ``0..l-1``), i.e. the concatenated
  representation ``[theta_B^T  theta_A]`` of the paper's eq. (6).

Adding your own sparsifier
--------------------------
Write one file, e.g. ``wirelessfl/compress/my_rule.py``::

    from wirelessfl.compress.base import Sparsifier


    class MyRuleSparsifier(Sparsifier):
        \"\"\"One-line description (shown in error messages and docs).\"\"\"

        def masks(self, B, A, n_keep, generator=None):
            self.check_inputs(B, A, n_keep)
            ...  # return (mask_B bool (d, r), mask_A bool (r, l)) with n_keep True entries

and add one line to ``SPARSIFIERS`` in ``wirelessfl/registries.py``::

    "my_rule": "wirelessfl.compress.my_rule:MyRuleSparsifier",

(Code outside the package calls ``SPARSIFIERS.register("my_rule", MyRuleSparsifier)``, or uses
it as a class decorator.) Masks must be deterministic given ``generator`` and must not modify
``B`` or ``A``.
"""

from __future__ import annotations

import math
import operator
from abc import ABC, abstractmethod
from typing import ClassVar

import torch
from torch import Tensor

from channels.payload import kept_values
from wirelessfl.registries import SPARSIFIERS

__all__ = [
    "SPARSIFIERS",
    "Sparsifier",
    "apply_masks",
    "budget_for",
    "check_pair",
    "check_ratio",
    "component_topk_masks",
    "flat_topk_masks",
    "get_sparsifier",
    "split_flat_mask",
]


class Sparsifier(ABC):
    """Chooses which entries of a LoRA pair ``(B (d, r), A (r, l))`` are transmitted."""

    name: str = ""
    """Registry name of the instance (set by :func:`get_sparsifier`)."""

    ignores_budget: ClassVar[bool] = False
    """True for sparsifiers that keep everything regardless of ``n_keep`` (``"none"``)."""

    takes_importance: ClassVar[bool] = False
    """True for sparsifiers whose :meth:`masks` accepts ``weights_from=(B_w, A_w)``: a pair
    shaped like ``(B, A)`` that importance weights are computed from instead of ``B``, ``A``
    (``"soft"``, eq. 3). :func:`~wirelessfl.compress.compress_update` passes it only to them."""

    @abstractmethod
    def masks(
        self,
        B: Tensor,
        A: Tensor,
        n_keep: int,
        generator: torch.Generator | None = None,
    ) -> tuple[Tensor, Tensor]:
        """Boolean keep-masks ``(mask_B (d, r), mask_A (r, l))`` on ``B.device``.

        Exactly ``n_keep`` entries are ``True`` in total, ``0 <= n_keep <= r(d+l)``.
        """

    def check_inputs(self, B: Tensor, A: Tensor, n_keep: int) -> tuple[int, int, int]:
        """Validate shapes and budget; return ``(d, r, l)``."""
        d, r, l = check_pair(B, A)
        n_total = r * (d + l)
        if isinstance(n_keep, bool):
            raise TypeError("n_keep must be an int, got bool")
        n_keep = operator.index(n_keep)  # TypeError for non-integers
        if not 0 <= n_keep <= n_total:
            raise ValueError(f"n_keep must be in [0, r(d+l)] = [0, {n_total}], got {n_keep}")
        return d, r, l

    def sparsify(
        self,
        B: Tensor,
        A: Tensor,
        n_keep: int,
        generator: torch.Generator | None = None,
    ) -> tuple[Tensor, Tensor]:
        """``(B_sparse (d, r), A_sparse (r, l))``: inputs with the unkept entries set to zero."""
        mask_B, mask_A = self.masks(B, A, n_keep, generator)
        return apply_masks(B, A, mask_B, mask_A)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


def get_sparsifier(name: str) -> Sparsifier:
    """A fresh instance of the sparsifier registered as ``name`` in ``SPARSIFIERS``.

    Raises ``ValueError`` listing the accepted names when ``name`` is unknown.
    """
    sparsifier = SPARSIFIERS.load(name)()
    sparsifier.name = name
    return sparsifier


# ----------------------------------------------------------------------------- helpers


def check_pair(B: Tensor, A: Tensor) -> tuple[int, int, int]:
    """Check that ``B (d, r)`` and ``A (r, l)`` form a LoRA pair; return ``(d, r, l)``."""
    if not isinstance(B, Tensor) or not isinstance(A, Tensor):
        raise TypeError("B and A must be torch.Tensor")
    if B.ndim != 2 or A.ndim != 2:
        raise ValueError(
            f"expected B of shape (d, r) and A of shape (r, l), got {tuple(B.shape)} "
            f"and {tuple(A.shape)}"
        )
    d, r = B.shape
    r_a, l = A.shape
    if r != r_a:
        raise ValueError(
            f"shape mismatch: B {tuple(B.shape)} has rank {r} but A {tuple(A.shape)} has {r_a}"
        )
    if B.device != A.device:
        raise ValueError(f"B and A are on different devices ({B.device} vs {A.device})")
    return int(d), int(r), int(l)


def check_ratio(ratio: float) -> float:
    """Return ``ratio`` as a float; ``ValueError`` naming ``ratio`` unless finite in [0, 1]."""
    if isinstance(ratio, bool):
        raise ValueError(f"ratio must be a number in [0, 1], got {ratio!r}")
    try:
        ratio_f = float(ratio)
    except (TypeError, ValueError):
        raise ValueError(f"ratio must be a number in [0, 1], got {ratio!r}") from None
    if not (math.isfinite(ratio_f) and 0.0 <= ratio_f <= 1.0):
        raise ValueError(f"ratio must be in [0, 1], got {ratio!r}")
    return ratio_f


def budget_for(ratio: float, r: int, d: int, l: int) -> int:
    """Per-layer budget ``round(ratio * r * (d + l))`` (paper: ``O_k r(d+l)`` kept elements).

    Python's :func:`round` is used (round-half-to-even), so e.g. ``0.5 * 5 -> 2``.
    Raises ``ValueError`` naming ``ratio`` when it is not a finite number in ``[0, 1]``.
    """
    return kept_values(check_ratio(ratio), r * (d + l))


def apply_masks(B: Tensor, A: Tensor, mask_B: Tensor, mask_A: Tensor) -> tuple[Tensor, Tensor]:
    """Zero the unkept entries (``torch.where``, so NaN/inf outside the mask do not leak)."""
    return (
        torch.where(mask_B, B, torch.zeros((), dtype=B.dtype, device=B.device)),
        torch.where(mask_A, A, torch.zeros((), dtype=A.dtype, device=A.device)),
    )


def _magnitude_dtype(B: Tensor, A: Tensor) -> torch.dtype:
    dt = torch.promote_types(B.dtype, A.dtype)
    if dt.is_complex:
        return torch.float64
    if not dt.is_floating_point:
        return torch.float64
    return dt


def split_flat_mask(flat: Tensor, d: int, r: int, l: int) -> tuple[Tensor, Tensor]:
    """Split a flat-order mask of length ``r(d+l)`` into ``(mask_B (d, r), mask_A (r, l))``."""
    return flat[: d * r].reshape(d, r), flat[d * r :].reshape(r, l)


def flat_topk_masks(B: Tensor, A: Tensor, n_keep: int) -> tuple[Tensor, Tensor]:
    """Global top-``n_keep`` by magnitude over all entries of ``B (d, r)`` and ``A (r, l)``.

    Ties are broken by the flat order (``B`` row-major, then ``A`` row-major; lower first).
    """
    d, r = B.shape
    l = A.shape[1]
    with torch.no_grad():
        ct = _magnitude_dtype(B, A)
        mag = torch.cat([B.detach().abs().reshape(-1).to(ct), A.detach().abs().reshape(-1).to(ct)])
        order = torch.sort(mag, descending=True, stable=True).indices
        flat = torch.zeros(mag.shape[0], dtype=torch.bool, device=B.device)
        flat[order[:n_keep]] = True
    return split_flat_mask(flat, d, r, l)


def component_topk_masks(B: Tensor, A: Tensor, counts: Tensor) -> tuple[Tensor, Tensor]:
    """Per rank component ``i``, keep the top-``counts[i]`` entries of ``B[:, i] ∪ A[i, :]``.

    Args:
        B: ``(d, r)``.
        A: ``(r, l)``.
        counts: integer tensor ``(r,)`` with ``0 <= counts[i] <= d + l``.

    Returns:
        ``(mask_B (d, r), mask_A (r, l))``. Magnitudes are ranked within each component's
        ``d + l`` candidates (component view, eq. 6); ties go to the lower position (the
        ``B`` part first, then lower row/column index).
    """
    d, r = B.shape
    l = A.shape[1]
    with torch.no_grad():
        ct = _magnitude_dtype(B, A)
        comp = torch.cat([B.detach().abs().to(ct).T, A.detach().abs().to(ct)], dim=1)  # (r, d+l)
        order = torch.sort(comp, dim=1, descending=True, stable=True).indices
        ranks = torch.empty_like(order)
        positions = torch.arange(d + l, device=B.device).expand(r, d + l)
        ranks.scatter_(1, order, positions)  # ranks[i, j] = position of entry j in row i's order
        keep = ranks < counts.to(device=B.device, dtype=ranks.dtype).reshape(r, 1)
    return keep[:, :d].T.contiguous(), keep[:, d:].contiguous()
