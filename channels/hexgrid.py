"""Many cells: a hexagonal grid of sites, clients dropped in their cells, wrap-around distances
and the serving cell of least coupling loss. Numpy only.

**The grid.** Sites sit on a triangular lattice of inter-site distance d (``isd_m``), spanned
by a1 = d (1, 0) and a2 = d (1/2, √3/2): site i a1 + j a2 for every (i, j) within ``n_rings``
hexagonal rings of the centre, C = 1 + 3 n (n + 1) sites (1, 7, 19, 37, ...), in spiral order:
the centre, then ring 1, ring 2, ... each counter-clockwise from its easternmost site. A site's
cell is its Voronoi region, a hexagon of circumradius d / √3 with vertices up and down.

**Wrap-around** (the system-level simulators' standard, TR 38.901's for 19 sites): the cluster
of C cells tiles the plane by translations T = (n + 1) a1 + n a2 and its five 60° rotations,
|T| = d √C; a distance with wrap-around is the least over the cluster's seven copies (the
original and the six translations), so every cell, the cluster's edge included, is
surrounded by six rings of interferers as in an infinite network.

**Clients** are dropped uniformly in area in their cell's hexagon at least ``d_min_m`` from its
site, each from its own stream (:func:`channels.streams.client_generators`, stream
``"cells"``), so adding clients keeps the others' positions.
"""

from __future__ import annotations

import numpy as np

from channels._validation import as_float, as_int
from channels.streams import client_generators

__all__ = [
    "cluster_translations_m",
    "drop_in_cells",
    "hex_lattice",
    "hex_sites_m",
    "n_sites",
    "serving_cells",
    "wrapped_distances_m",
    "wrapped_offsets_m",
]

SQRT3 = float(np.sqrt(3.0))
#: the six unit directions from a site to its neighbours (0°, 60°, ... 300°)
_NEIGHBOUR_ANGLES = np.deg2rad(np.arange(0, 360, 60))
#: draws per rejection round when dropping a client (the hexagon fills 3/4 of its bounding box)
_TRIES = 16


def n_sites(n_rings: int) -> int:
    """C = 1 + 3 n (n + 1) sites within ``n_rings`` rings."""
    n = as_int("n_rings", n_rings, lower=0)
    return 1 + 3 * n * (n + 1)


def _axial_spiral(n_rings: int) -> np.ndarray:
    """(C, 2) lattice coordinates (i, j) in spiral order (module docstring)."""
    steps = [(-1, 1), (-1, 0), (0, -1), (1, -1), (1, 0), (0, 1)]  # counter-clockwise sides
    cells = [(0, 0)]
    for ring in range(1, n_rings + 1):
        i, j = ring, 0
        for di, dj in steps:
            for _ in range(ring):
                cells.append((i, j))
                i, j = i + di, j + dj
    return np.array(cells, dtype=float)


def _to_xy(axial: np.ndarray, isd_m: float) -> np.ndarray:
    """(…, 2) lattice coordinates to positions [m]: i a1 + j a2."""
    i, j = axial[..., 0], axial[..., 1]
    return np.stack([isd_m * (i + 0.5 * j), isd_m * (SQRT3 / 2.0) * j], axis=-1)


def hex_lattice(n_rings: int) -> np.ndarray:
    """(C, 2) the sites' lattice coordinates (i, j) in spiral order (module docstring)."""
    return _axial_spiral(as_int("n_rings", n_rings, lower=0))


def hex_sites_m(n_rings: int, isd_m: float) -> np.ndarray:
    """(C, 2) site positions [m] of ``n_rings`` rings at inter-site distance ``isd_m``."""
    isd = as_float("isd_m", isd_m, lower=0.0, lower_op=">")
    return _to_xy(hex_lattice(n_rings), isd)


def cluster_translations_m(n_rings: int, isd_m: float) -> np.ndarray:
    """(7, 2) the cluster's copies for wrap-around [m]: (0, 0) and the six translations
    (module docstring); only (0, 0) for a single cell (``n_rings`` 0)."""
    n = as_int("n_rings", n_rings, lower=0)
    isd = as_float("isd_m", isd_m, lower=0.0, lower_op=">")
    if n == 0:
        return np.zeros((1, 2))
    t = _to_xy(np.array([n + 1.0, float(n)]), isd)
    angles = _NEIGHBOUR_ANGLES
    rotated = np.stack(
        [
            t[0] * np.cos(angles) - t[1] * np.sin(angles),
            t[0] * np.sin(angles) + t[1] * np.cos(angles),
        ],
        axis=-1,
    )
    return np.vstack([np.zeros((1, 2)), rotated])


