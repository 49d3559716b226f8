"""Client availability models against closed-form Markov-chain statistics and brute force."""

import math

import numpy as np
import pytest

from channels import (
    AVAILABILITY_MODELS,
    AlwaysAvailable,
    AvailabilityModel,
    DeviceProfile,
    MarkovAvailability,
    TraceAvailability,
    make_availability,
    round_generator,
)


def _states(model, n_rounds, start=0):
    return np.array([model.available(t, float(t)) for t in range(start, start + n_rounds)])


def _on_runs(states, first, last):
    """Lengths of the on-runs that start (off -> on) in rounds first..last of states (T, N)."""
    t_len, n = states.shape
    padded = np.zeros((n, t_len + 2), dtype=np.int8)
    padded[:, 1:-1] = states.T
    d = np.diff(padded, axis=1)  # d[k, j] = x[j] - x[j-1] with x = states at round j (j-1 pad)
    rows_s, starts = np.nonzero(d == 1)  # run begins at round `starts`
    rows_e, ends = np.nonzero(d == -1)  # run is [start, end)
    assert np.array_equal(rows_s, rows_e)
    keep = (starts >= first) & (starts <= last)
    return (ends - starts)[keep]


def _one_line(exc_info):
    msg = str(exc_info.value)
    assert "\n" not in msg and msg
    return msg


# -- AlwaysAvailable ---------------------------------------------------------------------------
def test_always_available():
    m = AlwaysAvailable(7)
    assert isinstance(m, AvailabilityModel)
    a = m.available(3, 12.5)
    assert a.dtype == np.bool_ and a.shape == (7,) and a.all()
    a[0] = False  # a fresh array every call
    assert m.available(3, 12.5).all()
    assert make_availability("always", n_clients=3).available(0, 0.0).tolist() == [True] * 3


# -- MarkovAvailability: statistics --------------------------------------------------------------
def test_markov_stationary_fraction_and_run_lengths():
    a, b = 0.1, 0.3  # p_off_to_on, p_on_to_off
    n, t_len = 2000, 400
    s = _states(MarkovAvailability(11, n, a, b), t_len)
    pi_on = a / (a + b)  # 0.25
    # The state of one client is a stationary two-state chain with lag-k correlation λ^k,
    # λ = 1 - a - b = 0.6, so Var(mean over T rounds) ≈ π(1-π)/T · (1+λ)/(1-λ); clients are
    # independent. σ = sqrt(0.1875 · 4 / (2000 · 400)) ≈ 9.7e-4; 5σ ≈ 0.0048.
    lam = 1.0 - a - b
    sigma = math.sqrt(pi_on * (1 - pi_on) / (n * t_len) * (1 + lam) / (1 - lam))
    assert abs(s.mean() - pi_on) < 5 * sigma
    # Round 0 starts stationary: Binomial(N, π_on)/N, σ = sqrt(0.1875/2000) ≈ 0.0097.
    assert abs(s[0].mean() - pi_on) < 5 * math.sqrt(pi_on * (1 - pi_on) / n)
    # On-runs are Geometric(b) on {1, 2, ...}: mean 1/b, variance (1-b)/b². Only runs that
    # start by round T-100 are used, so censoring at T has probability (1-b)^100 ≈ 3e-16.
    runs = _on_runs(s, 1, t_len - 100)
    assert runs.size > 30000
    assert abs(runs.mean() - 1 / b) < 5 * math.sqrt((1 - b) / b**2 / runs.size)
    # P(L = 1) = b: a geometric, not a fixed-length run.
    assert abs(np.mean(runs == 1) - b) < 5 * math.sqrt(b * (1 - b) / runs.size)
    # Lag-1 autocovariance of the indicator is π(1-π)λ.
    x = s.astype(float) - pi_on
    assert abs(np.mean(x[1:] * x[:-1]) - pi_on * (1 - pi_on) * lam) < 0.005


def test_markov_per_class_probabilities_apply_to_the_right_clients():
    profile = DeviceProfile(kind="classes", classes={"low_end_phone": 0.5, "desktop_gpu": 0.5})
    n = 3000
    classes = profile.draw_classes(5, n)
    a = {"low_end_phone": 0.05, "desktop_gpu": 0.5}
    b = {"low_end_phone": 0.2, "desktop_gpu": 0.1}
    s = _states(MarkovAvailability(3, n, a, b, client_class=classes), 300)
    cls = np.array(classes)
    for name in a:
        sel = s[:, cls == name]
        pi_on = a[name] / (a[name] + b[name])  # 0.2 and 0.8333
        lam = 1 - a[name] - b[name]
        sigma = math.sqrt(pi_on * (1 - pi_on) / sel.size * (1 + lam) / (1 - lam))
        assert abs(sel.mean() - pi_on) < 5 * sigma, name
        runs = _on_runs(sel, 1, 200)  # P(run > 100) <= 0.9^100 ≈ 3e-5 per run
        bb = b[name]
        assert abs(runs.mean() - 1 / bb) < 5 * math.sqrt((1 - bb) / bb**2 / runs.size), name


