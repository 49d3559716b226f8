"""Topology, path loss, shadowing and the Cell."""

import math

import numpy as np
import pytest
import scipy.stats

from channels import (
    Cell,
    GaussMarkovRayleigh,
    RayleighFading,
    annulus_distances,
    client_generators,
    path_gain,
    path_power_gain,
    shadowing_power_gain,
)


def test_annulus_cdf_ks():
    d_min, d_max = 10.0, 500.0
    r = annulus_distances(17, 5000, d_min_m=d_min, d_max_m=d_max)
    assert r.shape == (5000,) and r.min() >= d_min and r.max() <= d_max

    def cdf(x):
        return np.clip((x**2 - d_min**2) / (d_max**2 - d_min**2), 0.0, 1.0)

    assert scipy.stats.kstest(r, cdf).pvalue > 0.01


def test_annulus_reproducible_and_prefix_stable():
    a = annulus_distances(3, 10, d_min_m=1.0, d_max_m=2.0)
    b = annulus_distances(3, 1000, d_min_m=1.0, d_max_m=2.0)
    np.testing.assert_array_equal(a, b[:10])
    np.testing.assert_array_equal(a, annulus_distances(3, 10, d_min_m=1.0, d_max_m=2.0))


def test_path_gain_amplitude_vs_power():
    assert path_gain(100.0, 2.0) == pytest.approx(1e-4)
    assert path_power_gain(100.0, 2.0) == pytest.approx(1e-8)
    d = np.array([1.0, 10.0, 50.0])
    np.testing.assert_allclose(path_power_gain(d, 1.7), path_gain(d, 1.7) ** 2, rtol=1e-14)


def test_shadowing():
    gens = client_generators(1, range(20000), stream="shadowing")
    g = shadowing_power_gain(gens, 20000, 8.0)
    x_db = 10 * np.log10(g)
    assert np.mean(x_db) == pytest.approx(0.0, abs=0.2)
    assert np.std(x_db) == pytest.approx(8.0, rel=0.02)
    np.testing.assert_array_equal(shadowing_power_gain(np.random.default_rng(0), 5, 0.0), 1.0)


def test_from_geometry_gain_hand_value():
    cell = Cell.from_geometry(
        n_clients=2,
        seed=0,
        d_min_m=1.0,
        d_max_m=1000.0,
        path_loss_exponent=1.5,
        noise_power_w=1e-12,
        tx_power_w=0.2,
        distances_m=[10.0, 100.0],
        reference_loss_db=30.0,
    )
    # G = 0.2 W · 10^-3 · d^{-3}.
    np.testing.assert_allclose(cell.large_scale_power_gain, [2e-7, 2e-10], rtol=1e-12)
    np.testing.assert_allclose(cell.mean_snr, [2e5, 2e2], rtol=1e-12)
    np.testing.assert_array_equal(cell.distances_m, [10.0, 100.0])
    assert isinstance(cell.fading, RayleighFading)


def test_from_geometry_draws_annulus():
    cell = Cell.from_geometry(
        n_clients=50,
        seed=4,
        d_min_m=20.0,
        d_max_m=200.0,
        path_loss_exponent=1.0,
        noise_power_w=1.0,
        shadowing_sigma_db=0.0,
    )
    np.testing.assert_array_equal(
        cell.distances_m, annulus_distances(4, 50, d_min_m=20.0, d_max_m=200.0)
    )
    np.testing.assert_allclose(cell.large_scale_power_gain, cell.distances_m**-2.0)


def test_from_mean_snr_and_snr_block():
    cell = Cell.from_mean_snr(mean_snr_db=10.0, n_clients=300, seed=8, noise_power_w=2e-3)
    assert cell.n_clients == 300 and cell.distances_m is None
    np.testing.assert_allclose(cell.mean_snr, 10.0, rtol=1e-12)
    snr, last = cell.snr_block(0, 400)
    assert snr.shape == (400, 300) and snr.dtype == np.float64 and last.shape == (300,)
    assert snr.mean() == pytest.approx(10.0, rel=0.02)
    assert scipy.stats.kstest(snr[-1] / 10.0, "expon").pvalue > 0.01
    per_client = Cell.from_mean_snr(mean_snr_db=np.array([0.0, 20.0]), n_clients=2, seed=1)
    np.testing.assert_allclose(per_client.mean_snr, [1.0, 100.0])


def test_snr_block_uses_fading_stream():
    cell = Cell.from_mean_snr(mean_snr_db=0.0, n_clients=4, seed=6)
    snr, last = cell.snr_block(3, 5)
    s = RayleighFading().sample(client_generators(6, range(4), stream="fading", block=3), 5, 4)
    np.testing.assert_allclose(snr, np.abs(s) ** 2, rtol=1e-14)
    np.testing.assert_array_equal(last, s[-1])


