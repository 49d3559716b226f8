"""LoRA payload sizes in parameters and bits (the paper's uplink v·O·Σ_l r(d_l + ℓ_l)).

A rank-r LoRA on layers l with θ_B ∈ R^{d_l×r}, θ_A ∈ R^{r×ℓ_l} has Σ_l r(d_l + ℓ_l)
parameters. The paper's uplink payload is v·O·Σ_l r(d_l + ℓ_l) bits (v bits per value, kept
fraction O); a sparse payload also needs the positions of the kept values, reported separately
as index overhead: a bitmask (one bit per position) or a coordinate list (ceil(log2 n) bits
per kept value), whichever is smaller.

Functions taking counts accept integers or integer arrays (broadcasting) and return a Python
``int`` for scalar input, an int64 array otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from channels._validation import as_float, as_int_array

__all__ = [
    "SparsePayload",
    "index_overhead_bits",
    "kept_values",
    "lora_param_count",
    "params_per_rank",
    "payload_bits",
    "planned_payload_bits",
    "sparse_payload_bits",
]


def _int_or_array(arr: np.ndarray) -> int | np.ndarray:
    return int(arr) if arr.ndim == 0 else arr


def _layer_array(layer_shapes: Sequence[tuple[int, int]] | np.ndarray) -> np.ndarray:
    try:
        shapes = as_int_array("layer_shapes", layer_shapes, lower=1)
    except ValueError as exc:
        raise ValueError(
            f"layer_shapes must be a non-empty sequence of (d, l) pairs of integers >= 1: {exc}"
        ) from None
    if shapes.ndim != 2 or shapes.shape[1] != 2 or shapes.shape[0] == 0:
        raise ValueError(
            "layer_shapes must be a non-empty sequence of (d, l) pairs of integers >= 1, "
            f"got an array of shape {shapes.shape}"
        )
    return shapes


def params_per_rank(layer_shapes: Sequence[tuple[int, int]] | np.ndarray) -> int:
    """LoRA parameters per unit of rank, Σ_l (d_l + ℓ_l).

    Input: ``layer_shapes`` sequence of (d, ℓ) pairs >= 1, one per adapted layer.
    Output: int.
    """
    return int(_layer_array(layer_shapes).sum())


def lora_param_count(
    layer_shapes: Sequence[tuple[int, int]] | np.ndarray, rank: ArrayLike
) -> int | np.ndarray:
    """LoRA parameter count, Σ_l r(d_l + ℓ_l).

    Input: ``layer_shapes`` sequence of (d, ℓ) pairs >= 1; ``rank`` r >= 1 (int or array).
    Output: int (int64 array for array ``rank``).
    """
    per_rank = params_per_rank(layer_shapes)
    r = as_int_array("rank", rank, lower=1)
    return _int_or_array(r * per_rank)


def kept_values(ratio: float, n_total: int) -> int:
    """Values a sparse payload keeps: round(O · n) (the paper's O·r(d+ℓ) per layer).

    Input: ``ratio`` O, a finite number in [0, 1]; ``n_total`` n >= 0 entries.
    Output: int in [0, n]. Python's ``round`` (half to even): O = 0.5, n = 5 keeps 2.
    """
    if type(ratio) is float and type(n_total) is int and 0.0 <= ratio <= 1.0 and n_total >= 0:
        o, n = ratio, n_total  # the per-layer hot path: already valid Python scalars
    else:
        o = as_float("ratio", ratio, lower=0.0)
        if o > 1.0:
            raise ValueError(f"ratio must be in [0, 1], got {ratio!r}")
        n = int(as_int_array("n_total", n_total, lower=0))
    return min(n, max(0, round(o * n)))


def payload_bits(n_values: ArrayLike, bits_per_value: float) -> int | np.ndarray:
    """Bits for ``n_values`` values of ``bits_per_value`` bits each, ceil(n·v).

    Input: ``n_values`` >= 0 (int or array); ``bits_per_value`` v > 0 (e.g. 32, 16, or a
    fractional entropy-coded size).
    Output: int (int64 array for array input).
    """
    if type(n_values) is int and type(bits_per_value) is int and n_values >= 0 < bits_per_value:
        return n_values * bits_per_value  # valid Python ints: the per-message hot path
    n = as_int_array("n_values", n_values, lower=0)
    v = as_float("bits_per_value", bits_per_value, lower=0.0, lower_op=">")
    if float(v).is_integer():
        return _int_or_array(n * int(v))
    return _int_or_array(np.ceil(n * v).astype(np.int64))


def planned_payload_bits(
    ratio: float,
    rank: float,
    params_per_rank: float,
    bits_per_value: float,
    *,
    dense_values: float = 0,
) -> float:
    """The payload a delay model plans with: v · (O · r · Σ_l (d_l + ℓ_l) + h) [bit].

    The paper's v·O·r(d+ℓ) (eqs. 15-31), continuous in O (no rounding), plus ``dense_values``
    h sent in full every round (a task head). The bits actually sent are counted from the
    message (:func:`payload_bits`, :func:`kept_values`, :func:`index_overhead_bits`).
    """
    return bits_per_value * (ratio * rank * params_per_rank + dense_values)


def _ceil_log2(n: np.ndarray) -> np.ndarray:
    """ceil(log2 n) for integers n >= 1, exactly (bit length of n - 1)."""
    _, exp = np.frexp((n - 1).astype(np.float64))
    return np.where(n <= 1, 0, exp).astype(np.int64)


def index_overhead_bits(n_kept: ArrayLike, n_total: ArrayLike) -> int | np.ndarray:
    """Bits to tell the server which positions were kept.

    min(bitmask n_total, coordinate list n_kept·ceil(log2 n_total)); 0 when
    n_kept == n_total (a dense payload needs no index).
    Input: ``n_kept`` >= 0, ``n_total`` >= 1 with n_kept <= n_total (ints or arrays,
    broadcasting).
    Output: int (int64 array for array input).
    """
    if type(n_kept) is int and type(n_total) is int and 0 <= n_kept <= n_total and n_total >= 1:
        # one index space given as Python ints (the per-layer hot path): the same formula
        coordinates = n_kept * (n_total - 1).bit_length()  # (n - 1).bit_length() = ceil(log2 n)
        return 0 if n_kept == n_total else min(n_total, coordinates)
    kept = as_int_array("n_kept", n_kept, lower=0)
    total = as_int_array("n_total", n_total, lower=1)
    kept, total = np.broadcast_arrays(kept, total)
    if (kept > total).any():
        raise ValueError("n_kept must be <= n_total")
    coord = kept * _ceil_log2(total)
    bits = np.where(kept == total, 0, np.minimum(total, coord))
    return _int_or_array(np.asarray(bits, dtype=np.int64))


@dataclass(frozen=True)
class SparsePayload:
    """Bits of a sparse payload: values, index overhead and their sum (ints or int64 arrays)."""

    value_bits: int | np.ndarray
    index_bits: int | np.ndarray
    total_bits: int | np.ndarray


def sparse_payload_bits(
    n_kept: ArrayLike, n_total: ArrayLike, bits_per_value: float
) -> SparsePayload:
    """Value bits, index bits and total bits of a sparse payload.

    Input: ``n_kept`` >= 0 values sent out of ``n_total`` >= 1 (ints or arrays);
    ``bits_per_value`` v > 0.
    Output: :class:`SparsePayload` with value_bits = ceil(n_kept·v), index_bits from
    :func:`index_overhead_bits`, total_bits their sum.
    """
    index = index_overhead_bits(n_kept, n_total)
    values = payload_bits(n_kept, bits_per_value)
    if isinstance(index, np.ndarray) or isinstance(values, np.ndarray):
        values_a, index_a = np.broadcast_arrays(np.asarray(values), np.asarray(index))
        return SparsePayload(
            value_bits=values_a.copy(), index_bits=index_a.copy(), total_bits=values_a + index_a
        )
    return SparsePayload(value_bits=values, index_bits=index, total_bits=values + index)
