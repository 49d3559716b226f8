"""The ``dtype`` and ``autocast`` model options: weights' dtype by name, a loss for
half-precision models, and a loss whose forward runs under ``torch.autocast``."""

from __future__ import annotations

from collections.abc import Callable

import torch

from wirelessfl.errors import UserError

__all__ = [
    "AUTOCAST_DTYPES",
    "DTYPES",
    "autocast_dtype",
    "float32_loss",
    "in_dtype",
    "torch_dtype",
    "under_autocast",
]

#: ``dtype`` option values -> torch dtypes of the loaded weights.
DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
}


#: ``autocast`` option values -> the dtype matrix products run in (weights stay float32).
AUTOCAST_DTYPES: dict[str, torch.dtype] = {"bfloat16": torch.bfloat16}


def torch_dtype(dtype: str) -> torch.dtype:
    """The torch dtype named ``dtype``; ``UserError`` naming the accepted ones."""
    if dtype not in DTYPES:
        raise UserError(f"dtype={dtype!r} is not supported; accepted: {', '.join(DTYPES)}")
    return DTYPES[dtype]


def float32_loss(logits: torch.Tensor, batch: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """Cross-entropy of ``logits`` ``(B, C)`` cast to float32 with ``batch["y"]`` ``(B,)``,
    and the float32 logits."""
    logits = logits.float()
    y = batch["y"].to(logits.device)
    return torch.nn.functional.cross_entropy(logits, y), logits


def in_dtype(
    loss_fn: Callable[[torch.nn.Module, dict], tuple[torch.Tensor, torch.Tensor]],
    dtype: torch.dtype,
) -> Callable[[torch.nn.Module, dict], tuple[torch.Tensor, torch.Tensor]]:
    """``loss_fn`` for a model whose weights are ``dtype``: float inputs ``x`` are cast to it,
    the loss is taken on float32 logits (``loss_fn`` itself for float32)."""
    if dtype == torch.float32:
        return loss_fn

    def loss_and_logits(m: torch.nn.Module, batch: dict) -> tuple[torch.Tensor, torch.Tensor]:
        x = batch["x"]
        batch = {**batch, "x": x.to(dtype) if x.is_floating_point() else x}
        _, logits = loss_fn(m, batch)
        return float32_loss(logits, batch)

    return loss_and_logits


def autocast_dtype(autocast: str | None) -> torch.dtype | None:
    """The dtype of the ``autocast`` option (None: float32 throughout); ``UserError`` naming
    the accepted values."""
    if autocast is None:
        return None
    if autocast not in AUTOCAST_DTYPES:
        raise UserError(
            f"autocast={autocast!r} is not supported; accepted: {', '.join(AUTOCAST_DTYPES)} "
            "or null (float32 throughout)"
        )
    return AUTOCAST_DTYPES[autocast]


def under_autocast(
    loss_fn: Callable[[torch.nn.Module, dict], tuple[torch.Tensor, torch.Tensor]],
    dtype: torch.dtype | None,
) -> Callable[[torch.nn.Module, dict], tuple[torch.Tensor, torch.Tensor]]:
    """``loss_fn`` with its forward under ``torch.autocast(dtype)`` on the model's device.

    Mixed precision: the weights, the LoRA factors, their gradients and the optimizer's
    state stay float32; matrix products run in ``dtype`` (see :func:`autocast_dtype`), the
    loss is taken on float32 logits. On a CPU with AVX512-BF16 (or a GPU) this is faster;
    results differ from float32 by bf16 rounding. ``None``: ``loss_fn`` itself.
    """
    if dtype is None:
        return loss_fn

    def loss_and_logits(m: torch.nn.Module, batch: dict) -> tuple[torch.Tensor, torch.Tensor]:
        device_type = next(m.parameters()).device.type
        with torch.autocast(device_type, dtype=dtype):
            _, logits = loss_fn(m, batch)
        return float32_loss(logits, batch)

    return loss_and_logits
