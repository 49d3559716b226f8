"""Raw samples to model inputs: pixel normalisation and resizing, tokenisation."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from wirelessfl.data.assets import load_tokenizer
from wirelessfl.errors import UserError

__all__ = ["EFFICIENTNET_MEAN", "EFFICIENTNET_STD", "normalise_pixels", "resize", "tokenize"]

#: EfficientNet-Lite preprocessing: ``(x - 127) / 128`` for pixel values ``x`` in 0..255.
EFFICIENTNET_MEAN = 127.0
EFFICIENTNET_STD = 128.0


def normalise_pixels(x255: torch.Tensor) -> torch.Tensor:
    """EfficientNet-Lite preprocessing of 0..255 pixels (any shape): ``(x - 127) / 128``."""
    return (x255 - EFFICIENTNET_MEAN) / EFFICIENTNET_STD


def resize(x: torch.Tensor, image_size: int | None) -> torch.Tensor:
    """Bilinear resize of images ``(n, C, H, W)`` to ``(n, C, image_size, image_size)``.

    Args:
        x: Float images ``(n, C, H, W)``.
        image_size: Target side in pixels (>= 1); ``None`` keeps the size.

    Returns:
        ``x`` itself when the size already matches, else the resized copy.
    """
    if image_size is None or tuple(x.shape[-2:]) == (image_size, image_size):
        return x
    if image_size < 1:
        raise UserError(f"image_size must be >= 1, got {image_size}")
    return torch.nn.functional.interpolate(
        x, size=(image_size, image_size), mode="bilinear", align_corners=False
    )


def tokenize(
    texts: Sequence[str], tokenizer: str | Any, max_length: int
) -> tuple[torch.Tensor, torch.Tensor, str]:
    """Token ids and attention mask, padded / truncated to ``max_length``.

    Args:
        texts: ``n`` strings.
        tokenizer: A ``load_tokenizer`` name (``"minilm"``, ``"smollm2"``, a folder) or a
            tokenizer object.
        max_length: Tokens per sequence (>= 2).

    Returns:
        ``(ids, mask, tokenizer_name)``: int64 ``(n, max_length)`` ids and mask (1 on real
        tokens), and the tokenizer's name for the records.
    """
    if max_length < 2:
        raise UserError(f"max_length must be >= 2, got {max_length}")
    if isinstance(tokenizer, str):
        tok_name = tokenizer
        tok = load_tokenizer(tokenizer)
    else:
        tok_name = getattr(tokenizer, "name_or_path", type(tokenizer).__name__)
        tok = tokenizer
    enc = tok(
        list(texts),
        padding="max_length",
        truncation=True,
        max_length=max_length,
        return_tensors="pt",
    )
    return enc["input_ids"].to(torch.int64), enc["attention_mask"].to(torch.int64), tok_name
