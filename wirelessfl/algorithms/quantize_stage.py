"""The quantiser stage on real tensors: the LoRA values a client sends, after the compression
stage chose them, quantised to b bits (:mod:`wirelessfl.compress.quantize`), what the server
then receives and aggregates.

:func:`wirelessfl.algorithms.compression_stage.compress_message` calls :func:`quantize_pair`
on each layer's sent pair: the kept values in the layer's flat order (theta_B row-major, then
theta_A row-major) are quantised with one scale per ``block_size`` of them (one per layer when
null), the unsent positions stay zero, and the layer's index space is marked as sent at b bits
with its scales (:meth:`Message.quantized_space`). With ``quantize.error_feedback`` the residual
sent - Q(sent) joins the client's error memory (module docstring of the compression stage).
Randomness comes from the generator the caller passes, addressed by (seed, ``quantize``, client,
round).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import torch

from wirelessfl.algorithms.message import Message
from wirelessfl.algorithms.quantization import QUANT_METRICS, Quantizer
from wirelessfl.compress.quantize import quantize_values

__all__ = ["QUANT_METRICS", "quant_metrics", "quantize_pair"]

Pair = tuple[torch.Tensor, torch.Tensor]

#: The message diagnostics the stage records: b, ||Q(x) - x||^2 and ||x||^2 over the sent values.
BITS, ERROR_SQ, SENT_SQ = "quant_bits", "quant_error_sq", "quant_sent_sq"


def quantize_pair(
    pair: Pair, masks: Pair, *, quantizer: Quantizer, generator: torch.Generator | None
) -> tuple[Pair, int, float, float]:
    """Q of the kept values of ``pair`` = (theta_B (d, r), theta_A (r, l)).

    Args:
        pair: the sent pair, zeros at the unsent positions.
        masks: its keep-masks (bool, the pair's shapes).
        quantizer: the stage (active).
        generator: drives the rounding.

    Returns: (the quantised pair, scales sent, ||Q(x) - x||^2, ||x||^2) with x the kept values.
    """
    theta_b, theta_a = pair
    flat = torch.cat([theta_b.reshape(-1), theta_a.reshape(-1)])
    keep = torch.cat([masks[0].reshape(-1), masks[1].reshape(-1)])
    sent = flat[keep]
    q = quantize_values(
        sent, bits=int(quantizer.bits), block_size=quantizer.block_size, generator=generator
    )
    out = torch.zeros_like(flat)
    out[keep] = q
    n_b = theta_b.numel()
    quantized = (out[:n_b].reshape(theta_b.shape), out[n_b:].reshape(theta_a.shape))
    error_sq = float((q.double() - sent.double()).square().sum())
    sent_sq = float(sent.double().square().sum())
    return quantized, quantizer.n_scales(int(sent.numel())), error_sq, sent_sq


def quant_metrics(messages: Mapping[int, Message]) -> dict[str, float]:
    """``quant_bits`` and ``quant_rel_error`` of a round's arrived messages (NaN if none)."""
    bits = [m.diagnostics[BITS] for m in messages.values() if BITS in m.diagnostics]
    error = sum(m.diagnostics.get(ERROR_SQ, 0.0) for m in messages.values())
    total = sum(m.diagnostics.get(SENT_SQ, 0.0) for m in messages.values())
    return {
        "quant_bits": sum(bits) / len(bits) if bits else math.nan,
        "quant_rel_error": error / total if total > 0 else math.nan,
    }
