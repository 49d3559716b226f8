"""Inter-cell interference on FDMA uplinks (channels/interference.py), by hand: two cells, one
client each on the whole band at reuse 1, SINR = (P_0 G_00 / B) / (N0 + P_1 G_10 / B); on
different colours at reuse 3 no interference and the SNR of a third of the band; a partial
overlap counts the covered part of the band; clients of one cell never interfere; the share
noise rule spreads the power over the share; neighbouring cells get different colours."""

from __future__ import annotations

import numpy as np
import pytest

from channels.hexgrid import hex_lattice, hex_sites_m
from channels.interference import band_intervals, cell_subbands, reuse_colours, uplink_sinr

B_HZ, N0 = 1.0e6, 1.0e-20
P = np.array([0.2, 0.2])
GAIN = np.array([[1e-10, 3e-13], [1e-12, 2e-10]])  # [client, site]


def _sinr(cells, shares, colours, reuse, power=P, gain=GAIN, noise="band"):
    intervals = band_intervals(cells, shares, cell_subbands(colours, reuse))
    return uplink_sinr(power, gain, cells, intervals, bandwidth_hz=B_HZ, reuse=reuse,
                       noise_psd_w_per_hz=N0, noise_bandwidth=noise)  # fmt: skip


def test_two_cells_two_clients_by_hand():
    sinr, interference_w = _sinr([0, 1], [1.0, 1.0], np.array([0, 0]), 1)
    # client 0 hears client 1 at G[1, 0] = 1e-12; client 1 hears client 0 at G[0, 1] = 3e-13
    want0 = (0.2 * 1e-10 / B_HZ) / (N0 + 0.2 * 1e-12 / B_HZ)
    want1 = (0.2 * 2e-10 / B_HZ) / (N0 + 0.2 * 3e-13 / B_HZ)
    np.testing.assert_allclose(sinr, [want0, want1], rtol=1e-12)
    np.testing.assert_allclose(interference_w, [0.2 * 1e-12, 0.2 * 3e-13], rtol=1e-12)


def test_reuse_3_on_two_colours_is_interference_free():
    sinr, interference_w = _sinr([0, 1], [1.0, 1.0], np.array([0, 1]), 3)
    third = B_HZ / 3
    np.testing.assert_allclose(sinr, [0.2 * 1e-10 / third / N0, 0.2 * 2e-10 / third / N0])
    np.testing.assert_array_equal(interference_w, [0.0, 0.0])


def test_a_partial_overlap_counts_the_covered_part():
    # cell 0: clients 0 and 1 on [0, 0.5) and [0.5, 1); cell 1: client 2 on [0, 0.25)
    gain = np.array([[1e-10, 1e-13], [1e-10, 1e-13], [4e-12, 1e-10]])
    power = np.full(3, 0.2)
    sinr, _ = _sinr([0, 0, 1], [0.5, 0.5, 0.25], np.array([0, 0]), 1, power, gain)
    density = 0.2 / B_HZ
    want = [
        density * 1e-10 / (N0 + density * 4e-12 * 0.5),  # half its interval covered
        density * 1e-10 / N0,  # not covered, and its own cell's client never interferes
        density * 1e-10 / (N0 + density * 1e-13 * 1.0),  # its whole interval under client 0
    ]
    np.testing.assert_allclose(sinr, want, rtol=1e-12)


def test_the_share_rule_spreads_the_power_over_the_share():
    sinr, _ = _sinr([0, 1], [0.5, 1.0], np.array([0, 0]), 1, noise="share")
    signal = 0.2 / (0.5 * B_HZ) * 1e-10
    interference = 0.2 / B_HZ * 1e-12  # client 1 spreads over the whole band
    assert sinr[0] == pytest.approx(signal / (N0 + interference), rel=1e-12)


def test_neighbouring_cells_get_different_colours_at_reuse_3():
    ij = hex_lattice(2)
    colours = reuse_colours(ij, 3)
    sites = hex_sites_m(2, 500.0)
    d = np.hypot(*(sites[:, None, :] - sites[None, :, :]).transpose(2, 0, 1))
    neighbours = np.isclose(d, 500.0)
    assert neighbours.sum() == 2 * 42  # 42 edges among 19 hexagons
    assert not (neighbours & (colours[:, None] == colours[None, :])).any()
    assert set(colours) == {0, 1, 2} and (reuse_colours(ij, 1) == 0).all()
    with pytest.raises(ValueError, match="reuse: one of"):
        reuse_colours(ij, 2)


def test_shares_above_one_in_a_cell_are_refused():
    with pytest.raises(ValueError, match="sum to 1.2"):
        band_intervals([0, 0], [0.6, 0.6], cell_subbands(np.array([0]), 1))
