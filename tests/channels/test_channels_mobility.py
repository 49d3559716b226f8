"""Mobility models against closed forms and an independent replay of their definitions."""

from __future__ import annotations

import math

import numpy as np
import pytest

import channels
from channels.mobility import (
    MOBILITY_MODELS,
    GaussMarkovMobility,
    MobilityModel,
    RandomWaypoint,
    Static,
    doppler_hz,
    make_mobility,
)
from channels.registry import UnknownNameError
from channels.streams import client_generators
from channels.topology import annulus_distances

SEED = 7
CELL = {"d_min_m": 10.0, "d_max_m": 100.0}


def _initial_angles(n, seed=SEED):
    """2π·(first draw) and 2π·(second draw) of each client's "mobility_angle" stream."""
    gens = client_generators(seed, range(n), stream="mobility_angle")
    draws = np.array([g.random(2) for g in gens])
    return 2 * np.pi * draws[:, 0], 2 * np.pi * draws[:, 1]


RWP_LEGS_PER_BLOCK = 64  # the documented L: legs j in [L·b, L·(b+1)) share block b's generator


def _rwp_replay(seed, n, k, t, *, d_min, d_max, v_min, v_max, pause=0.0):
    """Client k's RWP position at t and its legs, rebuilt from the documented definition.

    Leg j takes row j % L of ``g.random((L, 3))``, g the client's "mobility" generator of
    block j // L.
    """
    r0 = annulus_distances(seed, n, d_min_m=d_min, d_max_m=d_max)[k]
    theta0 = _initial_angles(n, seed)[0][k]
    p = np.array([r0 * math.cos(theta0), r0 * math.sin(theta0)])
    t0, j, legs, blocks = 0.0, 0, [], {}
    while True:
        b, row = divmod(j, RWP_LEGS_PER_BLOCK)
        if b not in blocks:
            g = client_generators(seed, [k], stream="mobility", block=b)[0]
            blocks[b] = g.random((RWP_LEGS_PER_BLOCK, 3))
        u = blocks[b][row]
        r = math.sqrt(d_min**2 + u[0] * (d_max**2 - d_min**2))
        wp = np.array([r * math.cos(2 * np.pi * u[1]), r * math.sin(2 * np.pi * u[1])])
        v = v_min + u[2] * (v_max - v_min)
        dist = float(np.linalg.norm(wp - p))
        t_arr = t0 + dist / v
        legs.append((t0, t_arr, v))
        if t < t_arr + pause:
            if t >= t_arr:
                return wp, legs
            return p + (wp - p) * (v * (t - t0) / dist), legs
        p, t0, j = wp, t_arr + pause, j + 1


def _models(n, seed=SEED, **cell):
    cell = cell or CELL
    return [
        Static(seed, n, **cell),
        RandomWaypoint(seed, n, **cell, speed_min_mps=1.0, speed_max_mps=5.0, pause_s=2.0),
        GaussMarkovMobility(seed, n, **cell, mean_speed_mps=3.0, alpha=0.7, step_s=0.5),
    ]


# -- geometry at time 0 and bounds ------------------------------------------------------------
def test_positions_at_time_zero_match_annulus_distances_and_angle_stream():
    n = 30
    r0 = annulus_distances(SEED, n, **CELL)
    theta, _ = _initial_angles(n)
    for model in _models(n):
        assert isinstance(model, MobilityModel) and model.n_clients == n
        np.testing.assert_array_equal(model.distances_m(0.0), r0)  # exactly the static geometry
        p = model.positions_m(0.0)
        assert p.shape == (n, 2) and p.dtype == np.float64
        np.testing.assert_allclose(np.hypot(p[:, 0], p[:, 1]), r0, rtol=1e-12)
        np.testing.assert_allclose(p, np.c_[r0 * np.cos(theta), r0 * np.sin(theta)], rtol=1e-12)


def test_static_never_moves():
    m = Static(SEED, 12, **CELL)
    p0 = m.positions_m(0.0)
    for t in (1.0, 1e6, 3.5):
        np.testing.assert_array_equal(m.positions_m(t), p0)
        np.testing.assert_array_equal(m.distances_m(t), annulus_distances(SEED, 12, **CELL))
    assert m.mean_speed_mps == 0.0


