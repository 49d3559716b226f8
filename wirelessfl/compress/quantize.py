"""Stochastic uniform quantisation of a vector of sent values (QSGD, D. Alistarh et al.,
arXiv:1610.02132, with the block's largest magnitude as its scale).

A block x of n values with scale M = max_i |x_i| and s levels (s = 2^(b-1) - 1 at b bits) is
sent as sign(x_i) and a level l_i in {0, ..., s}: with u_i = s |x_i| / M,

    l_i = floor(u_i) + 1 with probability u_i - floor(u_i), else floor(u_i),
    Q(x)_i = sign(x_i) l_i M / s,

so E[Q(x)_i] = x_i (unbiased) and Var[Q(x)_i] = (M / s)^2 p_i (1 - p_i), p_i = u_i - floor(u_i)
(:func:`quantization_variance`). A block of zeros is sent as zeros.
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["quantization_variance", "quantize_values"]


def _blocks(x: Tensor, block_size: int | None) -> tuple[Tensor, int]:
    """``x`` (n,) as rows of ``block_size`` values (the last zero-padded), and n."""
    n = int(x.numel())
    size = n if block_size is None else int(block_size)
    rows = -(-n // size) if n else 0
    padded = x.new_zeros(rows * size)
    padded[:n] = x.reshape(-1)
    return padded.reshape(rows, size), n


def _scaled(x: Tensor, bits: int, block_size: int | None) -> tuple[Tensor, Tensor, int]:
    """(u (blocks, size): s |x| / M per block, step M / s per block (blocks, 1), n)."""
    s = 2 ** (int(bits) - 1) - 1
    rows, n = _blocks(x, block_size)
    scale = rows.abs().amax(dim=1, keepdim=True)
    step = scale / s
    u = torch.where(step > 0, rows.abs() / torch.where(step > 0, step, 1.0), 0.0)
    return u.clamp(max=s), step, n


def quantize_values(
    x: Tensor, *, bits: int, block_size: int | None, generator: torch.Generator | None
) -> Tensor:
    """Q(x): ``x`` (n,) quantised to b bits per value, a scale per block (module docstring).

    Args:
        x: the sent values (n,), any float dtype.
        bits: b >= 2 (1 sign bit, b - 1 level bits).
        block_size: values per scale in ``x``'s order (``None``: one scale for all of ``x``).
        generator: drives the rounding (on ``x``'s device).

    Returns: Q(x) (n,), ``x``'s dtype and device.
    """
    if x.numel() == 0:
        return x.clone()
    u, step, n = _scaled(x.detach().double(), bits, block_size)
    draw = torch.rand(u.shape, generator=generator, device=u.device, dtype=u.dtype)
    level = torch.floor(u) + (draw < u - torch.floor(u)).to(u.dtype)
    rows, _ = _blocks(x.detach().double(), block_size)
    q = torch.sign(rows) * level * step
    return q.reshape(-1)[:n].to(x.dtype)


def quantization_variance(x: Tensor, *, bits: int, block_size: int | None) -> Tensor:
    """Var[Q(x)_i] = (M / s)^2 p_i (1 - p_i) per value of ``x`` (n,), float64."""
    u, step, n = _scaled(x.detach().double(), bits, block_size)
    p = u - torch.floor(u)
    return (step**2 * p * (1.0 - p)).reshape(-1)[:n]
