"""The order in which a client's local training visits its data.

Mini-batches are drawn without replacement: a ``randperm`` of the client's samples from its
own generator, cut into consecutive slices, reshuffled when a pass is exhausted. Both trainers
(:class:`~wirelessfl.training.local.LocalTrainer` and
:class:`~wirelessfl.training.batched.BatchedTrainer`) take their batches from
:func:`batch_schedule`, so a client sees the same batches whichever trainer runs it.
"""

from __future__ import annotations

import torch


def batch_schedule(
    n: int, steps: int, batch_size: int, generator: torch.Generator
) -> list[torch.Tensor]:
    """The sample indices of ``steps`` local steps on ``n`` samples, one tensor per step.

    ``randperm(n)`` from ``generator`` (on its device), consecutive slices of ``batch_size``
    (the last one of a pass may be shorter), a fresh ``randperm`` when the pass is exhausted.

    Returns:
        ``steps`` index tensors of shape ``(<= batch_size,)``, views of the permutations.
    """
    order = torch.randperm(n, generator=generator, device=generator.device)
    cursor, out = 0, []
    for _ in range(steps):
        if cursor >= n:
            order = torch.randperm(n, generator=generator, device=generator.device)
            cursor = 0
        out.append(order[cursor : cursor + batch_size])
        cursor += batch_size
    return out
