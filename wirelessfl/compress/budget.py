"""Integer budget allocation for SOFT (eq. 3): proportional, capped, exact sum.

Eq. (3) gives component ``i`` the real-valued share
``o_i = O r(d+l) * w_i / sum_j w_j`` of the layer's budget. Entries are indivisible and a
component has only ``d + l`` candidates, so :func:`allocate_budget` turns the shares into
integers that

* sum exactly to ``total`` (largest-remainder / Hamilton rounding, ties to the lower index),
* never exceed ``capacity`` (a share above the cap is fixed at the cap and its overflow is
  redistributed to the remaining components in proportion to their weights, repeating until no
  share exceeds the cap).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

__all__ = ["allocate_budget"]


def _as_weights(weights: np.ndarray | Tensor) -> np.ndarray:
    if isinstance(weights, Tensor):
        w = weights.detach().to("cpu", torch.float64).numpy()
    else:
        w = np.asarray(weights, dtype=np.float64)
    if w.ndim != 1:
        raise ValueError(f"weights must be 1-D, got shape {w.shape}")
    if not np.all(np.isfinite(w)):
        raise ValueError("weights must be finite")
    if np.any(w < 0):
        raise ValueError("weights must be non-negative")
    return w


def allocate_budget(weights: np.ndarray | Tensor, total: int, capacity: int) -> np.ndarray:
    """Split ``total`` items over bins in proportion to ``weights``, at most ``capacity`` each.

    Args:
        weights: ``(n,)`` non-negative finite weights (SOFT: ``||B[:, i]||^2 ||A[i, :]||^2``).
        total: number of items to place (SOFT: ``round(O r(d+l))``), ``0 <= total``.
        capacity: per-bin cap (SOFT: ``d + l``).

    Returns:
        ``(n,)`` ``int64`` array ``o`` with ``o.sum() == total`` and ``0 <= o <= capacity``.

    Rules:
        * quotas ``q_i = R * w_i / sum_{free} w`` over the not-yet-capped bins, ``R`` the items
          not already placed in capped bins; every bin with ``q_i > capacity`` is fixed at
          ``capacity`` and the quotas are recomputed (overflow redistributed in proportion);
        * if all weights (of the free bins) are zero, the free bins share uniformly;
        * each free bin gets ``floor(q_i)``; the remaining items go one each to the bins with the
          largest fractional parts (ties: lower index first), skipping full bins.

    Raises:
        ValueError: ``total > capacity * n``, negative ``total``/``capacity``, or bad weights.
    """
    w = _as_weights(weights)
    n = w.shape[0]
    total = int(total)
    capacity = int(capacity)
    if total < 0 or capacity < 0:
        raise ValueError(f"total and capacity must be >= 0, got {total}, {capacity}")
    if total > capacity * n:
        raise ValueError(
            f"total={total} exceeds the capacity of {n} bins x {capacity} = {capacity * n}"
        )
    out = np.zeros(n, dtype=np.int64)
    if total == 0:
        return out
    if w.max() > 0:
        w = w / w.max()  # proportions are scale-free; avoids overflow in the sums
    capped = np.zeros(n, dtype=bool)
    while True:
        free = ~capped
        if not free.any():  # every bin full (total == capacity * n)
            quota = np.zeros(n)
            break
        remaining = total - capacity * int(capped.sum())
        wf = np.where(free, w, 0.0)
        s = wf.sum()
        if s <= 0:  # no weight left among the free bins: spread uniformly
            wf = free.astype(np.float64)
            s = wf.sum()
        quota = remaining * wf / s  # eq. (3) restricted to the free bins
        over = free & (quota > capacity)
        if not over.any():
            break
        capped |= over
    base = np.minimum(np.floor(quota).astype(np.int64), capacity)
    base[capped] = capacity
    frac = np.where(capped, -1.0, quota - np.floor(quota))
    deficit = total - int(base.sum())
    assert deficit >= 0, "floor of the quotas cannot exceed the total"
    # Largest remainder: stable sort on -frac keeps lower indices first among ties.
    order = np.argsort(-frac, kind="stable")
    while deficit > 0:
        for i in order:
            if deficit == 0:
                break
            if base[i] < capacity:
                base[i] += 1
                deficit -= 1
    out[:] = base
    return out
