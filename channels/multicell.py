"""A multi-cell layout: sites on a hexagonal grid, N clients dropped in their cells, the large-
scale power gain of every client-site link and each client's serving cell. Numpy only.

**Links.** The power gain of client k at site s is g_ks = 10^{(σ_SF z_ks − PL(d_ks))/10} with
the scenario's path-loss model (:mod:`channels.pathloss_3gpp`; ``single_slope`` is the paper's
10^{G_ref/10} d^{−2γ} 10^{σ z/10}), d_ks the 2-D distance with wrap-around
(:func:`channels.hexgrid.wrapped_distances_m`), and one LoS draw u_ks and one shadowing draw
z_ks per link from client k's own stream ``"cell_links"`` (C uniforms, then C normals), so
adding clients keeps the others' links. Shadowing is independent across sites (TR 38.901
correlates the sites of a client by 0.5; that correlation is not modelled).

**Sectors.** With three sectors a site (:mod:`channels.sectors`) the site carries three cells
3i, 3i + 1, 3i + 2, each link's gain gains the cell's antenna gain at the client's angle, and the
three cells of a site share the site's LoS and shadowing draws (a cell's link is the site's).

**Association.** Client k is served by the cell of least coupling loss −10 log10 g_ks
(:func:`channels.hexgrid.serving_cells`: path loss, shadowing and the antenna), which with
shadowing may not be the cell it was dropped in.

**Drops.** ``per_cell``: client k is dropped in cell k mod C (N/C clients a cell; with sectors
in the third of the site's hexagon its antenna faces); ``area``: in a cell drawn uniformly from
its stream (uniform over the grid's area).
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
    wrapped_offsets_m,
)
from channels.interference import REUSE_FACTORS, reuse_colours
from channels.pathloss_3gpp import PathLossModel
from channels.sectors import BORESIGHTS_DEG, SECTOR_COUNTS, antenna_gain_db, into_sector
from channels.streams import client_generators

__all__ = ["DROPS", "MultiCellLayout", "link_gains", "multicell_layout"]

#: how clients are dropped (module docstring)
DROPS = ("per_cell", "area")


@dataclass(frozen=True)
class MultiCellLayout:
    """Sites, clients and links of a multi-cell network (module docstring).

    ``lattice_ij`` (C, 2) each cell's site's lattice coordinates; ``sites_m`` (C, 2) each
    cell's site [m] (three cells share one with sectors);
    ``clients_m`` (N, 2) [m]; ``distances_m`` (N, C) 2-D distances with wrap-around [m];
    ``link_gain`` (N, C) large-scale power gains g_ks (dimensionless); ``serving`` (N,) each
    client's serving site; ``home`` (N,) the cell each was dropped in; ``translations_m``
    (W, 2) the wrap-around copies [m]; ``los_uniform`` and ``shadow_z`` (N, C) each link's
    draws (None where the layout was given, not drawn); ``boresight_deg`` (C,) each cell's
    antenna direction with sectors, else None.
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
    boresight_deg: np.ndarray | None = None

    def colours(self, reuse: int) -> np.ndarray:
        """(C,) each cell's colour under frequency reuse ``reuse``: the site's
        (:func:`channels.interference.reuse_colours`), or with sectors the sector's (reuse 3
        a third of the band per sector, the 1x3x3 plan; reuse 1 all of it)."""
        if self.boresight_deg is None:
            return reuse_colours(self.lattice_ij, reuse)
        if reuse not in REUSE_FACTORS:
            raise ValueError(f"reuse: one of {REUSE_FACTORS}, got {reuse!r}")
        return np.zeros(self.n_cells, np.int64) if reuse == 1 else np.arange(self.n_cells) % 3

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
    sectors: int = 1,
) -> MultiCellLayout:
    """The layout of ``n_clients`` >= 1 clients over ``n_rings`` >= 0 rings of sites at
    inter-site distance ``isd_m`` > 0 [m] with ``sectors`` (1 or 3) cells a site, each client
    at least ``d_min_m`` [m] from the site it is dropped at (module docstring)."""
    n = as_int("n_clients", n_clients, lower=1)
    isd = as_float("isd_m", isd_m, lower=0.0, lower_op=">")
    if drop not in DROPS:
        raise ValueError(f"drop: one of {', '.join(DROPS)}, got {drop!r}")
    if sectors not in SECTOR_COUNTS:
        raise ValueError(f"sectors: one of {SECTOR_COUNTS}, got {sectors!r}")
    sites = hex_sites_m(n_rings, isd)
    n_sites = len(sites)
    site_of = np.repeat(np.arange(n_sites), sectors)  # each cell's site
    c = site_of.size
    if drop == "per_cell":
        dropped = np.arange(n) % c
    else:
        gens = client_generators(seed, range(n), stream="cell_drop")
        dropped = np.array([int(g.integers(c)) for g in gens], dtype=np.intp)
    clients = drop_in_cells(seed, site_of[dropped], sites, isd, d_min_m)
    boresight = None
    if sectors == 3:
        boresight = np.tile(np.asarray(BORESIGHTS_DEG), n_sites)
        home_site = sites[site_of[dropped]]
        clients = home_site + into_sector(clients - home_site, dropped % 3)
    translations = cluster_translations_m(n_rings, isd) if wrap_around else np.zeros((1, 2))
    los_u = np.empty((n, n_sites))
    shadow_z = np.empty((n, n_sites))
    for k, gen in enumerate(client_generators(seed, range(n), stream="cell_links")):
        los_u[k] = gen.random(n_sites)
        shadow_z[k] = gen.standard_normal(n_sites)
    cells_m = sites[site_of]
    distances, gain = link_gains(
        clients,
        cells_m,
        translations,
        path_loss,
        los_u[:, site_of],
        shadow_z[:, site_of],
        boresight,
    )
    serving = serving_cells(-10.0 * np.log10(gain))
    return MultiCellLayout(
        hex_lattice(n_rings)[site_of],
        cells_m,
        clients,
        distances,
        gain,
        serving,
        dropped,
        translations,
        los_u[:, site_of],
        shadow_z[:, site_of],
        boresight,
    )


def link_gains(
    clients_m: np.ndarray,
    cells_m: np.ndarray,
    translations_m: np.ndarray,
    path_loss: PathLossModel,
    los_uniform: np.ndarray,
    shadow_z: np.ndarray,
    boresight_deg: np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray]:
    """((N, C) wrapped distances [m], (N, C) power gains) of clients at ``clients_m`` (N, 2)
    to cells at ``cells_m`` (C, 2): path loss with the links' draws, times the sector
    antenna's gain where ``boresight_deg`` (C,) is given (:mod:`channels.sectors`)."""
    offsets = wrapped_offsets_m(clients_m, cells_m, translations_m)
    distances = np.maximum(np.hypot(offsets[..., 0], offsets[..., 1]), 1e-9)
    gain, _ = path_loss.power_gain(distances, los_uniform, shadow_z)
    gain = np.asarray(gain, dtype=float)
    if boresight_deg is not None:
        gain = gain * 10.0 ** (antenna_gain_db(offsets, boresight_deg) / 10.0)
    return distances, gain
