"""FSLoRA's random-k sketch (Def. 3.1) as index sets, and what sending one costs. No torch.

"Federated Sketching LoRA: On-Device Collaborative Fine-Tuning of Large Language Models",
W. Fang, D.-J. Han, L. Yuan, S. Hosseinalipour, C. G. Brinton, arXiv:2501.19389.

A sketch ``S = (r/k) sum_{j in I} e_j e_j^T`` (Def. 3.1) is fixed by its index set ``I``: k of
the r indices, uniform over the k-subsets (without replacement), so ``E[S] = I_r`` and
``E[S^2] = (r/k) I_r`` (Lemma D.3). Sets are drawn from the ``sketch`` stream addressed by
(seed, client, round), so a client's sketch does not depend on which clients trained before
and a resumed run draws the same sets.
"""

from __future__ import annotations

import numpy as np

from channels.payload import index_overhead_bits
from channels.streams import stream_generator

__all__ = ["draw_index_sets", "sketch_side_bits"]

#: The ``channels.streams`` stream the index sets are drawn from.
STREAM = "sketch"


def draw_index_sets(
    seed: int, client: int, round_index: int, *, rank: int, k: int, n_sets: int
) -> tuple[tuple[int, ...], ...]:
    """``n_sets`` independent index sets I of ``k`` of ``range(rank)``, each ascending.

    Args:
        seed: the run seed.
        client: client id i.
        round_index: t.
        rank: r, the global rank.
        k: k_i, 1 <= k <= r.
        n_sets: how many sets (1: one for every layer; one per adapted layer otherwise).

    Returns:
        ``n_sets`` tuples of ``k`` distinct ints in ``[0, r)``, ascending (``range(r)`` when
        ``k == r``).
    """
    if not 1 <= k <= rank:
        raise ValueError(f"need 1 <= k <= r, got k = {k}, r = {rank}")
    rng = stream_generator(seed, STREAM, client, round_index)
    return tuple(
        tuple(int(j) for j in np.sort(rng.choice(rank, size=k, replace=False)))
        for _ in range(n_sets)
    )


def sketch_side_bits(k: int, rank: int) -> int:
    """Bits that tell a client one index set: min(bitmask r, list k ceil(log2 r)); 0 if k = r."""
    return int(index_overhead_bits(k, rank))
