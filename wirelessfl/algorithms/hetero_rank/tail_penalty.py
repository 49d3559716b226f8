"""HetLoRA's rank self-pruning: the penalty on a client's last LoRA components, and the cut.

A client of rank r_k keeps its first ``kept_rank(r_k, gamma) = max(1, floor(gamma r_k))``
components; the others form its *tail*. Local training adds
``lambda * sum_layers ||B[:, keep:] A[keep:, :]||_F`` (unscaled factors) to the task loss, and
the client prunes the tail when training lowered its norm
(``wirelessfl.algorithms.hetero_rank.hetlora``).
``||B_t A_t||_F^2 = sum((B_t^T B_t) * (A_t A_t^T))`` costs ``O(t^2 (d_in + d_out))``: the
dense product is never formed.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

import torch

from wirelessfl.training.local import LocalTrainer
from wirelessfl.training.lora_state import LoraLayer

if TYPE_CHECKING:
    from wirelessfl.training.runtime import Runtime

__all__ = ["kept_rank", "tail_norm", "tail_penalty"]

State = dict[str, torch.Tensor]


def kept_rank(rank: int, decay: float) -> int:
    """Components a rank-``rank`` client keeps if it prunes: ``max(1, floor(decay rank))``."""
    return max(1, math.floor(decay * rank))


def tail_norm(values: State, layers: Iterable[LoraLayer], keep: int) -> torch.Tensor:
    """``sum_layers ||B[:, keep:] A[keep:]||_F`` (0-d tensor, differentiable; 0 when no
    component lies past ``keep``)."""
    total = None
    for layer in layers:
        a, b = values[layer.a_param], values[layer.b_param]
        rank = a.shape[0]
        a_t = a.reshape(rank, -1)[keep:]
        b_t = b.reshape(b.shape[0], rank)[:, keep:]
        squared = ((b_t.T @ b_t) * (a_t @ a_t.T)).sum().clamp_min(0.0)
        norm = torch.sqrt(squared + torch.finfo(squared.dtype).tiny)  # finite gradient at 0
        total = norm if total is None else total + norm
    return total if total is not None else torch.zeros(())


class _TailPenaltyTrainer(LocalTrainer):
    """The sequential trainer with ``weight * tail_norm`` of the live factors in the loss."""

    def __init__(self, base: LocalTrainer, weight: float, keep: int) -> None:
        super().__init__(
            model=base.model,
            state=base.state,
            loss_fn=base.loss_fn,
            optimizer=base.optimizer,
            lr=base.lr,
            zeta=base.zeta,
        )
        self.weight, self.keep = weight, keep

    def loss(self, batch, zeta=None):
        total, task = super().loss(batch, zeta)
        penalty = tail_norm(self.state.params, self.state.layers, self.keep)
        return total + self.weight * penalty, task


@contextlib.contextmanager
def tail_penalty(runtime: Runtime, weight: float, keep: int) -> Iterator[None]:
    """Inside, ``runtime.train`` trains sequentially with ``weight * tail_norm(keep)`` added to
    each step's loss (the reported loss stays the task loss). The batched trainer has no hook
    for it, so it is set aside for the block; both trainers are restored afterwards."""
    trainer, batched = runtime.trainer, runtime.batched
    runtime.trainer, runtime.batched = _TailPenaltyTrainer(trainer, weight, keep), None
    try:
        yield
    finally:
        runtime.trainer, runtime.batched = trainer, batched
