"""A round's SINR in a network of cells: two cells, two clients, by hand; reuse; the baseline."""

from __future__ import annotations

import numpy as np
import pytest

from channels.multicell import MultiCellLayout
from wirelessfl.sim.cell_interference import CellUploads, round_sinr

B_HZ = 1.0e6
NOISE_W = 1.0e-13  # over a cell's band


def _two_cells(lattice=((0.0, 0.0), (1.0, 0.0))):
    """Client 0 in cell 0, client 1 in cell 1; link gains g[k, site]."""
    gain = np.array([[1e-9, 2e-11], [5e-11, 4e-9]])
    return MultiCellLayout(
        lattice_ij=np.array(lattice),
        sites_m=np.zeros((2, 2)),
        clients_m=np.zeros((2, 2)),
        distances_m=np.ones((2, 2)),
        link_gain=gain,
        serving=np.array([0, 1]),
    )


def _uploads(layout, shares, power=(0.2, 0.1), reuse=1):
    """Each cell's single upload, its SNR that of its own link (no fading)."""
    out = []
    for k in (0, 1):
        snr = power[k] * layout.link_gain[k, k] / NOISE_W
        out.append(
            CellUploads(np.array([k]), np.array([shares[k]]), np.array([power[k]]), np.array([snr]))
        )
    return out


def _sinr(layout, uploads, **kw):
    args = dict(
        seed=0,
        round_index=0,
        bandwidth_hz=B_HZ,
        reuse=1,
        noise_power_w=NOISE_W,
        noise_bandwidth="band",
        interference=True,
        cross_fading=False,
    )
    return round_sinr(uploads, layout, **{**args, **kw})


def test_two_cells_full_overlap_by_hand():
    layout = _two_cells()
    got = _sinr(layout, _uploads(layout, (1.0, 1.0)))
    n0 = NOISE_W / B_HZ
    s0 = 0.2 / B_HZ * 1e-9
    i0 = 0.1 / B_HZ * 5e-11  # client 1's density at site 0 (g[1, 0])
    s1 = 0.1 / B_HZ * 4e-9
    i1 = 0.2 / B_HZ * 2e-11  # client 0's at site 1 (g[0, 1])
    np.testing.assert_allclose(got.sinr, [s0 / (n0 + i0), s1 / (n0 + i1)], rtol=1e-12)
    np.testing.assert_allclose(got.interference_w, [0.1 * 5e-11, 0.2 * 2e-11], rtol=1e-12)
    np.testing.assert_array_equal(got.rate_sinr, got.sinr)


def test_partial_overlap_counts_the_covered_fraction():
    layout = _two_cells()
    # client 0 on [0, 0.5), client 1 on [0, 0.25): client 1 covers half of client 0's band
    got = _sinr(layout, _uploads(layout, (0.5, 0.25)))
    n0 = NOISE_W / B_HZ
    sinr0 = (0.2 / B_HZ * 1e-9) / (n0 + 0.5 * 0.1 / B_HZ * 5e-11)
    sinr1 = (0.1 / B_HZ * 4e-9) / (n0 + 1.0 * 0.2 / B_HZ * 2e-11)
    np.testing.assert_allclose(got.sinr, [sinr0, sinr1], rtol=1e-12)


def test_share_noise_densities_follow_the_share_and_the_rate_takes_sinr_times_share():
    layout = _two_cells()
    got = _sinr(layout, _uploads(layout, (0.5, 0.5)), noise_bandwidth="share")
    n0 = NOISE_W / B_HZ
    d0, d1 = 0.2 / (0.5 * B_HZ), 0.1 / (0.5 * B_HZ)
    sinr = np.array([d0 * 1e-9 / (n0 + d1 * 5e-11), d1 * 4e-9 / (n0 + d0 * 2e-11)])
    np.testing.assert_allclose(got.sinr, sinr, rtol=1e-12)
    np.testing.assert_allclose(got.rate_sinr, sinr * 0.5, rtol=1e-12)


def test_reuse_three_separates_neighbouring_colours_and_the_baseline_is_the_snr():
    # lattice (0, 0) and (1, 0): colours 0 and 1 under reuse 3, so no overlap
    layout = _two_cells()
    uploads = _uploads(layout, (1.0, 1.0))
    noise_w = NOISE_W
    got = _sinr(layout, uploads, reuse=3, bandwidth_hz=3 * B_HZ, noise_power_w=noise_w)
    snr = np.array([u.snr[0] for u in uploads])
    np.testing.assert_allclose(got.sinr, snr, rtol=1e-12)
    assert np.all(got.interference_w == 0.0)
    # the same colour (lattice (0, 0) and (1, 1): (i - j) mod 3 = 0 for both) does interfere
    same = _two_cells(lattice=((0.0, 0.0), (1.0, 1.0)))
    assert np.all(_sinr(same, uploads, reuse=3, bandwidth_hz=3 * B_HZ).sinr < snr)
    baseline = _sinr(layout, uploads, interference=False)
    np.testing.assert_array_equal(baseline.sinr, snr)


def test_cross_fading_is_drawn_per_round_and_reproducible():
    layout = _two_cells()
    uploads = _uploads(layout, (1.0, 1.0))
    a = _sinr(layout, uploads, cross_fading=True, round_index=3)
    b = _sinr(layout, uploads, cross_fading=True, round_index=3)
    c = _sinr(layout, uploads, cross_fading=True, round_index=4)
    np.testing.assert_array_equal(a.sinr, b.sinr)
    assert not np.array_equal(a.sinr, c.sinr)
    # the serving link keeps the SNR the cell drew: only the interference fades
    still = _sinr(layout, uploads, cross_fading=False)
    assert np.all(a.sinr != still.sinr)
    assert a.sinr[0] == pytest.approx(
        uploads[0].snr[0] / (1 + a.interference_w[0] / NOISE_W), rel=1e-12
    )


def test_expected_interference_of_fully_loaded_neighbours_by_hand():
    from wirelessfl.sim.cell_interference import expected_interference_w

    layout = _two_cells()
    power = np.array([0.2, 0.1])
    got = expected_interference_w(layout, power, reuse=1, per_cell=np.ones(2))
    np.testing.assert_allclose(got, [0.1 * 5e-11, 0.2 * 2e-11], rtol=1e-12)
    analog = expected_interference_w(layout, power, reuse=1, per_cell=np.array([3.0, 2.0]))
    np.testing.assert_allclose(analog, [2 * 0.1 * 5e-11, 3 * 0.2 * 2e-11], rtol=1e-12)
    # different colours under reuse 3: nothing
    assert np.all(expected_interference_w(layout, power, reuse=3, per_cell=np.ones(2)) == 0)