def test_cell_prefix_stable_and_reproducible():
    small = Cell.from_mean_snr(mean_snr_db=5.0, n_clients=10, seed=99)
    big = Cell.from_mean_snr(mean_snr_db=5.0, n_clients=1000, seed=99)
    a, _ = small.snr_block(2, 20)
    b, _ = big.snr_block(2, 20)
    np.testing.assert_array_equal(a, b[:, :10])
    np.testing.assert_array_equal(a, small.snr_block(2, 20)[0])
    assert not np.array_equal(a, small.snr_block(1, 20)[0])


def test_cell_block_continuation_gauss_markov():
    rho = 0.8
    cell = Cell.from_mean_snr(
        mean_snr_db=0.0, n_clients=20000, seed=3, fading=GaussMarkovRayleigh(rho)
    )
    _, last0 = cell.snr_block(0, 2)
    snr1, _ = cell.snr_block(1, 2, initial=last0)
    # Power correlation of CN(0,1) AR(1) at lag 1 is ρ² (corr(|s_t|², |s_{t+1}|²) = |ρ|²).
    r = np.corrcoef(np.abs(last0) ** 2, snr1[0])[0, 1]
    assert r == pytest.approx(rho**2, abs=0.03)


def test_cell_arrays_read_only():
    cell = Cell.from_mean_snr(mean_snr_db=0.0, n_clients=3, seed=0)
    with pytest.raises(ValueError):
        cell.large_scale_power_gain[0] = 5.0


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: annulus_distances(1, 5, d_min_m=10.0, d_max_m=10.0), "d_min_m"),
        (lambda: annulus_distances(1, 5, d_min_m=20.0, d_max_m=10.0), "d_min_m"),
        (lambda: annulus_distances(1, 5, d_min_m=-1.0, d_max_m=10.0), "d_min_m"),
        (lambda: annulus_distances(1, 0, d_min_m=1.0, d_max_m=10.0), "n_clients"),
        (lambda: path_gain(-1.0, 2.0), "distance_m"),
        (lambda: path_gain(0.0, 2.0), "distance_m"),
        (lambda: path_power_gain([1.0, np.nan], 2.0), "distance_m"),
        (lambda: path_gain(1.0, -2.0), "exponent"),
        (lambda: shadowing_power_gain(np.random.default_rng(0), 3, -1.0), "sigma_db"),
        (lambda: Cell(np.array([1.0, -1.0]), 1.0, RayleighFading(), 0), "large_scale_power_gain"),
        (lambda: Cell(np.array([1.0, np.inf]), 1.0, RayleighFading(), 0), "large_scale_power_gain"),
        (lambda: Cell(np.ones(2), 0.0, RayleighFading(), 0), "noise_power_w"),
        (lambda: Cell(np.ones(2), 1.0, "rayleigh", 0), "fading"),
        (lambda: Cell(np.ones(2), 1.0, RayleighFading(), -3), "seed"),
        (lambda: Cell.from_mean_snr(mean_snr_db=np.nan, n_clients=2, seed=0), "mean_snr_db"),
        (lambda: Cell.from_mean_snr(mean_snr_db=[1.0] * 3, n_clients=2, seed=0), "mean_snr_db"),
        (
            lambda: Cell.from_geometry(
                n_clients=2,
                seed=0,
                d_min_m=50.0,
                d_max_m=5.0,
                path_loss_exponent=1.0,
                noise_power_w=1.0,
            ),
            "d_min_m",
        ),
        (
            lambda: Cell.from_geometry(
                n_clients=2,
                seed=0,
                d_min_m=1.0,
                d_max_m=5.0,
                path_loss_exponent=1.0,
                noise_power_w=1.0,
                distances_m=[1.0, -2.0],
            ),
            "distances_m",
        ),
        (
            lambda: Cell.from_geometry(
                n_clients=2,
                seed=0,
                d_min_m=1.0,
                d_max_m=5.0,
                path_loss_exponent=1.0,
                noise_power_w=1.0,
                tx_power_w=-1.0,
            ),
            "tx_power_w",
        ),
        (
            lambda: Cell.from_geometry(
                n_clients=2,
                seed=0,
                d_min_m=1.0,
                d_max_m=5.0,
                path_loss_exponent=1.0,
                noise_power_w=1.0,
                shadowing_sigma_db=-4.0,
            ),
            "sigma_db",
        ),
        (
            lambda: Cell.from_mean_snr(mean_snr_db=0.0, n_clients=2, seed=0).snr_block(-1, 2),
            "block",
        ),
        (
            lambda: Cell.from_mean_snr(mean_snr_db=0.0, n_clients=2, seed=0).snr_block(0, 0),
            "n_rounds",
        ),
    ],
)
def test_bad_inputs(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_amplitude_exponent_documented():
    assert "amplitude" in (path_gain.__doc__ or "")
    assert "q^{-2γ}" in (path_power_gain.__doc__ or "")
    assert math.isclose(path_power_gain(2.0, 1.0), 0.25)
