"""The ``loss_and_logits(model, batch)`` functions of image and text classifiers and of
regression models."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

__all__ = [
    "Batch",
    "LossFn",
    "image_loss_and_logits",
    "regression_loss_and_logits",
    "text_loss_and_logits",
]

Batch = dict[str, torch.Tensor]
LossFn = Callable[[nn.Module, Batch], tuple[torch.Tensor, torch.Tensor]]


def _device_of(model: nn.Module) -> torch.device:
    try:
        return next(model.parameters()).device
    except StopIteration:
        return torch.device("cpu")


def _logits_of(out: Any) -> torch.Tensor:
    return out.logits if hasattr(out, "logits") else out


def image_loss_and_logits(model: nn.Module, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
    """Cross-entropy for an image classifier called as ``model(x)``.

    Args:
        model: The (possibly peft-wrapped) classifier; tensors are moved to its device.
        batch: ``x`` float ``(B, C, H, W)``, ``y`` int64 ``(B,)``.

    Returns:
        The mean loss (scalar) and logits ``(B, n_classes)``.
    """
    dev = _device_of(model)
    logits = _logits_of(model(batch["x"].to(dev)))
    return F.cross_entropy(logits, batch["y"].to(dev)), logits


def text_loss_and_logits(model: nn.Module, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
    """Cross-entropy for a sequence classifier called as
    ``model(input_ids=x, attention_mask=mask)``.

    Args:
        model: The (possibly peft-wrapped) classifier; tensors are moved to its device.
        batch: ``x`` int64 token ids ``(B, L)``, optional ``attention_mask`` int64 ``(B, L)``,
            ``y`` int64 ``(B,)``.

    Returns:
        The mean loss (scalar) and logits ``(B, n_classes)``.
    """
    dev = _device_of(model)
    mask = batch.get("attention_mask")
    out = model(input_ids=batch["x"].to(dev), attention_mask=None if mask is None else mask.to(dev))
    logits = _logits_of(out)
    return F.cross_entropy(logits, batch["y"].to(dev)), logits


def regression_loss_and_logits(model: nn.Module, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
    """Squared error ``mean_i 1/2 ||y_hat_i - y_i||^2`` (FLoRAL's regression loss) of a model
    called as ``model(x)``.

    Args:
        model: The (possibly peft-wrapped) regressor; tensors are moved to its device.
        batch: ``x`` float ``(B, d_x)``, ``y`` float ``(B, d_y)``.

    Returns:
        The mean loss (scalar) and the predictions ``(B, d_y)``.
    """
    dev = _device_of(model)
    pred = _logits_of(model(batch["x"].to(dev)))
    err = pred - batch["y"].to(dev, pred.dtype).reshape(pred.shape)  # no (B, B) broadcast
    return 0.5 * err.pow(2).sum(dim=1).mean(), pred