def test_markov_scalar_and_dict_mix_and_pi_on():
    m = MarkovAvailability(0, 4, {"x": 0.2, "y": 1.0, "unused": 0.5}, 0.3, ["x", "y", "y", "x"])
    np.testing.assert_allclose(m.pi_on, [0.2 / 0.5, 1 / 1.3, 1 / 1.3, 0.2 / 0.5])
    # p_on_to_off = 0: π_on = 1, every client on in every round.
    always = MarkovAvailability(0, 50, 0.3, 0.0)
    assert _states(always, 20).all()
    # p_off_to_on = 0: π_on = 0, never on.
    assert not _states(MarkovAvailability(0, 50, 0.0, 0.4), 20).any()


def test_markov_follows_the_documented_random_rule():
    """Round t uses round_generator(seed, 'availability', t).random(N) as documented."""
    seed, n, a, b = 9, 30, 0.3, 0.4
    m = MarkovAvailability(seed, n, a, b)
    state = None
    for t in range(40):
        u = round_generator(seed, stream="availability", round_index=t).random(n)
        # round 0: on w.p. π_on; then an on client turns off iff u < b, off turns on iff u < a
        state = u < a / (a + b) if t == 0 else np.where(state, ~(u < b), u < a)
        np.testing.assert_array_equal(m.available(t, 0.0), state)


# -- MarkovAvailability: order independence ------------------------------------------------------
def test_markov_resume_and_going_back():
    args = (21, 40, {"p": 0.2, "q": 0.6}, {"p": 0.3, "q": 0.05}, ["p", "q"] * 20)
    stepped = _states(MarkovAvailability(*args), 51)
    fresh = MarkovAvailability(*args)
    np.testing.assert_array_equal(fresh.available(50, 0.0), stepped[50])  # resume at 50
    np.testing.assert_array_equal(fresh.available(20, 0.0), stepped[20])  # go back
    np.testing.assert_array_equal(fresh.available(21, 0.0), stepped[21])
    np.testing.assert_array_equal(fresh.available(0, 0.0), stepped[0])
    np.testing.assert_array_equal(fresh.available(50, 0.0), stepped[50])
    # time_s does not matter for the Markov model.
    np.testing.assert_array_equal(fresh.available(50, 1e9), stepped[50])


def test_markov_order_independence_across_checkpoints():
    args = (4, 25, 0.1, 0.2)
    stepped = _states(MarkovAvailability(*args), 800)
    m = MarkovAvailability(*args)
    for t in [700, 300, 255, 256, 257, 799, 0, 512, 511, 600]:
        np.testing.assert_array_equal(m.available(t, 0.0), stepped[t], err_msg=str(t))


def test_markov_adding_clients_keeps_existing_clients():
    small = _states(MarkovAvailability(8, 100, 0.2, 0.3), 60)
    big = _states(MarkovAvailability(8, 150, 0.2, 0.3), 60)
    np.testing.assert_array_equal(big[:, :100], small)
    other_seed = _states(MarkovAvailability(9, 100, 0.2, 0.3), 60)
    assert not np.array_equal(other_seed, small)


def test_markov_returns_a_copy():
    m = MarkovAvailability(1, 10, 0.5, 0.5)
    first = m.available(3, 0.0)
    first[:] = ~first
    assert not np.array_equal(m.available(3, 0.0), first)


# -- MarkovAvailability: validation --------------------------------------------------------------
@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"p_off_to_on": 1.5, "p_on_to_off": 0.1}, r"p_off_to_on must be in \[0, 1\], got 1.5"),
        ({"p_off_to_on": 0.1, "p_on_to_off": -0.1}, r"p_on_to_off must be in \[0, 1\]"),
        ({"p_off_to_on": float("nan"), "p_on_to_off": 0.1}, r"p_off_to_on must be in \[0, 1\]"),
        ({"p_off_to_on": "0.1", "p_on_to_off": 0.1}, r"p_off_to_on must be a probability"),
        ({"p_off_to_on": True, "p_on_to_off": 0.1}, r"p_off_to_on must be a probability"),
        ({"p_off_to_on": 0.0, "p_on_to_off": 0.0}, r"must not both be 0.*a \+ b > 0"),
        ({"p_off_to_on": {"x": 0.1}, "p_on_to_off": 0.1}, r"client_class .* must be given"),
        (
            {"p_off_to_on": {"x": 0.1}, "p_on_to_off": 0.1, "client_class": ["x", "y"]},
            r"p_off_to_on must give a probability for every class.*missing 'y'",
        ),
        (
            {"p_off_to_on": {"x": 2.0, "y": 0.1}, "p_on_to_off": 0.1, "client_class": ["x", "y"]},
            r"p_off_to_on\['x'\] must be in \[0, 1\]",
        ),
        (
            {
                "p_off_to_on": {"x": 0.0, "y": 0.1},
                "p_on_to_off": {"x": 0.0, "y": 0.1},
                "client_class": ["x", "y"],
            },
            r"must not both be 0 \(class 'x'\)",
        ),
        ({"p_off_to_on": 0.1, "p_on_to_off": 0.1, "client_class": ["x"]}, r"n_clients=2 class"),
        ({"p_off_to_on": 0.1, "p_on_to_off": 0.1, "client_class": "xy"}, r"client_class must be"),
    ],
)
def test_markov_validation_one_line(kwargs, match):
    with pytest.raises(ValueError, match=match) as exc:
        MarkovAvailability(0, 2, **kwargs)
    _one_line(exc)


