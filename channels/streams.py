"""Named, addressable random streams.

Every draw in the project goes through a ``numpy.random.Generator`` built from the run seed and
a named stream, addressed so that results do not depend on the order of draws:

- :func:`client_generators`: one generator per client, keyed by
  ``SeedSequence(entropy=seed, spawn_key=(stream_id, client_id, block))``. Adding clients never
  changes the draws of existing ones, and block ``b`` of rounds can be drawn without drawing
  blocks ``0 .. b-1`` (what makes ``--resume`` bit-exact).
- :func:`round_generator`: one generator per round, keyed by
  ``SeedSequence(entropy=seed, spawn_key=(stream_id, round_index))`` (client selection,
  faults).
- :func:`seed_sequence` / :func:`stream_generator` / :func:`stream_seed`: one stream addressed
  by ``SeedSequence([seed, stream_id, *address])`` (data splits and partitions, batch order,
  random sparsification masks, stochastic layers); :func:`stream_seed` gives it as a 63-bit
  integer for ``torch.Generator.manual_seed``, and :func:`combined_seed` folds several such
  seeds into one.
- :func:`as_client_generators`: turns "one Generator or one per client" into one per client.

Both layouts are ``SeedSequence`` entropy words: ``[seed, 0, 0, 0, stream_id, *key]`` for the
first two (numpy pads the entropy before a spawn key), ``[seed, stream_id, *address]`` for the
others. This module is the only place in the project where seeds are derived.

``stream_id`` is ``zlib.crc32`` of the UTF-8 stream name (stable across processes and Python
versions, unlike ``hash``). Client ids, blocks and rounds are limited to ``[0, 2**32)`` so every
key word is one 32-bit word: client keys (3 words) and round keys (2 words) never coincide.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import numpy as np

from channels._validation import as_int, as_int_array

__all__ = [
    "as_client_generators",
    "client_generators",
    "combined_seed",
    "round_generator",
    "seed_sequence",
    "stream_generator",
    "stream_id",
    "stream_seed",
]

_KEY_LIMIT = 2**32


def stream_id(stream: str) -> int:
    """Stable 32-bit id of a stream name (``zlib.crc32`` of its UTF-8 bytes).

    Input: ``stream``, a non-empty name such as ``"fading"``.
    Output: int in ``[0, 2**32)``.
    """
    if not isinstance(stream, str) or not stream:
        raise ValueError(f"stream must be a non-empty string, got {stream!r}")
    return zlib.crc32(stream.encode("utf-8"))


def _generator(seed: int, key: tuple[int, ...]) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(entropy=seed, spawn_key=key)))


def client_generators(
    seed: int,
    client_ids: Sequence[int] | np.ndarray,
    *,
    stream: str,
    block: int = 0,
) -> list[np.random.Generator]:
    """One independent generator per client, deterministic in (seed, stream, client, block).

    Input: ``seed`` >= 0; ``client_ids`` (N,) integers in ``[0, 2**32)``; ``stream`` name;
    ``block`` >= 0 (index of a block of rounds; 0 for draws made once per run).
    Output: list of N ``numpy.random.Generator`` (PCG64), in the order of ``client_ids``.
    """
    seed = as_int("seed", seed, lower=0)
    ids = as_int_array("client_ids", client_ids, lower=0, upper=_KEY_LIMIT)
    if ids.ndim != 1:
        raise ValueError(f"client_ids must be one-dimensional, got shape {ids.shape}")
    block = as_int("block", block, lower=0, upper=_KEY_LIMIT)
    sid = stream_id(stream)
    return [_generator(seed, (sid, int(k), block)) for k in ids]


def round_generator(seed: int, *, stream: str, round_index: int) -> np.random.Generator:
    """One generator for a whole round, deterministic in (seed, stream, round_index).

    Input: ``seed`` >= 0; ``stream`` name (e.g. ``"selection"``, ``"faults"``);
    ``round_index`` in ``[0, 2**32)``.
    Output: a ``numpy.random.Generator`` (PCG64).
    """
    seed = as_int("seed", seed, lower=0)
    round_index = as_int("round_index", round_index, lower=0, upper=_KEY_LIMIT)
    return _generator(seed, (stream_id(stream), round_index))


def seed_sequence(seed: int, stream: str, *address: int) -> np.random.SeedSequence:
    """The ``SeedSequence`` of ``stream`` at ``address``: entropy ``[seed, stream_id, *address]``.

    Input: ``seed`` >= 0; ``stream`` name (e.g. ``"batches"``); ``address`` non-negative
    integers (e.g. client id, round index).
    Output: ``numpy.random.SeedSequence``; the same arguments give the same sequence in any
    process, whatever was drawn before.
    """
    seed = as_int("seed", seed, lower=0)
    words = [as_int("address", a, lower=0) for a in address]
    return np.random.SeedSequence([seed, stream_id(stream), *words])


def stream_generator(seed: int, stream: str, *address: int) -> np.random.Generator:
    """A PCG64 ``Generator`` on :func:`seed_sequence` ``(seed, stream, *address)``."""
    return np.random.Generator(np.random.PCG64(seed_sequence(seed, stream, *address)))


_SEED_MASK = 2**63 - 1


def stream_seed(seed: int, stream: str, *address: int) -> int:
    """A 63-bit integer seed from :func:`seed_sequence` (for ``torch.Generator.manual_seed``)."""
    return _seed63(seed_sequence(seed, stream, *address))


def combined_seed(seeds: Sequence[int]) -> int:
    """One 63-bit seed from several (e.g. the per-client seeds of clients trained together).

    Input: non-empty sequence of integers >= 0. Output: ``SeedSequence(seeds)``'s first 64-bit
    word, masked to 63 bits; depends on the order of ``seeds``.
    """
    words = [as_int("seeds", s, lower=0) for s in seeds]
    if not words:
        raise ValueError("seeds must not be empty")
    return _seed63(np.random.SeedSequence(words))


def _seed63(sequence: np.random.SeedSequence) -> int:
    """The first 64-bit word of ``sequence``, masked to 63 bits (torch takes signed seeds)."""
    return int(sequence.generate_state(1, np.uint64)[0]) & _SEED_MASK


def as_client_generators(
    rng: np.random.Generator | Sequence[np.random.Generator], n_clients: int
) -> list[np.random.Generator]:
    """One generator per client from either a single generator or a sequence of them.

    Input: ``rng``, a ``Generator`` or a sequence of exactly ``n_clients`` Generators;
    ``n_clients`` >= 1.
    Output: list of ``n_clients`` generators. A single generator is split deterministically:
    it draws 128 bits of entropy once, and child ``k`` is ``SeedSequence(entropy).spawn``'s
    k-th child, so child ``k`` does not depend on ``n_clients``. A sequence is used as is.
    """
    n_clients = as_int("n_clients", n_clients, lower=1)
    if isinstance(rng, np.random.Generator):
        entropy = [int(w) for w in rng.integers(0, _KEY_LIMIT, size=4, dtype=np.uint64)]
        children = np.random.SeedSequence(entropy=entropy).spawn(n_clients)
        return [np.random.Generator(np.random.PCG64(c)) for c in children]
    if isinstance(rng, str | bytes) or not isinstance(rng, Sequence | np.ndarray):
        raise ValueError(
            "rng must be a numpy.random.Generator or a sequence of n_clients Generators, "
            f"got {type(rng).__name__}"
        )
    gens = list(rng)
    if len(gens) != n_clients:
        raise ValueError(f"rng must hold exactly n_clients={n_clients} Generators, got {len(gens)}")
    for g in gens:
        if not isinstance(g, np.random.Generator):
            raise ValueError(
                f"rng must hold numpy.random.Generator objects, got {type(g).__name__}"
            )
    return gens
