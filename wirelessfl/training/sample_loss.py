"""Per-sample task losses of a concatenated multi-client batch, and each client's mean.

``loss_fn(model, batch)`` (a bundle's ``loss_and_logits``) gives the mean loss and the logits;
the batched trainer needs one loss per sample, from ``sample_loss_fn(logits, batch)``
(:func:`sample_loss_for` picks it by the data kind: cross entropy for classifiers, the squared
error of ``regression_loss_and_logits`` for regression).
:func:`check_sample_loss` refuses a pair whose mean does not match.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F

Batch = dict[str, torch.Tensor]
#: ``(logits (N, C), batch) -> per-sample losses (N,)`` whose mean is ``loss_fn``'s loss.
SampleLossFn = Callable[[torch.Tensor, Batch], torch.Tensor]


def cross_entropy_per_sample(logits: torch.Tensor, batch: Batch) -> torch.Tensor:
    """Per-sample cross entropy ``(N,)`` of ``logits (N, C)`` against ``batch["y"] (N,)``."""
    return F.cross_entropy(logits, batch["y"].to(logits.device), reduction="none")


def squared_error_per_sample(pred: torch.Tensor, batch: Batch) -> torch.Tensor:
    """Per-sample ``1/2 ||y_hat_i - y_i||^2`` ``(N,)`` of predictions ``(N, d_y)``: the terms whose
    mean is ``regression_loss_and_logits``'s loss."""
    err = pred - batch["y"].to(pred.device, pred.dtype).reshape(pred.shape)
    return 0.5 * err.pow(2).sum(dim=1)


def sample_loss_for(kind: str) -> SampleLossFn:
    """The per-sample loss of a model bundle's data ``kind`` (``"regression"``: squared error;
    every classifier kind: cross entropy)."""
    return squared_error_per_sample if kind == "regression" else cross_entropy_per_sample


def check_sample_loss(mean_loss: torch.Tensor, per_sample: torch.Tensor) -> None:
    """Refuse a ``loss_fn`` whose loss (0-d) is not the mean of ``sample_loss_fn``'s values
    ``(N,)``: raises ``NotImplementedError``."""
    a = float(mean_loss.detach())
    b = float(per_sample.detach().double().mean())
    if per_sample.ndim != 1 or not math.isclose(a, b, rel_tol=1e-3, abs_tol=1e-5):
        raise NotImplementedError(
            f"BatchedTrainer: loss_fn's loss ({a:.6g}) is not the mean of the per-sample "
            f"losses ({b:.6g}, shape {tuple(per_sample.shape)}); pass sample_loss_fn= "
            "giving (N,) per-sample losses whose mean is loss_fn's loss"
        )


def client_means(per_sample: torch.Tensor, counts: list[int]) -> torch.Tensor:
    """Each client's mean loss over its own samples.

    Args:
        per_sample: ``(G * width,)`` client-major losses, ``width = max(counts)``; client g's
            samples beyond ``counts[g]`` are padding and weigh exactly 0.
        counts: the G clients' numbers of real samples.

    Returns:
        ``(G,)`` task losses.
    """
    g, width = len(counts), max(counts)
    rows = per_sample.reshape(g, width)
    if min(counts) == width:
        return rows.sum(dim=1) / width
    cnt = torch.tensor(counts, device=rows.device)
    valid = torch.arange(width, device=rows.device) < cnt.unsqueeze(1)
    return torch.where(valid, rows, 0.0).sum(dim=1) / cnt.to(rows.dtype)