@pytest.mark.parametrize("kind", ["random_waypoint", "gauss_markov"])
def test_clients_stay_inside_the_outer_radius_and_distances_clip_at_d_min(kind):
    # A thin annulus: straight legs and Gauss-Markov steps cross the inner disc often.
    cell = {"d_min_m": 40.0, "d_max_m": 50.0}
    params = (
        {"speed_min_mps": 2.0, "speed_max_mps": 20.0}
        if kind == "random_waypoint"
        else {"mean_speed_mps": 15.0, "alpha": 0.9, "step_s": 1.0}
    )
    m = make_mobility(kind, seed=SEED, n_clients=40, **cell, **params)
    inside_inner = 0
    for t in np.arange(0.25, 300.0, 0.75):
        p = m.positions_m(t)
        norm = np.hypot(p[:, 0], p[:, 1])
        assert norm.max() <= 50.0 * (1 + 1e-12)
        np.testing.assert_array_equal(m.distances_m(t), np.maximum(norm, 40.0))
        inside_inner += int((norm < 40.0).sum())
    assert inside_inner > 0  # paths do pass through the inner disc; distances are clipped


# -- random waypoint -----------------------------------------------------------------------------
def test_random_waypoint_matches_a_replay_of_its_definition():
    n, kw = 6, {"d_min": 10.0, "d_max": 100.0, "v_min": 1.0, "v_max": 5.0, "pause": 3.0}
    m = RandomWaypoint(SEED, n, 10.0, 100.0, 1.0, 5.0, pause_s=3.0)
    for t in (0.0, 0.5, 17.0, 95.25, 400.0, 1234.5):
        p = m.positions_m(t)
        for k in range(n):
            expected, _ = _rwp_replay(SEED, n, k, t, **kw)
            np.testing.assert_allclose(p[k], expected, rtol=1e-10, atol=1e-9)


def test_random_waypoint_replay_across_blocks_of_legs_in_any_query_order():
    # Legs of ~0.4 s (a 12 m cell at 20-40 m/s, pause 0.05 s): ~600 legs by 250 s, i.e. ~9
    # blocks of 64. Going back in time replays from 0 with the block-0 draws again.
    n, kw = 5, {"d_min": 2.0, "d_max": 12.0, "v_min": 20.0, "v_max": 40.0, "pause": 0.05}
    assert RandomWaypoint.LEGS_PER_BLOCK == RWP_LEGS_PER_BLOCK
    m = RandomWaypoint(SEED, n, 2.0, 12.0, 20.0, 40.0, pause_s=0.05)
    for t in (100.0, 3.7, 61.2, 61.3, 250.0, 20.0):
        p = m.positions_m(t)
        for k in range(n):
            expected, _ = _rwp_replay(SEED, n, k, t, **kw)
            np.testing.assert_allclose(p[k], expected, rtol=1e-10, atol=1e-9)
    n_legs = [len(_rwp_replay(SEED, n, k, 250.0, **kw)[1]) for k in range(n)]
    assert min(n_legs) > 3 * RWP_LEGS_PER_BLOCK  # several block changes were checked
    # Bit-exact: a fresh, larger model queried late first equals the one queried above.
    fresh = RandomWaypoint(SEED, n + 3, 2.0, 12.0, 20.0, 40.0, pause_s=0.05)
    np.testing.assert_array_equal(fresh.positions_m(250.0)[:n], m.positions_m(250.0))


