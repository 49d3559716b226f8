"""Numerical faults: finite-value checks of a round's tensors, and the words of their errors.

A non-finite value stops the run with a one-line ``SimulationError`` naming the round (and the
client, for a client's values), raised before the round's record exists, so the runner keeps
every round before it. Where each value is checked:

- a client's training loss, its trained state (before the algorithm compresses it) and its
  message; the global state after aggregation: ``wirelessfl.learners.federated`` with
  :func:`non_finite`, so every algorithm, plug-ins included, gets the check without writing it;
- the controller's decision, the round's metrics and its evaluation:
  ``wirelessfl.sim.simulator``. A NaN metric means "not measured this round"; only a measured
  non-finite value (an infinity, or a NaN loss when a client arrived) is a fault;
- the network-only loss model: ``wirelessfl.learners.surrogate``; Theorem 1 constants that
  overflow the bound are refused when the controller is built (``wirelessfl.controllers``).

Torch is imported inside the functions (this package must import without it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["KEPT", "non_finite"]

#: Said of a run stopped by a numerical fault: the runner writes every completed round first.
KEPT = "the rounds before it are kept."


def non_finite(
    tensors: Mapping[str, Any], *, label: Callable[[str], str] | None = None
) -> str | None:
    """``None`` if every floating tensor in ``tensors`` is finite, else what the first bad holds.

    The common case is one 2-norm per tensor (a NaN or an infinity makes it non-finite), stacked
    per device and read back once: about 7x cheaper than ``isfinite(t).all()`` per tensor on a
    CPU. A non-finite norm is confirmed with ``isfinite`` (a norm can also overflow on finite
    values above ~1e19 in float32).

    Args:
        tensors: name -> value; values that are not floating-point (or complex) tensors are
            skipped.
        label: how to name a tensor in the description (default: its key).

    Returns:
        ``None``, or e.g. ``"nan in 3 of 64 values of lora_A of layer fc1"``.
    """
    import torch

    floating = [
        (name, t.detach())
        for name, t in tensors.items()
        if isinstance(t, torch.Tensor) and (t.is_floating_point() or t.is_complex())
    ]
    norms: dict[torch.device, list[torch.Tensor]] = {}
    for _, t in floating:
        norms.setdefault(t.device, []).append(torch.linalg.vector_norm(t))
    if all(bool(torch.isfinite(torch.stack(group)).all()) for group in norms.values()):
        return None
    for name, t in floating:
        bad = ~torch.isfinite(t)
        n_bad = int(bad.sum())
        if n_bad:
            values = t[bad]
            if bool(torch.isnan(values).any()):
                kind = "nan"
            elif bool((values.real > 0).any()):
                kind = "inf"
            else:
                kind = "-inf"
            where = label(name) if label is not None else name
            return f"{kind} in {n_bad} of {t.numel()} values of {where}"
    return None  # only finite values too large for a norm
