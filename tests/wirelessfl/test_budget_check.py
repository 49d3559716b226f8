"""The end-of-run line of ``controller.energy_budget_j`` (wirelessfl/sim/budget_check.py): the
devices whose energy over the run, divided by its rounds, is above 1.05 times their budget, by
hand and on closed-loop network-only runs (the surrogate learner, N = 20, K = 5), read back
from the clients table."""

from __future__ import annotations

import logging

import numpy as np
from scenario_helpers import small_scenario

from wirelessfl.sim.budget_check import budget_missed_line
from wirelessfl.sim.runner import Run

LOGGER = "wirelessfl.sim.runner"


def test_the_line_names_the_devices_above_1_05_times_their_budget():
    spent_j = np.array([10.0, 21.0, 30.0, 10.4])  # over 10 rounds: 1.0, 2.1, 3.0, 1.04 J/round
    budget_j = np.array([1.0, 2.0, 2.0, 1.0])  # device 1 at exactly 1.05 x: not named
    line = budget_missed_line(spent_j, budget_j, 10)
    assert line == (
        "controller.energy_budget_j: after 10 rounds 1 of 4 devices spent more than 1.05 times "
        "their budget (devices 2; device 2: 3 J per round against 2 J); run longer (wirelessfl "
        "run --resume DIR --set rounds=N), or raise the budget or controller.d_th_s"
    )
    assert budget_missed_line(spent_j, np.full(4, 3.0), 10) is None
    assert budget_missed_line(spent_j, budget_j, 0) is None
    many = budget_missed_line(np.full(7, 50.0), np.arange(1.0, 8.0) / 10.0, 10)
    assert (
        "7 of 7 devices" in many
        and "(devices 0, 1, 2, 3, 4, ...; device 0: 5 J per round against 0.1 J)" in many
    )


def _run_lines(tmp_path, caplog, name, budget_j):
    caplog.clear()
    caplog.set_level(logging.WARNING, logger=LOGGER)
    sc = small_scenario(**{"controller.energy_budget_j": budget_j}, rounds=20)
    result = Run(sc, tmp_path / name).execute()
    return result, [r.getMessage() for r in caplog.records if r.name == LOGGER]


def test_a_run_reports_exactly_the_devices_the_clients_table_shows_over_budget(tmp_path, caplog):
    result, lines = _run_lines(tmp_path, caplog, "tight", 60.0)  # compute alone: ~135 J/round
    c = result.clients
    spent_j = (c.compute_energy_j + c.transmit_energy_j).groupby(c.client).sum()
    mean_j = spent_j.reindex(range(20), fill_value=0.0).to_numpy() / len(result.rounds)
    over = np.flatnonzero(mean_j > 1.05 * 60.0)
    assert 0 < over.size < 20  # some devices over, some not scheduled enough to be
    assert len(lines) == 1 and "\n" not in lines[0]
    assert f"after 20 rounds {over.size} of 20 devices" in lines[0]
    named = ", ".join(str(k) for k in over[:5]) + (", ..." if over.size > 5 else "")
    assert f"(devices {named}; device {int(over[np.argmax(mean_j[over])])}:" in lines[0]
    _, lines = _run_lines(tmp_path, caplog, "loose", 1.0e4)
    assert lines == []