def test_random_waypoint_leg_speeds_in_bounds_and_distance_is_speed_times_time():
    n = 8
    m = RandomWaypoint(SEED, n, 10.0, 100.0, 1.0, 5.0)
    # Black box: over short intervals on one straight leg (midpoint on the chord, equidistant)
    # the speed |Δx|/Δt lies in [1, 5].
    dt = 0.5
    times = np.arange(0.0, 600.0, dt / 2)
    p = np.array([m.positions_m(t) for t in times])  # (T, N, 2)
    a, mid, b = p[:-2:2], p[1:-1:2], p[2::2]
    straight = np.linalg.norm(mid - (a + b) / 2, axis=-1) < 1e-9
    speed = np.linalg.norm(b - a, axis=-1) / dt
    assert straight.mean() > 0.9
    assert speed[straight].min() >= 1.0 - 1e-9 and speed[straight].max() <= 5.0 + 1e-9
    # Inside a replayed leg the distance travelled is v·(t2 - t1).
    kw = {"d_min": 10.0, "d_max": 100.0, "v_min": 1.0, "v_max": 5.0}
    for k in range(n):
        _, legs = _rwp_replay(SEED, n, k, 500.0, **kw)
        for t_start, t_arr, v in legs[:-1]:
            assert 1.0 <= v <= 5.0
            t1, t2 = t_start + 0.1 * (t_arr - t_start), t_start + 0.9 * (t_arr - t_start)
            moved = np.linalg.norm(m.positions_m(t2)[k] - m.positions_m(t1)[k])
            assert moved == pytest.approx(v * (t2 - t1), rel=1e-9)


def test_random_waypoint_pauses_at_the_waypoint():
    m = RandomWaypoint(SEED, 5, 10.0, 100.0, 2.0, 2.0, pause_s=1e9)
    # A leg is at most 200 m at 2 m/s: every client has arrived by t = 100 s and stays put.
    np.testing.assert_array_equal(m.positions_m(1e3), m.positions_m(1e8))
    assert not np.array_equal(m.positions_m(1e3), m.positions_m(0.0))


def test_random_waypoint_long_run_speed_is_the_harmonic_mean():
    # With pause 0, leg length D and speed v are independent, so the time-average speed is
    # Σ D / Σ D/v -> 1/E[1/v] = (b - a)/ln(b/a) = 4/ln 5 ≈ 2.485 m/s for v ~ U[1, 5] (the
    # arithmetic mean 3 would be wrong). 100 clients × 2000 s ≈ 5,500 legs: the per-leg CV of
    # D/v is ~0.7, so the standard error of the estimate is ~1%; chords over dt = 0.25 s cut
    # corners at waypoints by < 0.2%. A 4% tolerance is > 3.5 standard errors and still
    # excludes the arithmetic mean (+21%).
    a, b = 1.0, 5.0
    m = RandomWaypoint(SEED, 100, 10.0, 100.0, a, b)
    closed = (b - a) / math.log(b / a)
    assert m.mean_speed_mps == pytest.approx(closed, rel=1e-12)
    dt, horizon = 0.25, 2000.0
    total, prev = 0.0, m.positions_m(0.0)
    for t in np.arange(dt, horizon + dt / 2, dt):
        cur = m.positions_m(t)
        total += np.linalg.norm(cur - prev, axis=-1).sum()
        prev = cur
    estimate = total / (100 * horizon)
    assert estimate == pytest.approx(closed, rel=0.04)


def test_mean_speed_with_equal_speed_bounds_is_that_speed():
    assert RandomWaypoint(SEED, 2, **CELL, speed_min_mps=3.0, speed_max_mps=3.0).mean_speed_mps == 3
    g = GaussMarkovMobility(SEED, 2, **CELL, mean_speed_mps=1.5, alpha=0.5, step_s=1.0)
    assert g.mean_speed_mps == 1.5


# -- determinism ---------------------------------------------------------------------------------
@pytest.mark.parametrize("index", [1, 2])
def test_query_order_does_not_change_the_answer(index):
    m = _models(10)[index]
    t1, t2 = 123.25, 611.0  # Gauss-Markov: t2 is past the first block of 256 steps
    p2 = m.positions_m(t2)
    p1 = m.positions_m(t1)
    np.testing.assert_array_equal(m.positions_m(t2), p2)
    np.testing.assert_array_equal(m.positions_m(t1), p1)
    np.testing.assert_array_equal(m.distances_m(t2), np.maximum(np.hypot(*p2.T), 10.0))


@pytest.mark.parametrize("index", [1, 2])
def test_resume_a_fresh_model_queried_late_equals_a_stepped_one(index):
    stepped = _models(10)[index]
    rng = np.random.default_rng(0)
    for t in np.cumsum(rng.uniform(0.1, 9.0, 120)):  # irregular round starts up to ~540 s
        stepped.positions_m(t)
    t = 700.3
    np.testing.assert_array_equal(_models(10)[index].positions_m(t), stepped.positions_m(t))


