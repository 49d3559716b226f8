"""The hexagonal grid of many cells (channels/hexgrid.py): 1, 7, 19 sites in spiral rings with
every neighbour one inter-site distance away; with wrap-around every site of a 7- or 19-site
cluster sees the same rings of neighbours as in an infinite lattice (6 at d, 6 at √3 d, 6 at
2 d); clients land in their own cell (its site is their nearest, with wrap-around), beyond
d_min, uniform in area (E[r²] = 5 R² / 12 for a hexagon of circumradius R); the serving cell
is the least coupling loss; the sites are Sionna SYS's own hexagonal grid's (pairwise distances,
where the nr extra is installed)."""

from __future__ import annotations

import numpy as np
import pytest

from channels.hexgrid import (
    cluster_translations_m,
    drop_in_cells,
    hex_sites_m,
    n_sites,
    serving_cells,
    wrapped_distances_m,
)
from channels.nr_bler import sionna_version

ISD_M = 500.0


def _pairwise(points: np.ndarray) -> np.ndarray:
    gaps = points[:, None, :] - points[None, :, :]
    return np.sqrt((gaps**2).sum(-1))


@pytest.mark.parametrize(("rings", "count"), [(0, 1), (1, 7), (2, 19), (3, 37)])
def test_rings_hold_1_7_19_37_sites_a_lattice_apart(rings, count):
    sites = hex_sites_m(rings, ISD_M)
    assert n_sites(rings) == count and sites.shape == (count, 2)
    np.testing.assert_array_equal(sites[0], [0.0, 0.0])
    d = _pairwise(sites)
    np.fill_diagonal(d, np.inf)
    if count > 1:
        np.testing.assert_allclose(d.min(axis=1), ISD_M)
        ring = np.round(np.hypot(*sites.T) / ISD_M, 6)
        assert ring[1:7].max() == pytest.approx(1.0)  # ring 1 first, as the spiral goes


@pytest.mark.parametrize("rings", [1, 2])
def test_with_wrap_around_every_site_sees_an_infinite_lattice(rings):
    sites = hex_sites_m(rings, ISD_M)
    wrapped = wrapped_distances_m(sites, sites, cluster_translations_m(rings, ISD_M))
    np.testing.assert_allclose(np.diag(wrapped), 0.0, atol=1e-9)
    for row in wrapped / ISD_M:
        others = np.sort(row)[1:]
        want = {1: [1.0] * 6, 2: [1.0] * 6 + [np.sqrt(3.0)] * 6 + [2.0] * 6}[rings]
        np.testing.assert_allclose(others, want, rtol=1e-9)


def test_clients_land_uniformly_in_their_own_cell_beyond_d_min():
    sites = hex_sites_m(2, ISD_M)
    cells = np.repeat(np.arange(19), 400)
    xy = drop_in_cells(7, cells, sites, ISD_M, d_min_m=10.0)
    d = wrapped_distances_m(xy, sites, cluster_translations_m(2, ISD_M))
    np.testing.assert_array_equal(np.argmin(d, axis=1), cells)
    own = d[np.arange(len(cells)), cells]
    assert own.min() >= 10.0 and own.max() <= ISD_M / np.sqrt(3.0) + 1e-9
    radius = ISD_M / np.sqrt(3.0)
    assert np.mean(own**2) == pytest.approx(5 * radius**2 / 12, rel=0.03)  # d_min: 0.03 %
    again = drop_in_cells(7, cells[:50], sites, ISD_M, d_min_m=10.0)
    np.testing.assert_array_equal(again, xy[:50])  # a client's position is its own stream's


def test_the_serving_cell_is_the_least_coupling_loss():
    loss_db = np.array([[120.0, 118.0, 130.0], [90.0, 90.0, 95.0], [101.0, 140.0, 100.5]])
    np.testing.assert_array_equal(serving_cells(loss_db), [1, 0, 2])


def test_bad_sizes_are_refused():
    with pytest.raises(ValueError, match="d_min_m must be below"):
        drop_in_cells(0, [0], hex_sites_m(0, ISD_M), ISD_M, d_min_m=300.0)
    with pytest.raises(ValueError, match="isd_m"):
        hex_sites_m(1, 0.0)


@pytest.mark.skipif(sionna_version() is None, reason="the nr extra is not installed")
def test_the_sites_are_sionnas_hexagonal_grid():
    torch = pytest.importorskip("torch")
    from sionna.sys.topology import HexGrid

    grid = HexGrid(num_rings=2, isd=ISD_M, device="cpu")
    theirs = grid.cell_loc.detach().cpu().numpy().reshape(-1, 3)[:, :2].astype(float)
    assert torch is not None and theirs.shape == (19, 2)
    ours = hex_sites_m(2, ISD_M)
    np.testing.assert_allclose(
        np.sort(_pairwise(theirs).ravel()), np.sort(_pairwise(ours).ravel()), atol=1e-3
    )
