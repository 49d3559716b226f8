"""Torch randomness from addressed seeds: ``seeded`` (a block run with torch's global RNG
forked and seeded) and ``torch_generator`` (a generator on ``channels.streams.stream_seed``)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch

from channels.streams import stream_seed

__all__ = ["seeded", "torch_generator"]


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


def torch_generator(
    seed: int, stream: str, *address: int, device: torch.device | str = "cpu"
) -> torch.Generator:
    """A ``torch.Generator`` on ``device`` seeded by ``stream_seed(seed, stream, *address)``.

    Addressed by (seed, stream, client, round), it does not depend on what was drawn before.
    """
    gen = torch.Generator(device=device)
    gen.manual_seed(stream_seed(seed, stream, *address))
    return gen
