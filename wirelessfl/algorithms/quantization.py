"""The quantiser stage as the network sees it: how many bits a sent LoRA value costs, how many
scales a layer sends, and the variance the quantiser adds. No torch (the cost models and the
controllers use it; :mod:`wirelessfl.compress.quantize` applies it to real tensors).

The scenario's ``quantize`` section chooses it (docs/algorithms/quantization.md):

- ``bits``: b, the bits of each sent LoRA value: 1 sign bit and b - 1 bits of a level in
  {0, ..., s}, s = 2^(b-1) - 1 (QSGD's stochastic quantiser, D. Alistarh et al.,
  arXiv:1610.02132, at s levels); null: no quantiser, every value at ``payload.bits_per_value``;
- ``block_size``: sent values per scale, in the layer's flat order; null: one scale per layer.
  Each scale is the block's largest magnitude, sent as a 32-bit float;
- ``error_feedback``: the quantisation residual (sent - Q(sent)) joins the client's error memory.

A layer that sends ``n`` of its LoRA values sends ``n`` values of b bits and ceil(n / block)
scales of 32 bits (one scale when ``block_size`` is null and n > 0).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

__all__ = [
    "NO_QUANTIZER",
    "QUANT_METRICS",
    "SCALE_BITS",
    "Quantizer",
    "levels",
    "resolve_quantizer",
]

#: Bits of one scale (a float32).
SCALE_BITS = 32


def levels(bits: int) -> int:
    """s = 2^(b-1) - 1: the magnitude levels above 0 of a b-bit value with a sign bit."""
    return 2 ** (int(bits) - 1) - 1


@dataclass(frozen=True)
class Quantizer:
    """The resolved quantiser of a run (see the module docstring).

    Attributes:
        bits: b [bit] per sent LoRA value, or ``None``: no quantiser.
        block_size: values per scale, or ``None``: one scale per layer.
        error_feedback: whether the quantisation residual joins the client's error memory.
    """

    bits: int | None = None
    block_size: int | None = None
    error_feedback: bool = False

    @property
    def active(self) -> bool:
        """Whether sent LoRA values are quantised."""
        return self.bits is not None

    def n_scales(self, n_sent: int) -> int:
        """Scales a layer sending ``n_sent`` values sends: ceil(n / block), 1 per layer when
        ``block_size`` is null, 0 for n = 0 or without a quantiser."""
        if not self.active or n_sent <= 0:
            return 0
        if self.block_size is None:
            return 1
        return math.ceil(int(n_sent) / int(self.block_size))

    def at_bits(self, bits: int | None) -> Quantizer:
        """The same quantiser at ``bits`` (``None``: none), for a controller choosing b."""
        return Quantizer(bits, self.block_size, self.error_feedback)

    def variance_factor(self, n_values: int) -> float:
        """q(b, n) with E||Q(x) - x||^2 <= q ||x||^2 for any block x of n values: 0 without a
        quantiser, else min(n / (4 s^2), sqrt(n) / s) (docs/algorithms/quantization.md)."""
        if not self.active or n_values <= 0:
            return 0.0
        s = levels(self.bits)
        return min(n_values / (4.0 * s * s), math.sqrt(n_values) / s)


#: The quantiser of a run without a ``quantize`` section (every value at full precision).
NO_QUANTIZER = Quantizer()


def resolve_quantizer(section: Any) -> Quantizer:
    """The run's quantiser from its ``quantize`` section (``None``: absent)."""
    if section is None or getattr(section, "bits", None) is None:
        return NO_QUANTIZER
    return Quantizer(
        bits=int(section.bits),
        block_size=None if section.block_size is None else int(section.block_size),
        error_feedback=bool(section.error_feedback),
    )


#: The stage's round metrics (``algo.<name>`` columns when the run quantises).
QUANT_METRICS = {
    "quant_bits": "b: bits per sent LoRA value of the arrived clients' messages (mean; the "
    "quantiser's or the controller's choice, payload.bits_per_value where unquantised)",
    "quant_rel_error": "sum ||Q(x) - x||^2 / sum ||x||^2 over the arrived clients' sent LoRA "
    "values (the quantiser's measured relative error; real training; NaN when nothing was "
    "quantised)",
}
