"""Three sectors a site: TR 38.901's horizontal pattern by hand, drops into the sector's third,
association by the antenna, the 1x3x3 reuse colours, and a sectored network end to end."""

from __future__ import annotations

import numpy as np
import pytest

from channels.multicell import multicell_layout
from channels.pathloss_3gpp import SingleSlope
from channels.sectors import antenna_gain_db, into_sector

SLOPE = SingleSlope(1.5, reference_gain_db=-35.0)


def test_antenna_pattern_by_hand():
    boresight = np.array([30.0])
    at = lambda deg: np.array([[[np.cos(np.radians(deg)), np.sin(np.radians(deg))]]])  # noqa: E731
    assert antenna_gain_db(at(30.0), boresight)[0, 0] == pytest.approx(8.0)
    off = 8.0 - 12.0 * (60.0 / 65.0) ** 2
    assert antenna_gain_db(at(90.0), boresight)[0, 0] == pytest.approx(off)
    assert antenna_gain_db(at(-30.0), boresight)[0, 0] == pytest.approx(off)
    assert antenna_gain_db(at(210.0), boresight)[0, 0] == pytest.approx(8.0 - 30.0)  # behind


def test_into_sector_lands_in_the_wedge_and_keeps_the_distance():
    rng = np.random.default_rng(0)
    offsets = rng.uniform(-100, 100, size=(500, 2))
    sector = rng.integers(3, size=500)
    moved = into_sector(offsets, sector)
    np.testing.assert_allclose(np.hypot(*moved.T), np.hypot(*offsets.T), rtol=1e-12)
    bearing = np.degrees(np.arctan2(moved[:, 1], moved[:, 0]))
    centre = np.array([30.0, 150.0, 270.0])[sector]
    assert np.all(np.abs((bearing - centre + 180.0) % 360.0 - 180.0) <= 60.0 + 1e-9)


def test_sectored_layout_serves_by_the_facing_antenna_and_colours_by_sector():
    layout = multicell_layout(
        seed=2, n_clients=210, n_rings=1, isd_m=500.0, d_min_m=10.0, path_loss=SLOPE, sectors=3
    )
    assert layout.n_cells == 21 and layout.boresight_deg.tolist()[:3] == [30.0, 150.0, 270.0]
    # without shadowing the client dropped in cell k mod 21 is served by it: its site is the
    # nearest and its antenna the one facing it
    assert np.mean(layout.serving == np.arange(210) % 21) > 0.9
    # the three cells of a site sit at the site and share its distance
    np.testing.assert_array_equal(layout.distances_m[:, 0], layout.distances_m[:, 1])
    assert layout.colours(3).tolist()[:6] == [0, 1, 2, 0, 1, 2]
    assert np.all(layout.colours(1) == 0)
    omni = multicell_layout(
        seed=2, n_clients=210, n_rings=1, isd_m=500.0, d_min_m=10.0, path_loss=SLOPE
    )
    assert omni.n_cells == 7 and omni.boresight_deg is None


def test_a_sectored_network_runs_end_to_end(tmp_path):
    from wirelessfl.config import scenario_from_dict
    from wirelessfl.sim.runner import Run

    data = {
        "n_clients": 63,
        "n_scheduled": 2,
        "rounds": 4,
        "channel": {
            "bandwidth_hz": 1.0e6,
            "tx_power_dbm": 23.0,
            "reference_gain_db": -35.0,
            "noise_figure_db": 7.0,
        },
        "cells": {"n_rings": 1, "sectors": 3, "reuse": 3},
        "devices": {"include_compute": False},
        "controller": {"name": "tsfa", "V": 1.0e-4, "d_th_s": 1.0, "o_min": 0.05, "r_max": 16},
        "learner": {"kind": "surrogate", "shape": {"layer_shapes": [[64, 64], [64, 32]]}},
        "output": {"clients": True},
    }
    result = Run(scenario_from_dict(data), tmp_path / "run").execute()
    assert sorted(result.cells.cell.unique()) == list(range(21))
    assert np.all(result.clients.sinr_db <= result.clients.snr_db + 1e-12)
    # reuse 3 with sectors: a client is interfered only by the same-numbered sectors
    assert result.clients.interference_w.gt(0).any()