@pytest.mark.parametrize("index", [1, 2])
def test_adding_clients_keeps_existing_trajectories(index):
    few, many = _models(5)[index], _models(9)[index]
    for t in (0.0, 3.3, 77.0, 300.5, 900.0):
        np.testing.assert_array_equal(many.positions_m(t)[:5], few.positions_m(t))


# -- Gauss-Markov ----------------------------------------------------------------------------
def _big_cell_steps(n, n_steps, *, step_s=1.0, **params):
    """Step positions (n_steps+1, n, 2) in a 100 km cell, and the clients far from its edge."""
    m = GaussMarkovMobility(SEED, n, 0.0, 1e5, step_s=step_s, **params)
    p = np.array([m.positions_m(i * step_s) for i in range(n_steps + 1)])
    far = np.hypot(p[0, :, 0], p[0, :, 1]) < 0.8e5  # no reflection, outside the edge band
    return m, p[:, far], far


def test_gauss_markov_alpha_one_is_a_straight_line_at_constant_speed():
    n, n_steps, s_bar, step = 12, 300, 2.0, 0.5
    m, p, far = _big_cell_steps(n, n_steps, step_s=step, mean_speed_mps=s_bar, alpha=1.0)
    _, heading = _initial_angles(n)
    u = np.c_[np.cos(heading), np.sin(heading)][far]
    steps = np.arange(n_steps + 1)[:, None, None]
    np.testing.assert_allclose(p, p[0] + steps * s_bar * step * u, rtol=0, atol=1e-8)
    # Between steps: linear interpolation, here the same straight line.
    t = 40.3
    np.testing.assert_allclose(m.positions_m(t)[far], p[0] + (t * s_bar) * u, rtol=0, atol=1e-8)


def test_gauss_markov_alpha_one_reflects_at_the_edge_without_changing_speed():
    m = GaussMarkovMobility(SEED, 20, 10.0, 100.0, mean_speed_mps=7.0, alpha=1.0, step_s=1.0)
    p = np.array([m.positions_m(float(i)) for i in range(200)])
    assert np.hypot(p[..., 0], p[..., 1]).max() <= 100.0 * (1 + 1e-12)
    step = np.linalg.norm(np.diff(p, axis=0), axis=-1)
    assert step.max() <= 7.0 * (1 + 1e-12)
    # Reflected steps are shorter (a bent path's chord); most are the full 7 m.
    assert np.mean(np.isclose(step, 7.0, rtol=1e-9)) > 0.8


def test_gauss_markov_alpha_zero_speeds_and_directions_are_iid():
    # α = 0: s_n = s̄ + σ_s·w_n and d_n = d̄_k + σ_d·w'_n, i.i.d. The step x_{n+1} - x_n is
    # s_n·Δ in direction d_n (n >= 1; s_0 = s̄ is fixed). With σ_s = s̄/4 the floor at 0 moves
    # the mean by 7e-6·σ_s (negligible). ~20,000 samples: SE(mean) = σ_s/√n ≈ 0.0018·s̄, so a
    # 1% tolerance is > 5 SE; SE(std)/σ ≈ 1/√(2n) = 0.5%, tolerance 3%; SE(lag-1 corr)
    # ≈ 1/√n = 0.7%, tolerance 3%.
    s_bar, sigma_s, sigma_d, n = 2.0, 0.5, 0.3, 64
    _, p, far = _big_cell_steps(
        n,
        500,
        mean_speed_mps=s_bar,
        alpha=0.0,
        speed_sigma_mps=sigma_s,
        direction_sigma_rad=sigma_d,
    )
    step = np.diff(p, axis=0)[1:]  # (steps, clients, 2), n >= 1
    s = np.linalg.norm(step, axis=-1)
    assert s.size > 15_000
    assert s.mean() == pytest.approx(s_bar, rel=0.01)
    assert s.std() == pytest.approx(sigma_s, rel=0.03)
    lag1 = np.mean((s[1:] - s.mean()) * (s[:-1] - s.mean())) / s.var()
    assert abs(lag1) < 0.03
    _, d_bar = _initial_angles(n)
    dev = np.angle(np.exp(1j * (np.arctan2(step[..., 1], step[..., 0]) - d_bar[far])))
    assert abs(dev.mean()) < 0.01 and dev.std() == pytest.approx(sigma_d, rel=0.03)


