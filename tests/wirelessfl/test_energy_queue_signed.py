"""``controller.energy_queue: signed`` in the simulator: the queue of a time-average equality
(eq. E1'' of optim/energy_queue.py, no max) makes (1/T) sum_t E_k^t = E_bar + Z_k^T / T exact
on a closed loop, the step prices max(Z_k, 0) (a credit prices 0, never below), the budget
study's replay follows the rule with no lost drain, a resumed run equals an uninterrupted one,
and the option without a budget is one line. Network-only runs (the surrogate learner,
N = 20, K = 5)."""

from __future__ import annotations

import numpy as np
import pytest
from scenario_helpers import assert_same_tables, interrupt_at, small_scenario, spent_per_round_j

from wirelessfl.errors import ConfigError
from wirelessfl.sim.runner import Run, resume_run, run_scenario
from wirelessfl.study.budget_figures import lost_drain_j, running_energy_j

#: J per device per round: each device's compute (about 542 J a round it trains, 5 of 20 devices
#: a round) costs about 135 J a round on average, so its queue goes both ways around 0
BUDGET_J = 140.0
SIGNED = {"controller.energy_budget_j": BUDGET_J, "controller.energy_queue": "signed"}


@pytest.mark.parametrize("rule", ["signed", "at_participation"])
def test_the_option_without_a_budget_is_one_line(rule):
    with pytest.raises(ConfigError) as err:
        small_scenario(**{"controller.energy_queue": rule})
    assert str(err.value) == (
        f"controller.energy_queue: {rule} moves the energy queues, which need "
        "controller.energy_budget_j; set a budget or use every_round"
    )


def test_a_closed_loop_spends_the_budget_exactly_up_to_z_over_t(tmp_path):
    run = Run(small_scenario(**SIGNED), tmp_path / "run")
    result = run.execute()
    controller = run.sim.controller
    spent_j = spent_per_round_j(result)
    t_rounds = len(spent_j)
    walk_j = np.cumsum(spent_j - BUDGET_J, axis=0)  # (E1'') by hand: Z^{t+1}
    np.testing.assert_allclose(result.rounds.energy_queue_mean_j, walk_j.mean(axis=1), rtol=1e-12)
    z_j = controller.energy_queues.value
    np.testing.assert_allclose(z_j, walk_j[-1], rtol=1e-12)
    assert (z_j < 0.0).any() and (walk_j > 0.0).any()  # credit banked, and debt priced
    # (1/T) sum_t E_k^t = E_bar + Z_k^T / T, nothing cut
    np.testing.assert_allclose(spent_j.mean(axis=0), BUDGET_J + z_j / t_rounds, rtol=1e-12)
    # the study's replay follows the rule: the same queues, no lost drain
    np.testing.assert_allclose(running_energy_j(result)[1], walk_j, rtol=1e-12)
    np.testing.assert_array_equal(lost_drain_j(result), np.zeros(20))
    # the step's price per J: omega max(Z_k, 0) + mu; a device in credit prices as one at 0
    omega = controller.energy_weight
    ids = np.arange(20)
    np.testing.assert_array_equal(
        controller.weighted_energy_queues(ids), omega * np.where(z_j > 0.0, z_j, 0.0)
    )
    power_w = np.full(20, 0.2)
    controller.price_energy(ids, power_w)
    in_credit = controller.energy_price_jw
    controller.energy_queues.value = np.where(z_j > 0.0, z_j, 0.0)
    controller.price_energy(ids, power_w)
    assert in_credit == controller.energy_price_jw > 0.0


def test_a_resumed_run_equals_the_uninterrupted_one(tmp_path):
    scenario = small_scenario(**SIGNED, rounds=20, **{"output.checkpoint_every": 1})
    full = run_scenario(scenario, tmp_path / "full")
    assert (full.rounds.energy_queue_mean_j.iloc[:13] < 0.0).any()  # resumed with credit
    interrupt_at(Run(scenario, tmp_path / "cut"), 13)
    resume_run(tmp_path / "cut")
    assert_same_tables(tmp_path / "full", tmp_path / "cut")


def test_an_event_driven_run_moves_every_queue_at_every_aggregation(tmp_path):
    """async, 4 clients at once: each aggregation is a round of (E1''), Z += E - E_bar."""
    sc = small_scenario(**SIGNED, rounds=30, server={"mode": "async", "concurrency": 4})
    run = Run(sc, tmp_path / "run")
    result = run.execute()
    spent_j = spent_per_round_j(result)
    z_j = run.sim.controller.energy_queues.value
    np.testing.assert_allclose(z_j, (spent_j - BUDGET_J).sum(axis=0), rtol=1e-12)
    assert (z_j < 0.0).any()
    np.testing.assert_allclose(spent_j.mean(axis=0), BUDGET_J + z_j / len(spent_j), rtol=1e-12)
