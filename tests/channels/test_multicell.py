"""The multi-cell layout: drops, wrap-around distances, link gains by hand, association."""

from __future__ import annotations

import numpy as np
import pytest

from channels.hexgrid import SQRT3, cluster_translations_m, hex_sites_m
from channels.multicell import multicell_layout
from channels.pathloss_3gpp import SingleSlope, make_path_loss
from channels.streams import client_generators

ISD = 500.0
SLOPE = SingleSlope(1.5, reference_gain_db=-35.0, shadowing_sigma_db=8.0)


def _layout(n=70, **kw):
    args = dict(seed=4, n_clients=n, n_rings=1, isd_m=ISD, d_min_m=10.0, path_loss=SLOPE)
    return multicell_layout(**{**args, **kw})


def test_per_cell_drop_puts_client_k_in_cell_k_mod_c():
    layout = _layout()
    sites = hex_sites_m(1, ISD)
    offsets = layout.clients_m - sites[np.arange(70) % 7]
    # inside the hexagon of circumradius ISD / sqrt(3): within ISD / 2 along 0, 60, 120 degrees
    for angle in np.deg2rad([0.0, 60.0, 120.0]):
        along = offsets[:, 0] * np.cos(angle) + offsets[:, 1] * np.sin(angle)
        assert np.all(np.abs(along) <= ISD / 2 + 1e-9)
    assert np.all(np.hypot(offsets[:, 0], offsets[:, 1]) >= 10.0)
    assert np.all(np.hypot(offsets[:, 0], offsets[:, 1]) <= ISD / SQRT3 + 1e-9)


def test_link_gains_are_the_path_loss_of_wrapped_distances_with_per_link_shadowing():
    layout = _layout()
    copies = hex_sites_m(1, ISD)[None] + cluster_translations_m(1, ISD)[:, None]
    k, s = 23, 5
    d = min(np.hypot(*(layout.clients_m[k] - copies[w, s])) for w in range(7))
    assert layout.distances_m[k, s] == pytest.approx(d, rel=1e-12)
    gen = client_generators(4, [k], stream="cell_links")[0]
    gen.random(7)
    z = gen.standard_normal(7)[s]
    by_hand = 10 ** (-35.0 / 10) * d ** (-3.0) * 10 ** (8.0 * z / 10)
    assert layout.link_gain[k, s] == pytest.approx(by_hand, rel=1e-12)


def test_serving_cell_is_the_least_coupling_loss_and_shadowing_moves_some_clients():
    layout = _layout(n=700)
    assert np.array_equal(layout.serving, np.argmin(layout.coupling_loss_db, axis=1))
    moved = np.mean(layout.serving != np.arange(700) % 7)
    assert 0.05 < moved < 0.6  # 8 dB shadowing re-associates a share of the clients
    no_shadow = _layout(n=700, path_loss=SingleSlope(1.5, reference_gain_db=-35.0))
    # without shadowing the nearest (wrapped) site serves: the cell of the drop
    assert np.array_equal(no_shadow.serving, np.arange(700) % 7)


def test_adding_clients_keeps_the_others_links_and_area_drops_cover_every_cell():
    small, large = _layout(n=30, drop="area"), _layout(n=60, drop="area")
    assert np.array_equal(small.link_gain, large.link_gain[:30])
    assert set(_layout(n=700, drop="area").serving) == set(range(7))


def test_3gpp_umi_layout_and_refusals():
    umi = make_path_loss("3gpp_umi", carrier_ghz=3.5, h_ut_m=1.5)
    layout = _layout(n=50, path_loss=umi, isd_m=200.0)
    assert np.all(np.isfinite(layout.coupling_loss_db)) and layout.n_cells == 7
    with pytest.raises(ValueError, match="drop"):
        _layout(drop="ring")
    with pytest.raises(ValueError, match="d_min_m"):
        _layout(d_min_m=300.0)
