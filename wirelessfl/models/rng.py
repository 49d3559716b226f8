"""``seeded``: a block run with torch's global RNG forked and seeded."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch

__all__ = ["seeded"]


@contextlib.contextmanager
def seeded(seed: int, device: torch.device | str | None = None) -> Iterator[None]:
    """Run a block with torch's global RNG seeded by ``seed``, restoring the state after.

    Building a model or training a client so never shifts anyone else's random stream.

    Args:
        seed: Torch seed (``torch.manual_seed`` accepts ``[-2**63, 2**64)``).
        device: With a CUDA device, that device's generator is forked and seeded too.
    """
    dev = torch.device(device) if device is not None else None
    with torch.random.fork_rng(devices=[dev] if dev is not None and dev.type == "cuda" else []):
        torch.manual_seed(int(seed))
        yield
