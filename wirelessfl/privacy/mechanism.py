"""The two operations of the Gaussian mechanism on named tensors: L2 clipping of a whole update
and seeded Gaussian noise. Pure functions (in place), shared by the client and server steps."""

from __future__ import annotations

import math
from collections.abc import Iterable, MutableMapping

import torch

__all__ = ["add_gaussian_noise", "clip_to_norm", "l2_norm"]


def l2_norm(tensors: Iterable[torch.Tensor]) -> float:
    """||x||_2 of the concatenation of ``tensors`` (float64 sums)."""
    return math.sqrt(sum(float(t.detach().double().square().sum()) for t in tensors))


def clip_to_norm(tensors: MutableMapping[str, torch.Tensor], clip_norm: float) -> float:
    """Scale every tensor by min(1, C / ||x||_2), x the concatenation of all of them (McMahan
    et al., arXiv:1710.06963, eq. ClipFn flat): in place. Returns ||x||_2 before clipping."""
    norm = l2_norm(tensors.values())
    if norm > clip_norm:
        factor = clip_norm / norm
        for name in tensors:
            tensors[name] = tensors[name] * factor
    return norm


def add_gaussian_noise(
    tensors: MutableMapping[str, torch.Tensor],
    std: float,
    generator: torch.Generator,
    names: Iterable[str] | None = None,
) -> None:
    """Add N(0, std^2) to every value of ``tensors`` (those of ``names`` only, if given), drawn
    from ``generator`` in the order of the names (the run's seeded stream: a resumed run draws
    the same noise). In place."""
    for name in tensors if names is None else names:
        t = tensors[name]
        noise = torch.randn(t.shape, generator=generator, device=t.device, dtype=torch.float32)
        tensors[name] = t + (std * noise).to(t.dtype)
