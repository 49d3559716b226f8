"""The ``dtype`` model option: weights' dtype by name, and a loss for half-precision models."""

from __future__ import annotations

from collections.abc import Callable

import torch

from wirelessfl.errors import UserError

__all__ = ["DTYPES", "in_dtype", "torch_dtype"]

#: ``dtype`` option values -> torch dtypes of the loaded weights.
DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
}


def torch_dtype(dtype: str) -> torch.dtype:
    """The torch dtype named ``dtype``; ``UserError`` naming the accepted ones."""
    if dtype not in DTYPES:
        raise UserError(f"dtype={dtype!r} is not supported; accepted: {', '.join(DTYPES)}")
    return DTYPES[dtype]


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
        logits = logits.float()
        y = batch["y"].to(logits.device)
        return torch.nn.functional.cross_entropy(logits, y), logits

    return loss_and_logits
