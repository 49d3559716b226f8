"""A multi-cell layout: sites on a hexagonal grid, N clients dropped in their cells, the large-
scale power gain of every client-site link and each client's serving cell. Numpy only.

**Links.** The power gain of client k at site s is g_ks = 10^{(σ_SF z_ks − PL(d_ks))/10} with
the scenario's path-loss model (:mod:`channels.pathloss_3gpp`; ``single_slope`` is the paper's
10^{G_ref/10} d^{−2γ} 10^{σ z/10}), d_ks the 2-D distance with wrap-around
(:func:`channels.hexgrid.wrapped_distances_m`), and one LoS draw u_ks and one shadowing draw
z_ks per link from client k's own stream ``"cell_links"`` (C uniforms, then C normals), so
adding clients keeps the others' links. Shadowing is independent across sites (TR 38.901
correlates the sites of a client by 0.5; that correlation is not modelled).

**Association.** Client k is served by the site of least coupling loss −10 log10 g_ks
(:func:`channels.hexgrid.serving_cells`: path loss and shadowing), which with shadowing may
not be the cell it was dropped in.

**Drops.** ``per_cell``: client k is dropped in cell k mod C (N/C clients a cell);
``area``: in a cell drawn uniformly from its stream (uniform over the grid's area).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from channels._validation import as_float, as_int
from channels.hexgrid import (
    cluster_translations_m,
    drop_in_cells,
    hex_lattice,
    hex_sites_m,
    serving_cells,
    wrapped_distances_m,
)
from channels.pathloss_3gpp import PathLossModel
from channels.streams import client_generators

__all__ = ["DROPS", "MultiCellLayout", "multicell_layout"]

#: how clients are dropped (module docstring)
DROPS = ("per_cell", "area")


@dataclass(frozen=True)
class MultiCellLayout:
    """Sites, clients and links of a multi-cell network (module docstring).

    ``lattice_ij`` (C, 2) the sites' lattice coordinates; ``sites_m`` (C, 2) [m];
    ``clients_m`` (N, 2) [m]; ``distances_m`` (N, C) 2-D distances with wrap-around [m];
    ``link_gain`` (N, C) large-scale power gains g_ks (dimensionless); ``serving`` (N,) each
    client's serving site; ``home`` (N,) the cell each was dropped in; ``translations_m``
    (W, 2) the wrap-around copies [m]; ``los_uniform`` and ``shadow_z`` (N, C) each link's
    draws (None where the layout was given, not drawn).
    """

    lattice_ij: np.ndarray
    sites_m: np.ndarray
    clients_m: np.ndarray
    distances_m: np.ndarray
    link_gain: np.ndarray
    serving: np.ndarray
    home: np.ndarray | None = None
    translations_m: np.ndarray | None = None
    los_uniform: np.ndarray | None = None
    shadow_z: np.ndarray | None = None

    @property
    def n_cells(self) -> int:
        """C, the number of sites."""
        return int(len(self.sites_m))

    @property
    def serving_gain(self) -> np.ndarray:
        """(N,) each client's gain at its serving site."""
        return self.link_gain[np.arange(len(self.serving)), self.serving]

    @property
    def coupling_loss_db(self) -> np.ndarray:
        """(N, C) −10 log10 g_ks [dB]."""
        return -10.0 * np.log10(self.link_gain)

    def members(self, cell: int) -> np.ndarray:
        """The clients served by ``cell``, ascending."""
        return np.flatnonzero(self.serving == cell)


def multicell_layout(
    *,
    seed: int,
    n_clients: int,
    n_rings: int,
    isd_m: float,
    d_min_m: float,
    path_loss: PathLossModel,
    wrap_around: bool = True,
    drop: str = "per_cell",
) -> MultiCellLayout:
    """The layout of ``n_clients`` >= 1 clients over ``n_rings`` >= 0 rings of sites at
    inter-site distance ``isd_m`` > 0 [m], each client at least ``d_min_m`` [m] from the site
    it is dropped at (module docstring)."""
    n = as_int("n_clients", n_clients, lower=1)
    isd = as_float("isd_m", isd_m, lower=0.0, lower_op=">")
    if drop not in DROPS:
        raise ValueError(f"drop: one of {', '.join(DROPS)}, got {drop!r}")
    lattice = hex_lattice(n_rings)
    sites = hex_sites_m(n_rings, isd)
    c = len(sites)
    if drop == "per_cell":
        dropped = np.arange(n) % c
    else:
        gens = client_generators(seed, range(n), stream="cell_drop")
        dropped = np.array([int(g.integers(c)) for g in gens], dtype=np.intp)
    clients = drop_in_cells(seed, dropped, sites, isd, d_min_m)
    translations = cluster_translations_m(n_rings, isd) if wrap_around else np.zeros((1, 2))
    distances = np.maximum(wrapped_distances_m(clients, sites, translations), 1e-9)
    los_u = np.empty((n, c))
    shadow_z = np.empty((n, c))
    for k, gen in enumerate(client_generators(seed, range(n), stream="cell_links")):
        los_u[k] = gen.random(c)
        shadow_z[k] = gen.standard_normal(c)
    gain, _ = path_loss.power_gain(distances, los_u, shadow_z)
    gain = np.asarray(gain, dtype=float)
    serving = serving_cells(-10.0 * np.log10(gain))
    return MultiCellLayout(
        lattice, sites, clients, distances, gain, serving, dropped, translations, los_u, shadow_z
    )