def test_round_and_time_validation():
    m = MarkovAvailability(0, 3, 0.5, 0.5)
    for bad_round in (-1, 1.5, "3"):
        with pytest.raises(ValueError, match="round_index") as exc:
            m.available(bad_round, 0.0)
        _one_line(exc)
    with pytest.raises(ValueError, match="time_s") as exc:
        m.available(0, float("nan"))
    _one_line(exc)


# -- TraceAvailability ---------------------------------------------------------------------------
def test_trace_intervals_are_half_open():
    m = TraceAvailability([[[0.0, 10.0], [20.0, 30.0]], [], [[5.0, math.inf]]])
    assert m.n_clients == 3
    expected = {
        0.0: [True, False, False],
        4.999: [True, False, False],
        5.0: [True, False, True],
        9.999: [True, False, True],
        10.0: [False, False, True],  # end excluded
        19.999: [False, False, True],
        20.0: [True, False, True],  # start included
        30.0: [False, False, True],
        1e12: [False, False, True],
        -1.0: [False, False, False],
    }
    for tau, want in expected.items():
        assert m.available(7, tau).tolist() == want, tau


def test_trace_overlapping_and_touching_intervals_merge():
    m = TraceAvailability([[[5.0, 8.0], [0.0, 5.0], [1.0, 2.0], [10.0, 12.0], [11.0, 11.5]]])
    np.testing.assert_array_equal(m.intervals[0], [[0.0, 8.0], [10.0, 12.0]])
    got = [bool(m.available(0, tau)[0]) for tau in (0.0, 4.99, 5.0, 7.99, 8.0, 10.0, 11.9, 12.0)]
    assert got == [True, True, True, True, False, True, True, False]


def test_trace_matches_brute_force():
    rng = np.random.default_rng(0)
    n = 60
    intervals = []
    for _ in range(n):
        m_k = int(rng.integers(0, 6))
        start = np.round(rng.uniform(0, 100, m_k))  # integer times: many shared boundaries
        end = start + np.round(rng.uniform(1, 30, m_k))
        intervals.append(np.column_stack([start, end]))
    model = TraceAvailability(intervals)
    for tau in np.concatenate([np.arange(-1.0, 135.0, 0.5), rng.uniform(0, 130, 50)]):
        want = [bool(((iv[:, 0] <= tau) & (tau < iv[:, 1])).any()) for iv in intervals]
        assert model.available(0, tau).tolist() == want, tau


@pytest.mark.parametrize(
    ("intervals", "kwargs", "match"),
    [
        ([], {}, r"one entry per client"),
        ("abc", {}, r"intervals must be a list"),
        ([[[1.0, 1.0]]], {}, r"intervals\[0\] row 0: end_s must be > start_s"),
        ([[], [[2.0, 1.0]]], {}, r"intervals\[1\] row 0: end_s must be > start_s"),
        ([[[math.nan, 1.0]]], {}, r"intervals\[0\] start_s must be finite"),
        ([[1.0, 2.0, 3.0]], {}, r"intervals\[0\] must have shape \(m, 2\)"),
        ([[[0.0, 1.0]]], {"n_clients": 1}, r"n_clients is only used with path"),
        (None, {}, r"give either intervals"),
        (None, {"path": "x.csv"}, r"n_clients must be given with path"),
    ],
)
def test_trace_model_validation_one_line(intervals, kwargs, match):
    with pytest.raises(ValueError, match=match) as exc:
        TraceAvailability(intervals, **kwargs)
    _one_line(exc)


def test_trace_model_from_file(tmp_path):
    p = tmp_path / "avail.csv"
    p.write_text("client,start_s,end_s\n1,0,10\n0,5,6\n")
    m = make_availability("trace", path=p, n_clients=3)
    assert m.available(0, 5.5).tolist() == [True, True, False]
    assert m.available(0, 6.0).tolist() == [False, True, False]


# -- registry ------------------------------------------------------------------------------------
def test_registry_and_factory_errors():
    assert set(AVAILABILITY_MODELS) >= {"always", "markov", "trace"}
    m = make_availability("markov", seed=1, n_clients=5, p_off_to_on=0.2, p_on_to_off=0.2)
    assert isinstance(m, MarkovAvailability)
    with pytest.raises(ValueError, match=r"unknown availability model 'onoff'.*'markov'") as exc:
        make_availability("onoff")
    _one_line(exc)
    with pytest.raises(ValueError, match=r"unknown parameter 'p_on'.*accepted: 'seed'") as exc:
        make_availability("markov", seed=1, n_clients=5, p_on=0.1)
    _one_line(exc)
    with pytest.raises(
        ValueError, match=r"missing parameter 'n_clients' for availability model 'markov'"
    ) as exc:
        make_availability("markov", seed=1)
    _one_line(exc)
