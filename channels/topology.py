"""Client placement around the server."""

from __future__ import annotations

import numpy as np

from channels._validation import as_float, as_int
from channels.streams import client_generators

__all__ = ["annulus_distances"]


def annulus_distances(seed: int, n_clients: int, *, d_min_m: float, d_max_m: float) -> np.ndarray:
    """Client-to-server distances, uniform in area over the annulus d_min <= r <= d_max.

    r = sqrt(d_min² + U·(d_max² - d_min²)) with U ~ U[0, 1) drawn from client ``k``'s own
    stream ``client_generators(seed, range(N), stream="topology")[k]`` (first draw), so the
    CDF is (r² - d_min²)/(d_max² - d_min²) and adding clients keeps existing positions.
    Input: ``seed`` >= 0; ``n_clients`` >= 1; ``d_min_m`` >= 0 [m]; ``d_max_m`` > ``d_min_m``.
    Output: float64 ``(n_clients,)`` distances [m].
    """
    n_clients = as_int("n_clients", n_clients, lower=1)
    d_min = as_float("d_min_m", d_min_m, lower=0.0)
    d_max = as_float("d_max_m", d_max_m, lower=0.0, lower_op=">")
    if d_min >= d_max:
        raise ValueError(f"d_min_m must be < d_max_m, got d_min_m={d_min!r}, d_max_m={d_max!r}")
    gens = client_generators(seed, range(n_clients), stream="topology")
    u = np.array([g.random() for g in gens])
    return np.sqrt(d_min * d_min + u * (d_max * d_max - d_min * d_min))
