"""Per-layer update compression with error feedback (paper section III-C, eqs. 4-7).

For every adapted layer a client holds the update ``Delta = (dB (d, r), dA (r, l))`` (local
minus global LoRA matrices: sparsification acts on updates, eqs. 4-7) and an error memory
``m = (m_B (d, r), m_A (r, l))``. One round of Algorithm 1, lines 7-10:

* ``u = m + Delta``                               (error feedback incorporated, line 8)
* ``sent = S(u)`` with a budget of ``round(O r(d+l))`` entries for that layer (line 9)
* ``m' = m + Delta - sent = u - sent``             (eqs. 4, 5; concatenated form eq. 7)

so ``sent + m' == u`` exactly (each entry of ``u`` is either sent or kept in memory).

Memory is the caller's state: the runtime stores one memory dict per client (memories are
private to a client and persist across the rounds it is scheduled in), passes it back in the
next time that client is compressed, and replaces it with ``CompressedUpdate.memory``. Memory is
LoRA-sized: per layer two tensors shaped like ``B`` and ``A``, i.e. ``r(d+l)`` numbers, never a
dense ``d x l`` matrix.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

import torch
from torch import Tensor

from wirelessfl.compress.base import (
    apply_masks,
    budget_for,
    check_pair,
    check_ratio,
    get_sparsifier,
)

__all__ = ["CompressedUpdate", "LayerCounts", "compress_update"]

LoRAPair = tuple[Tensor, Tensor]


class LayerCounts(NamedTuple):
    """Kept/total entry counts of one layer's ``B (d, r)`` and ``A (r, l)``."""

    kept_B: int
    total_B: int
    kept_A: int
    total_A: int

    @property
    def kept(self) -> int:
        """Entries kept over ``B`` and ``A``."""
        return self.kept_B + self.kept_A

    @property
    def total(self) -> int:
        """``r(d+l)``."""
        return self.total_B + self.total_A


@dataclass(frozen=True)
class CompressedUpdate:
    """What one client uploads for one round, plus its new error memory.

    Attributes:
        sent: layer name -> ``(B_s (d, r), A_s (r, l))``, dense tensors with zeros at the
            unsent positions (same dtype/device as ``m + Delta``).
        memory: layer name -> new memory ``(m_B' (d, r), m_A' (r, l))`` (eqs. 4, 5), or
            ``None`` when error feedback is off.
        n_kept: entries sent, summed over layers.
        n_total: ``sum_l r(d_l + l_l)``, the dense parameter count.
        counts: layer name -> :class:`LayerCounts`: what an algorithm's message declares as
            one index space per layer (``wirelessfl.algorithms.message``, which counts bits).
        masks: layer name -> the keep-masks ``(mask_B (d, r), mask_A (r, l))`` of ``sent``
            (the values the quantiser stage quantises).
    """

    sent: dict[str, LoRAPair]
    memory: dict[str, LoRAPair] | None
    n_kept: int
    n_total: int
    counts: dict[str, LayerCounts] = field(default_factory=dict)
    masks: dict[str, LoRAPair] = field(default_factory=dict)

    @property
    def ratio(self) -> float:
        """Achieved ratio ``n_kept / n_total`` (1.0 for an empty update)."""
        return self.n_kept / self.n_total if self.n_total else 1.0


def compress_update(
    delta: Mapping[str, LoRAPair],
    memory: Mapping[str, LoRAPair] | None,
    *,
    sparsifier: str,
    ratio: float,
    generator: torch.Generator | None = None,
    error_feedback: bool = True,
    importance_from: Mapping[str, LoRAPair] | None = None,
) -> CompressedUpdate:
    """Sparsify one client's per-layer LoRA update with error feedback (eqs. 4-7).

    Args:
        delta: layer name -> ``(dB (d, r), dA (r, l))``.
        memory: layer name -> ``(m_B (d, r), m_A (r, l))`` from this client's previous call,
            or ``None`` (all zero). A layer absent from ``memory`` starts from zero memory; a
            memory layer absent from ``delta`` is an error (it would be silently lost).
            Ignored when ``error_feedback`` is False.
        sparsifier: registry name (``"soft"``, ``"topk"``, ``"random"``, ``"structured"``,
            ``"none"``, ...).
        ratio: ``O`` in ``[0, 1]``; each layer keeps ``round(O r(d+l))`` entries.
        generator: drives ``"random"``; layers draw in ``delta``'s iteration order.
        error_feedback: when False, ``u = Delta`` and the returned memory is ``None``.
        importance_from: layer name -> a pair shaped like ``(dB, dA)`` that a sparsifier with
            importance weights (``takes_importance``: SOFT's eq. 3) computes them from, e.g.
            the client's local factors after training; default (``None``): from ``u`` itself.
            The entries kept are chosen from ``u`` either way. Ignored by the other
            sparsifiers.

    Returns:
        :class:`CompressedUpdate` with ``sent[name] = S(u)`` and ``memory[name] = u - sent``.
    """
    sp = get_sparsifier(sparsifier)
    check_ratio(ratio)  # raises naming `ratio`, even for an empty update
    if memory is not None and error_feedback:
        extra = sorted(set(memory) - set(delta))
        if extra:
            raise ValueError(f"memory has layers not present in delta: {extra}")

    sent: dict[str, LoRAPair] = {}
    new_memory: dict[str, LoRAPair] | None = {} if error_feedback else None
    counts: dict[str, LayerCounts] = {}
    masks: dict[str, LoRAPair] = {}
    for name, (dB, dA) in delta.items():
        d, r, l = check_pair(dB, dA)
        if error_feedback and memory is not None and name in memory:
            mB, mA = memory[name]
            if mB.shape != dB.shape or mA.shape != dA.shape:
                raise ValueError(
                    f"layer {name!r}: memory shapes {tuple(mB.shape)}, {tuple(mA.shape)} do "
                    f"not match update shapes {tuple(dB.shape)}, {tuple(dA.shape)}"
                )
            uB, uA = mB + dB, mA + dA  # Algorithm 1, line 8
        else:
            uB, uA = dB, dA
        n_keep = r * (d + l) if sp.ignores_budget else budget_for(ratio, r, d, l)
        if importance_from is not None and sp.takes_importance:
            mask_B, mask_A = sp.masks(  # type: ignore[call-arg]
                uB, uA, n_keep, generator, weights_from=importance_from[name]
            )
        else:
            mask_B, mask_A = sp.masks(uB, uA, n_keep, generator)
        sB, sA = apply_masks(uB, uA, mask_B, mask_A)  # Algorithm 1, line 9
        sent[name] = (sB, sA)
        masks[name] = (mask_B, mask_A)
        if new_memory is not None:
            new_memory[name] = (uB - sB, uA - sA)  # eqs. (4), (5): m' = m + Delta - sent
        counts[name] = LayerCounts(int(mask_B.sum()), d * r, int(mask_A.sum()), r * l)

    return CompressedUpdate(
        sent=sent,
        memory=new_memory,
        n_kept=sum(c.kept for c in counts.values()),
        n_total=sum(c.total for c in counts.values()),
        counts=counts,
        masks=masks,
    )
