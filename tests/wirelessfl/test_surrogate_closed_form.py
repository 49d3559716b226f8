"""The network-only learner's loss against the closed form of its recursion.

``wirelessfl.learners.surrogate`` documents, for the excess loss e_t,

    e_{t+1} = e_t - c (n_t / K_t) (e_t - f_t),   f_t = e_0 gamma^t / (gamma^t + gamma_half),

with n_t of the K_t scheduled clients arrived (a round nobody completes leaves e unchanged) and
a NaN gamma^t counting as 0. With a_t = c n_t / K_t this linear recursion solves to

    e_T = e_0 prod_{t<T} (1 - a_t) + sum_{t<T} a_t f_t prod_{t<s<T} (1 - a_s),

and for a constant floor f to e_T = f + (e_0 - f) prod_{t<T} (1 - a_t), which tends to f.
Accuracy is chance + (1 - chance) (1 - e_t / e_0). The expected values below are written from
these formulas, not from the learner.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scenario_helpers import small_scenario

from wirelessfl.learners.surrogate import SurrogateLearner
from wirelessfl.plans import RoundPlan
from wirelessfl.sim import run_scenario

E0, RATE, HALF = 2.0, 0.1, 50.0  # learner.initial_loss, progress_rate, bound_half
K = 5


def _learner() -> SurrogateLearner:
    scenario = small_scenario(
        **{"learner.initial_loss": E0, "learner.progress_rate": RATE, "learner.bound_half": HALF}
    )
    learner = SurrogateLearner.from_scenario(scenario)
    learner.start(rank=8, n_clients=scenario.n_clients, seed=0)
    return learner


def _round(learner: SurrogateLearner, t: int, gamma: float, n_arrived: int) -> float:
    clients = np.arange(K)
    learner.local_round(RoundPlan(t, clients, 8, 1.0, gamma, K))
    return learner.aggregate(t, clients[:n_arrived])["loss"]


def test_constant_bound_with_a_straggler_round_and_an_empty_round():
    learner = _learner()
    floor = E0 * 50.0 / (50.0 + HALF)  # gamma = 50 = gamma_half: half the initial loss, 1.0
    arrived = [5, 5, 2, 0, 5]  # round 2: 3 stragglers; round 3: nobody arrives
    losses = [_round(learner, t, 50.0, n) for t, n in enumerate(arrived)]
    shrink = 1.0
    for t, n in enumerate(arrived):
        shrink *= 1.0 - RATE * n / K
        assert losses[t] == pytest.approx(floor + (E0 - floor) * shrink, rel=1e-12)
    assert losses[3] == losses[2]  # an empty round changes nothing
    assert losses[2] == pytest.approx(1.0 + 0.9 * 0.9 * 0.96, rel=1e-12)  # 1.7776

    acc = learner.evaluate(4)["accuracy"]
    assert acc == pytest.approx(0.1 + 0.9 * (1.0 - losses[-1] / E0), rel=1e-12)


def test_the_loss_settles_on_the_gamma_floor():
    learner = _learner()
    gamma = 150.0
    floor = E0 * gamma / (gamma + HALF)  # 1.5
    for t in range(400):
        loss = _round(learner, t, gamma, K)
    assert loss == pytest.approx(floor + (E0 - floor) * 0.9**400, rel=1e-12)
    assert loss == pytest.approx(1.5, rel=1e-15)
    # accuracy at the floor: chance + (1 - chance) gamma_half / (gamma + gamma_half)
    assert learner.evaluate(399)["accuracy"] == pytest.approx(0.1 + 0.9 * 0.25, rel=1e-12)

    nan_bound = _round(learner, 400, math.nan, K)  # no bound computed: floor 0
    assert nan_bound == pytest.approx(1.5 * 0.9, rel=1e-12)


def _closed_form(e0: float, a: np.ndarray, floors: np.ndarray) -> np.ndarray:
    """e_1 .. e_T of the recursion, from the sum formula (O(T^2), independent of it)."""
    out = []
    for end in range(1, len(a) + 1):
        keep = np.prod(1.0 - a[:end])
        pulled = sum(a[t] * floors[t] * np.prod(1.0 - a[t + 1 : end]) for t in range(end))
        out.append(e0 * keep + pulled)
    return np.asarray(out)


def test_a_run_with_stragglers_follows_the_closed_form(tmp_path):
    scenario = small_scenario(
        rounds=30,
        **{
            "learner.initial_loss": E0,
            "learner.progress_rate": RATE,
            "learner.bound_half": HALF,
            "faults.dropout_prob": 0.3,
        },
    )
    rounds = run_scenario(scenario, tmp_path / "run").rounds
    n, k = rounds["n_arrived"].to_numpy(), rounds["n_scheduled"].to_numpy()
    gamma = rounds["bound"].to_numpy()
    assert (n < k).sum() >= 5 and len(np.unique(n)) >= 3  # stragglers, in varying numbers
    assert np.ptp(gamma) > 0  # the online stage changes gamma^t
    a = RATE * n / k
    floors = E0 * gamma / (gamma + HALF)
    expected = _closed_form(E0, a, floors)
    np.testing.assert_allclose(rounds["loss"], expected, rtol=1e-9)
    # ignoring the stragglers (every scheduled client counted) would be another trajectory
    assert np.max(np.abs(_closed_form(E0, RATE * np.ones_like(a), floors) - expected)) > 1e-3
    evaluated = rounds.dropna(subset=["accuracy"])
    np.testing.assert_allclose(
        evaluated["accuracy"], 0.1 + 0.9 * (1.0 - evaluated["loss"] / E0), rtol=1e-9
    )