def test_gauss_markov_speed_is_ar1_with_lag1_correlation_alpha():
    # Stationary AR(1): corr(s_n, s_{n-1}) = α, Var(s_n) = σ_s² (the sqrt(1-α²) factor). After
    # 100 steps of burn-in (0.8^200 ≈ 0) ~16,000 samples: SE(corr) ≈ sqrt((1-α²)/n) ≈ 0.005,
    # tolerance 0.03; the effective sample size for the variance is n(1-α²)/(1+α²) ≈ 3,500,
    # SE ≈ 2.4%, tolerance 12%.
    alpha, s_bar, sigma_s = 0.8, 3.0, 0.6
    _, p, _ = _big_cell_steps(40, 500, mean_speed_mps=s_bar, alpha=alpha, speed_sigma_mps=sigma_s)
    s = np.linalg.norm(np.diff(p, axis=0), axis=-1)[100:]
    c = s - s.mean()
    assert np.mean(c[1:] * c[:-1]) / c.var() == pytest.approx(alpha, abs=0.03)
    assert s.var() == pytest.approx(sigma_s**2, rel=0.12)
    assert s.mean() == pytest.approx(s_bar, rel=0.02)


def test_gauss_markov_mean_direction_points_to_the_centre_in_the_edge_band():
    # α = 0 and no noise: every step is s̄·Δ long, toward the centre when the step starts in the
    # band |x| > d_max - margin, else along the client's d̄_k.
    s_bar, margin = 3.0, 20.0
    m = GaussMarkovMobility(
        SEED,
        15,
        10.0,
        100.0,
        mean_speed_mps=s_bar,
        alpha=0.0,
        step_s=1.0,
        speed_sigma_mps=0.0,
        direction_sigma_rad=0.0,
        edge_margin_m=margin,
    )
    _, d_bar = _initial_angles(15)
    p = np.array([m.positions_m(float(i)) for i in range(120)])
    x, step = p[1:-1], np.diff(p, axis=0)[1:]  # steps n >= 1 start at x_n
    band = np.hypot(x[..., 0], x[..., 1]) > 100.0 - margin
    assert band.any() and (~band).any()
    inward = -x[band] / np.linalg.norm(x[band], axis=-1, keepdims=True)
    np.testing.assert_allclose(step[band], s_bar * inward, atol=1e-9)
    own = np.broadcast_to(np.c_[np.cos(d_bar), np.sin(d_bar)], step.shape)[~band]
    full = np.isclose(np.linalg.norm(step[~band], axis=-1), s_bar, rtol=1e-12)  # not reflected
    np.testing.assert_allclose(step[~band][full], s_bar * own[full], atol=1e-9)
    # Linear interpolation between step positions.
    np.testing.assert_allclose(m.positions_m(50.5), (p[50] + p[51]) / 2, atol=1e-12)


# -- helpers, registry, errors ---------------------------------------------------------------
def test_doppler_against_hand_values():
    # 30 m/s at 2.4 GHz: 30 · 2.4e9 / 299,792,458 = 240.1661... Hz; v = 1 m/s at f_c = c: 1 Hz.
    assert doppler_hz(30.0, 2.4e9) == pytest.approx(240.16614854, rel=1e-9)
    assert doppler_hz(1.0, 299_792_458.0) == 1.0
    np.testing.assert_allclose(doppler_hz([0.0, 3.0], 1e9), [0.0, 3e9 / 299_792_458.0])


def test_registry_and_package_exports():
    assert MOBILITY_MODELS.names()[:3] == ["static", "random_waypoint", "gauss_markov"]
    assert MOBILITY_MODELS.load("gauss_markov") is GaussMarkovMobility
    assert channels.MOBILITY_MODELS is MOBILITY_MODELS
    assert channels.make_mobility is make_mobility and channels.doppler_hz is doppler_hz
    m = make_mobility(
        "random_waypoint", seed=1, n_clients=3, **CELL, speed_min_mps=1.0, speed_max_mps=2.0
    )
    assert isinstance(m, RandomWaypoint) and m.n_clients == 3
    assert isinstance(make_mobility("static", seed=1, n_clients=3, **CELL), Static)


