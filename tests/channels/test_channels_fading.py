"""Fading models against their closed-form statistics."""

import math

import numpy as np
import pytest
import scipy.special
import scipy.stats

from channels import (
    FADING_MODELS,
    GaussMarkovRayleigh,
    RayleighFading,
    RicianFading,
    client_generators,
    jakes_rho,
    make_fading,
)


def _gens(n, *, seed=123, block=0):
    return client_generators(seed, range(n), stream="fading", block=block)


def test_rayleigh_power_is_exp1():
    s = RayleighFading().sample(_gens(400), 500, 400)
    assert s.shape == (500, 400) and s.dtype == np.complex128
    p = np.abs(s.ravel()) ** 2
    assert p.mean() == pytest.approx(1.0, abs=0.01)
    assert scipy.stats.kstest(p[:20000], "expon").pvalue > 0.01
    # Real and imaginary parts are N(0, 1/2) and uncorrelated.
    assert np.var(s.real) == pytest.approx(0.5, abs=0.01)
    assert abs(np.mean(s.real * s.imag)) < 0.01


def test_gauss_markov_marginal_and_lag1():
    rho = 0.9
    s = GaussMarkovRayleigh(rho).sample(_gens(300), 1000, 300)
    p_last = np.abs(s[-1]) ** 2
    p_mid = np.abs(s[500]) ** 2
    # Rows are independent across clients: KS on the marginal at two times.
    assert scipy.stats.kstest(np.concatenate([p_last, p_mid]), "expon").pvalue > 0.01
    assert np.mean(np.abs(s) ** 2) == pytest.approx(1.0, abs=0.03)
    lag1 = np.mean(s[1:] * np.conj(s[:-1]))
    assert lag1.real == pytest.approx(rho, abs=0.01)
    assert abs(lag1.imag) < 0.01
    lag3 = np.mean(s[3:] * np.conj(s[:-3])).real
    assert lag3 == pytest.approx(rho**3, abs=0.02)


def test_gauss_markov_stationary_start():
    s = GaussMarkovRayleigh(0.95).sample(_gens(20000), 1, 20000)
    p = np.abs(s[0]) ** 2
    assert scipy.stats.kstest(p, "expon").pvalue > 0.01


def test_jakes_rho():
    # J0(2π·10 Hz·0.01 s) = J0(0.2π) = 0.9037126420924663 (series by hand / mpmath).
    assert jakes_rho(10.0, 0.01) == pytest.approx(0.9037126420924663, abs=1e-12)
    model = GaussMarkovRayleigh(doppler_hz=10.0, slot_s=0.01)
    assert model.rho == pytest.approx(float(scipy.special.j0(0.2 * math.pi)), rel=1e-14)
    # Past the first zero of J0 the AR(1) falls back to independent rounds.
    assert jakes_rho(100.0, 0.005) == 0.0  # J0(π) < 0
    assert GaussMarkovRayleigh(doppler_hz=0.0, slot_s=1.0).rho == 1.0


def test_continuation_across_blocks():
    rho, n = 0.7, 20000
    model = GaussMarkovRayleigh(rho)
    b0 = model.sample(_gens(n, block=0), 3, n)
    b1 = model.sample(_gens(n, block=1), 3, n, initial=b0[-1])
    boundary = np.mean(b1[0] * np.conj(b0[-1]))
    assert boundary.real == pytest.approx(rho, abs=0.02)
    # Continuing keeps the marginal CN(0, 1).
    assert np.mean(np.abs(b1[0]) ** 2) == pytest.approx(1.0, abs=0.03)
    # Without initial, block 1 is a fresh stationary start: uncorrelated with block 0.
    fresh = model.sample(_gens(n, block=1), 3, n)
    assert abs(np.mean(fresh[0] * np.conj(b0[-1]))) < 0.03
    # Same innovations: continued = rho·initial + sqrt(1-rho²)·w0.
    w0 = fresh[0]
    np.testing.assert_allclose(b1[0], rho * b0[-1] + math.sqrt(1 - rho**2) * w0, atol=1e-12)


def test_rician_mean_power_and_k_from_moments():
    k = 5.0
    s = RicianFading(k).sample(_gens(200), 1000, 200)
    p = np.abs(s.ravel()) ** 2
    assert p.mean() == pytest.approx(1.0, abs=0.01)
    # Moment estimator: γ = Var/mean² = (2K+1)/(K+1)², K = sqrt(1-γ)/(1-sqrt(1-γ)).
    g = p.var() / p.mean() ** 2
    k_hat = math.sqrt(1 - g) / (1 - math.sqrt(1 - g))
    assert k_hat == pytest.approx(k, rel=0.05)
    # LOS component: E[s] = sqrt(K/(K+1)).
    assert np.mean(s).real == pytest.approx(math.sqrt(k / (k + 1)), abs=0.01)


