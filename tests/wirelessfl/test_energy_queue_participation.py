"""``controller.energy_queue: at_participation`` in the simulator: a device's energy queue moves
only in the rounds it spends (eq. E1' of optim/energy_queue.py), the time-average bound
sum_t E_k^t <= E_bar T + Z_k^T holds on a closed loop, the lost drain of the budget study keeps
(B3) exact, and a resumed run equals an uninterrupted one (the refusal without a budget is in
test_energy_queue_signed.py, for both rules). Network-only runs (the surrogate learner,
N = 20, K = 5)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scenario_helpers import assert_same_tables, interrupt_at, small_scenario, spent_per_round_j

from wirelessfl.sim.runner import Run, resume_run, run_scenario
from wirelessfl.study.budget_figures import lost_drain_j

#: J per device per round: each device's compute (about 542 J a round it trains, 5 of 20 devices
#: a round) costs about 135 J a round on average, so its queue both builds and empties
BUDGET_J = 140.0
AT_PARTICIPATION = {
    "controller.energy_budget_j": BUDGET_J,
    "controller.energy_queue": "at_participation",
}


def test_a_closed_loop_keeps_the_bound_and_b3_stays_exact(tmp_path):
    run = Run(small_scenario(**AT_PARTICIPATION), tmp_path / "run")
    result = run.execute()
    queues = run.sim.controller.energy_queues
    spent_j = spent_per_round_j(result)
    t_rounds = len(spent_j)
    # the queues moved in the rounds each device spent, by hand, with every gap's drain
    z_j, cut_j, last = np.zeros(20), np.zeros(20), np.full(20, -1)
    for t, row in enumerate(spent_j):
        for k in np.flatnonzero(row > 0.0):
            drain_j = BUDGET_J * (t - last[k])
            cut_j[k] += max(drain_j - z_j[k] - row[k], 0.0)
            z_j[k] = max(z_j[k] + row[k] - drain_j, 0.0)
            last[k] = t
        assert result.rounds.energy_queue_mean_j[t] == pytest.approx(z_j.mean(), rel=1e-12)
    np.testing.assert_allclose(queues.value, z_j, rtol=1e-12)
    np.testing.assert_array_equal(queues.idle_rounds, t_rounds - 1 - last)
    assert (queues.idle_rounds > 0).any() and (cut_j > 0).any() and (z_j > 0).any()
    # telescoping (E1'): the budget holds up to Z_k^T / T
    assert (spent_j.sum(axis=0) <= BUDGET_J * t_rounds + queues.value + 1e-9).all()
    # (B3): E_k = E_bar + Z_k^T / T - lost drain (the cut plus the drain after the last move)
    lost_j = (cut_j + BUDGET_J * (t_rounds - 1 - last)) / t_rounds
    np.testing.assert_allclose(lost_drain_j(result), lost_j, rtol=1e-12)
    np.testing.assert_allclose(
        spent_j.mean(axis=0), BUDGET_J + queues.value / t_rounds - lost_j, rtol=1e-12
    )


def test_a_resumed_run_equals_the_uninterrupted_one(tmp_path):
    scenario = small_scenario(**AT_PARTICIPATION, rounds=20, **{"output.checkpoint_every": 1})
    run_scenario(scenario, tmp_path / "full")
    interrupt_at(Run(scenario, tmp_path / "cut"), 13)
    state = json.loads((tmp_path / "cut" / "state.json").read_text())
    sim = json.loads((tmp_path / "cut" / "checkpoints" / state["folder"] / "sim.json").read_text())
    idle = sim["controller"]["energy_queues"]["idle_rounds"]
    assert max(idle) > 1  # a device between two moves at the checkpoint
    resume_run(tmp_path / "cut")
    assert_same_tables(tmp_path / "full", tmp_path / "cut")


def test_an_event_driven_run_moves_a_queue_at_the_aggregations_that_take_its_update(tmp_path):
    """async, 4 clients at once: each aggregation takes one update; (E1') over aggregations."""
    sc = small_scenario(**AT_PARTICIPATION, rounds=30, server={"mode": "async", "concurrency": 4})
    run = Run(sc, tmp_path / "run")
    result = run.execute()
    spent_j = spent_per_round_j(result)
    z_j, last = np.zeros(20), np.full(20, -1)
    for t, row in enumerate(spent_j):
        for k in np.flatnonzero(row > 0.0):
            z_j[k] = max(z_j[k] + row[k] - BUDGET_J * (t - last[k]), 0.0)
            last[k] = t
    np.testing.assert_allclose(run.sim.controller.energy_queues.value, z_j, rtol=1e-12)
    assert (spent_j.sum(axis=0) <= BUDGET_J * len(spent_j) + z_j + 1e-9).all()