def wrapped_distances_m(
    clients_m: np.ndarray, sites_m: np.ndarray, translations_m: np.ndarray
) -> np.ndarray:
    """(N, C) 2-D distances [m] from ``clients_m`` (N, 2) to ``sites_m`` (C, 2), the least over
    the site copies ``sites + translations_m`` (W, 2) (module docstring)."""
    clients = np.asarray(clients_m, dtype=float)
    copies = np.asarray(sites_m, float)[None, :, :] + np.asarray(translations_m, float)[:, None, :]
    gaps = clients[:, None, None, :] - copies[None, :, :, :]  # (N, W, C, 2)
    return np.sqrt((gaps**2).sum(axis=-1)).min(axis=1)


def wrapped_offsets_m(
    clients_m: np.ndarray, sites_m: np.ndarray, translations_m: np.ndarray
) -> np.ndarray:
    """(N, C, 2) each client's position [m] relative to the nearest copy of each site (the
    copy :func:`wrapped_distances_m` measures to)."""
    clients = np.asarray(clients_m, dtype=float)
    copies = np.asarray(sites_m, float)[None, :, :] + np.asarray(translations_m, float)[:, None, :]
    gaps = clients[:, None, None, :] - copies[None, :, :, :]  # (N, W, C, 2)
    nearest = np.argmin((gaps**2).sum(axis=-1), axis=1)  # (N, C)
    n, c = nearest.shape
    return gaps[np.arange(n)[:, None], nearest, np.arange(c)[None, :]]


def _in_hexagon(offsets_m: np.ndarray, isd_m: float) -> np.ndarray:
    """(…,) whether offsets (…, 2) from a site lie in its cell: within d/2 of the site along
    each of the three neighbour directions."""
    inside = np.ones(offsets_m.shape[:-1], dtype=bool)
    for angle in _NEIGHBOUR_ANGLES[:3]:
        along = offsets_m[..., 0] * np.cos(angle) + offsets_m[..., 1] * np.sin(angle)
        inside &= np.abs(along) <= isd_m / 2.0
    return inside


def drop_in_cells(
    seed: int, cell_of_client: np.ndarray, sites_m: np.ndarray, isd_m: float, d_min_m: float
) -> np.ndarray:
    """(N, 2) client positions [m]: client k uniform in area in the hexagon of site
    ``cell_of_client[k]``, at least ``d_min_m`` from it, from client k's own stream (rejection
    from the hexagon's bounding box)."""
    cells = np.asarray(cell_of_client, dtype=np.intp)
    isd = as_float("isd_m", isd_m, lower=0.0, lower_op=">")
    d_min = as_float("d_min_m", d_min_m, lower=0.0)
    if d_min >= isd / 2.0:
        raise ValueError(f"d_min_m must be below isd_m / 2 = {isd / 2.0:g}, got {d_min:g}")
    radius = isd / SQRT3  # circumradius: vertices at (0, ±R)
    half_width = isd / 2.0
    out = np.empty((len(cells), 2))
    for k, gen in enumerate(client_generators(seed, range(len(cells)), stream="cells")):
        while True:
            u = gen.random((_TRIES, 2))
            offsets = np.stack([(2 * u[:, 0] - 1) * half_width, (2 * u[:, 1] - 1) * radius], -1)
            ok = _in_hexagon(offsets, isd) & (np.hypot(offsets[:, 0], offsets[:, 1]) >= d_min)
            if ok.any():
                out[k] = np.asarray(sites_m, float)[cells[k]] + offsets[int(np.argmax(ok))]
                break
    return out


def serving_cells(coupling_loss_db: np.ndarray) -> np.ndarray:
    """(N,) the cell of least coupling loss (path loss and shadowing, [dB]) of each client's
    row of ``coupling_loss_db`` (N, C); the lowest index on a tie."""
    return np.argmin(np.asarray(coupling_loss_db, dtype=float), axis=1)