def test_rician_k0_is_rayleigh_with_same_streams():
    a = RicianFading(0.0).sample(_gens(4), 10, 4)
    b = RayleighFading().sample(_gens(4), 10, 4)
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-15)


@pytest.mark.parametrize("model", [RayleighFading(), GaussMarkovRayleigh(0.5), RicianFading(2.0)])
def test_columns_depend_only_on_their_stream(model):
    gens_a = _gens(6, seed=9)
    gens_b = _gens(6, seed=9)
    full = model.sample(gens_a, 20, 6)
    alone = model.sample([gens_b[2]], 20, 1)
    np.testing.assert_array_equal(full[:, 2], alone[:, 0])
    # A single Generator is split per client deterministically and prefix-stably.
    small = model.sample(np.random.default_rng(4), 20, 3)
    big = model.sample(np.random.default_rng(4), 20, 8)
    np.testing.assert_array_equal(small, big[:, :3])
    assert model.mean_power == 1.0


def test_iid_models_ignore_initial():
    init = np.full(3, 5 + 5j)
    for model in (RayleighFading(), RicianFading(1.0)):
        a = model.sample(_gens(3), 4, 3, initial=init)
        b = model.sample(_gens(3), 4, 3)
        np.testing.assert_array_equal(a, b)


def test_registry():
    assert set(FADING_MODELS) == {"rayleigh", "gauss_markov", "rician", "none"}
    assert isinstance(make_fading("rayleigh"), RayleighFading)
    assert make_fading("gauss_markov", rho=0.3).rho == 0.3
    assert make_fading("rician", k_factor=3.0).k_factor == 3.0
    with pytest.raises(
        ValueError,
        match="unknown fading model 'nakagami'; accepted: 'rayleigh', 'gauss_markov', 'rician'",
    ):
        make_fading("nakagami")
    with pytest.raises(ValueError, match="rician"):
        make_fading("rician", k=3.0)


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: GaussMarkovRayleigh(1.5), "rho"),
        (lambda: GaussMarkovRayleigh(-0.1), "rho"),
        (lambda: GaussMarkovRayleigh(math.nan), "rho"),
        (lambda: GaussMarkovRayleigh(), "rho"),
        (lambda: GaussMarkovRayleigh(0.5, doppler_hz=1.0, slot_s=1.0), "rho"),
        (lambda: GaussMarkovRayleigh(doppler_hz=-1.0, slot_s=1.0), "doppler_hz"),
        (lambda: GaussMarkovRayleigh(doppler_hz=1.0, slot_s=0.0), "slot_s"),
        (lambda: RicianFading(-1.0), "k_factor"),
        (lambda: RicianFading(math.inf), "k_factor"),
        (lambda: RayleighFading().sample(_gens(2), 0, 2), "n_rounds"),
        (lambda: RayleighFading().sample(_gens(2), 3, 3), "rng"),
        (lambda: GaussMarkovRayleigh(0.5).sample(_gens(2), 3, 2, initial=np.ones(3)), "initial"),
        (
            lambda: GaussMarkovRayleigh(0.5).sample(_gens(2), 3, 2, initial=np.array([1, np.nan])),
            "initial",
        ),
    ],
)
def test_bad_inputs(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_gauss_markov_prefix_stable_bitwise():
    model = GaussMarkovRayleigh(0.95)
    small = model.sample(_gens(3, seed=2), 300, 3, initial=np.array([1.0, 1j, -0.5]))
    init_big = np.concatenate([[1.0, 1j, -0.5], np.zeros(497)])
    big = model.sample(_gens(500, seed=2), 300, 500, initial=init_big)
    np.testing.assert_array_equal(small, big[:, :3])


def test_no_fading_is_unit_gain_and_draws_nothing():
    model = make_fading("none")
    gens = _gens(3)
    states = [g.bit_generator.state for g in gens]
    s = model.sample(gens, 4, 3)
    assert s.shape == (4, 3) and s.dtype == complex and np.all(s == 1.0)
    assert [g.bit_generator.state for g in gens] == states
    assert model.mean_power == 1.0 and not model.time_correlated