def _one_line_error(match, fn, *args, **kwargs):
    with pytest.raises(ValueError, match=match) as info:
        fn(*args, **kwargs)
    assert "\n" not in str(info.value)
    return str(info.value)


def test_make_mobility_errors_list_the_accepted_names_and_keywords():
    msg = _one_line_error(
        "unknown mobility model 'levy'", make_mobility, "levy", seed=1, n_clients=2, **CELL
    )
    assert "'random_waypoint'" in msg and "'gauss_markov'" in msg
    with pytest.raises(UnknownNameError):
        make_mobility("levy", seed=1, n_clients=2, **CELL)
    msg = _one_line_error(
        "unknown parameter.*'speed'",
        make_mobility,
        "random_waypoint",
        seed=1,
        n_clients=2,
        **CELL,
        speed=1.0,
    )
    assert "'speed_min_mps', 'speed_max_mps', 'pause_s'" in msg
    _one_line_error(
        "missing parameter 'speed_max_mps'",
        make_mobility,
        "random_waypoint",
        seed=1,
        n_clients=2,
        **CELL,
        speed_min_mps=1.0,
    )
    _one_line_error(
        "unknown parameter.*accepted: none",
        make_mobility,
        "static",
        seed=1,
        n_clients=2,
        **CELL,
        alpha=0.5,
    )


RWP = {"speed_min_mps": 1.0, "speed_max_mps": 2.0}
GM = {"mean_speed_mps": 1.0, "alpha": 0.5, "step_s": 1.0}


@pytest.mark.parametrize(
    ("kind", "overrides", "match"),
    [
        ("static", {"n_clients": 0}, "n_clients must be >= 1"),
        ("static", {"seed": -1}, "seed must be >= 0"),
        ("static", {"d_min_m": 100.0}, "d_min_m must be < d_max_m"),
        ("static", {"d_max_m": float("nan")}, "d_max_m must be > 0, got nan"),
        ("random_waypoint", {**RWP, "speed_min_mps": 0.0}, "speed_min_mps must be > 0"),
        ("random_waypoint", {**RWP, "speed_max_mps": 0.5}, "speed_max_mps must be >= speed_min"),
        ("random_waypoint", {**RWP, "pause_s": -1.0}, "pause_s must be >= 0"),
        ("random_waypoint", {**RWP, "pause_s": float("inf")}, "pause_s must be finite"),
        ("gauss_markov", {**GM, "alpha": 1.5}, r"alpha must be in \[0, 1\]"),
        ("gauss_markov", {**GM, "step_s": 0.0}, "step_s must be > 0"),
        ("gauss_markov", {**GM, "mean_speed_mps": -1.0}, "mean_speed_mps must be >= 0"),
        ("gauss_markov", {**GM, "speed_sigma_mps": -0.1}, "speed_sigma_mps must be >= 0"),
        ("gauss_markov", {**GM, "direction_sigma_rad": "x"}, "direction_sigma_rad must be"),
        ("gauss_markov", {**GM, "edge_margin_m": 200.0}, r"edge_margin_m must be in \[0, 100\]"),
    ],
)
def test_bad_parameters_give_one_line_errors(kind, overrides, match):
    kw = {"seed": 1, "n_clients": 2, **CELL, **overrides}
    _one_line_error(match, make_mobility, kind, **kw)


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf"), "soon", [1.0, 2.0]])
def test_bad_times_give_one_line_errors(bad):
    for m in _models(2):
        _one_line_error("time_s must be", m.positions_m, bad)
        _one_line_error("time_s must be", m.distances_m, bad)


def test_bad_doppler_inputs_give_one_line_errors():
    _one_line_error("speed_mps must be >= 0", doppler_hz, -1.0, 1e9)
    _one_line_error("carrier_hz must be > 0", doppler_hz, 1.0, 0.0)
