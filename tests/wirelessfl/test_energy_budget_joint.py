"""The energy budget with the joint radio (docs/results.md, "The energy budget with power and
clock as decisions"): a feasible budget is followed by every device's time-average energy, a
budget below the floor is reported in one line, the reproduction's grid resolves."""

from __future__ import annotations

import itertools
import logging

import numpy as np
import pandas as pd
import pytest
from scenario_helpers import small_scenario

from wirelessfl.config import load_scenario
from wirelessfl.config.loader import SCENARIO_DIR
from wirelessfl.results.columns import STUDY_BUDGET_COLUMNS
from wirelessfl.sim import run_scenario
from wirelessfl.sim.runner import Run
from wirelessfl.study.budget_figures import budget_table, draw_budget, lost_drain_j
from wirelessfl.study.grid import format_value
from wirelessfl.study.reproduce import REPRODUCTIONS

B_HZ, FLOPS_PER_S, KAPPA, F_MAX, F_MIN, PER_CYCLE = 1.0e6, 1.0e11, 1.0e-28, 2.0e9, 0.5e9, 8.0
JOINT = {
    "controller.name": "osfa",
    "controller.radio": "joint",
    "controller.rank": 4,
    "controller.V": 1.0e-4,
    "channel.bandwidth_hz": B_HZ,
    "channel.noise_bandwidth": "share",
    "devices.include_compute": True,
    "devices.flops_per_s": FLOPS_PER_S,
    "devices.energy.model": "cmos",
    "devices.energy.kappa": KAPPA,
    "devices.energy.flops_per_cycle": PER_CYCLE,
    "devices.energy.cpu_freq_hz": F_MAX,
    "devices.energy.cpu_freq_min_hz": F_MIN,
    "learner.shape.base_params": 100_000,
}
LOGGER = "wirelessfl.sim.simulator"


def _time_average_energy_j(run) -> np.ndarray:
    """(N,) each device's compute + transmit energy summed over the run / rounds [J/round]."""
    c = run.clients
    return (
        (c.compute_energy_j + c.transmit_energy_j).groupby(c.client).sum() / len(run.rounds)
    ).to_numpy()


def test_each_device_follows_a_feasible_budget(tmp_path):
    """N = K = 2 (both devices every round), D_th below the least round time (Q keeps growing,
    so the step always has a bounded best D): after 30 rounds each device's time-average energy
    is within 5 % of a budget a third of what it spends without one (the closed loop of (E1)).
    omega = 100 (controller.energy_weight): at the SI exchange (omega = 1) the same loop ends
    23-25 % above the budget after 30 rounds, its queues still building the backlog they need."""
    sets = {**JOINT, "n_clients": 2, "n_scheduled": 2, "rounds": 30, "controller.d_th_s": 0.01}
    free = small_scenario(**{**sets, "rounds": 5})  # no budget: every round at the least time
    free_j = _time_average_energy_j(run_scenario(free, tmp_path / "free"))
    budget_j = 0.1
    assert (free_j > 3.0 * budget_j).all()  # the budget binds every device
    sets["controller.energy_budget_j"] = budget_j
    sets["controller.energy_weight"] = 100.0
    run = run_scenario(small_scenario(**sets), tmp_path / "budget")
    spent_j = _time_average_energy_j(run)
    np.testing.assert_allclose(spent_j, budget_j, rtol=0.05)
    # (E1) replayed from the tables: Z_k^T / T is the gap the budget allows, and it is small
    z_j = np.zeros(2)
    for _, rows in run.clients.groupby("round"):
        spent = (rows.compute_energy_j + rows.transmit_energy_j).groupby(rows.client).sum()
        z_j = np.maximum(z_j + spent.reindex(range(2), fill_value=0.0).to_numpy() - budget_j, 0)
    assert (z_j / 30 < 0.05 * budget_j).all()
    assert run.rounds.energy_queue_mean_j.iloc[-1] == pytest.approx(z_j.mean(), rel=1e-9)
    # the clock is a decision the loop uses: some rounds below f_max
    assert (run.clients.cpu_hz < F_MAX * (1 - 1e-6)).any()
    # the study's table says the same of this run
    row = budget_table([run]).iloc[0]
    assert row.radio == "joint" and row.budget_j == budget_j and row.devices == 2
    assert row.within_5pct == 2 and row.at_or_below == 2
    assert row.mean_rel_gap == pytest.approx(np.mean(np.abs(spent_j - budget_j)) / budget_j)
    assert row.queue_gap_j == pytest.approx(z_j.mean() / 30, rel=1e-9)
    assert row.delay_busy_share == pytest.approx(float((run.rounds.queue > 0).mean()))
    assert list(budget_table([run]).columns) == list(STUDY_BUDGET_COLUMNS)
    # against each device's clipped target clip(Ē, E_lo,k, E_hi,k) of the run's band
    band = run.meta["energy_band_j"]
    target_j = np.minimum(np.maximum(budget_j, band["low"]), band["high"])
    assert row.target_rel_gap == pytest.approx(np.mean(np.abs(spent_j - target_j) / target_j))
    assert row.below_band == int(np.sum(budget_j < np.asarray(band["low"])))
    # (E1) exactly: E_k = Ē + Z_k^T / T - the drain cut at Z = 0, replayed here
    z_j, cut_j = np.zeros(2), np.zeros(2)
    for _, rows in run.clients.groupby("round"):
        spent = (rows.compute_energy_j + rows.transmit_energy_j).groupby(rows.client).sum()
        e_j = spent.reindex(range(2), fill_value=0.0).to_numpy()
        cut_j += np.maximum(budget_j - z_j - e_j, 0.0)
        z_j = np.maximum(z_j + e_j - budget_j, 0.0)
    np.testing.assert_allclose(lost_drain_j(run), cut_j / 30, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(spent_j, budget_j + z_j / 30 - cut_j / 30, rtol=1e-9)
    assert row.lost_drain_j == pytest.approx(cut_j.mean() / 30, abs=1e-15)
    # the reproduction's drawing: the table as a file, the figure with the target panel
    (figure,) = draw_budget(tmp_path, [run])
    assert figure.stat().st_size > 0
    drawn = pd.read_csv(tmp_path / "energy_budget.csv")
    assert drawn.target_rel_gap.iloc[0] == pytest.approx(row.target_rel_gap, rel=1e-12)


def _warnings(tmp_path, caplog, name, budget_j):
    caplog.clear()
    caplog.set_level(logging.WARNING, logger=LOGGER)
    sets = {**JOINT, "controller.energy_budget_j": budget_j, "rounds": 1}
    run = Run(small_scenario(**sets), tmp_path / name)
    return run, [r.getMessage() for r in caplog.records if r.name == LOGGER]


def test_a_budget_below_the_floor_at_the_lowest_clock_is_one_line(tmp_path, caplog):
    """The joint radio decides clocks: the floor is the compute at f_min (not f_max), K/N of
    the rounds, kappa f^2 cycles with cycles = FLOPs / FLOPs per cycle. Its warning is the
    band's (wirelessfl.sim.energy_band), whose low end lies above the floor: one line."""
    run, _ = _warnings(tmp_path, caplog, "probe", 1.0e-12)
    sc = run.scenario
    flops = run.learner.expected_flops(run.sim.rank)
    floor_j = sc.n_scheduled / sc.n_clients * KAPPA * F_MIN**2 * flops / PER_CYCLE
    np.testing.assert_allclose(run.sim.energy_floor_j(), floor_j, rtol=1e-12)
    assert (run.sim.energy_band_j[0] > floor_j).all()
    _, lines = _warnings(tmp_path, caplog, "below", 0.9 * floor_j)
    assert len(lines) == 1 and "\n" not in lines[0]
    assert "for 20 of 20 devices" in lines[0] and "at O_min" in lines[0]
    _, lines = _warnings(tmp_path, caplog, "above", 1.01 * run.sim.energy_band_j[0].max())
    assert lines == []


def test_the_budget_reproduction_resolves():
    spec = REPRODUCTIONS["energy-budget-joint"]
    radios = set()
    for grid in spec.sweeps.values():
        budgets = grid["controller.energy_budget_j"]
        assert len(budgets) >= 4
        for values in itertools.product(*grid.values()):
            sets = [f"{k}={format_value(v)}" for k, v in zip(grid, values, strict=True)]
            sc = load_scenario(SCENARIO_DIR / spec.scenario, sets)
            radios.add(sc.controller.radio)
    assert radios == {"joint", "fixed"}
    assert spec.seeds >= 5  # the standard of docs/results.md for "agrees"


@pytest.mark.parametrize("radio", ["joint", "fixed"])
def test_the_budget_scenario_loads(radio):
    sets = [f"controller.radio={radio}"]
    if radio == "fixed":
        sets.append("channel.noise_bandwidth=band")
    assert load_scenario(SCENARIO_DIR / "energy/umi_budget_joint.yaml", sets).n_clients == 10


def test_a_small_delay_queue_against_large_energy_queues_falls_back_instead_of_stopping(
    tmp_path, monkeypatch
):
    """Q small against Z: the joint step would search round times up to D_min + W / Q (10^7 s
    and more), where the price search breaks down; the round takes the rule of Q = 0 (O = 1,
    round time D_th, or the least time when that is infeasible) and counts one solver fallback,
    and the run goes on. The small Q here is the rounding a round at D_th leaves (about
    1e-15 s), which the controller counts as empty unless its tolerance is 0, as set here;
    omega = 100 makes Z large."""
    import wirelessfl.controllers.joint_radio as joint_radio  # noqa: PLC0415

    monkeypatch.setattr(joint_radio, "EMPTY_QUEUE_RTOL", 0.0)
    sets = {
        **JOINT,
        "n_clients": 4,
        "n_scheduled": 2,
        "rounds": 40,
        "controller.d_th_s": 0.2,
        "controller.energy_budget_j": 0.05,
        "controller.energy_weight": 100.0,
    }
    run = run_scenario(small_scenario(**sets), tmp_path / "run")
    rounds = run.rounds
    assert len(rounds) == 40
    fell_back = rounds[rounds.solver_fallback > 0]
    assert len(fell_back) >= 1 and (fell_back.solver_fallback == 1).all()
    assert (fell_back.sparsification == 1.0).all()
    assert (rounds.queue[fell_back.index] > 0.0).all()  # not the Q = 0 rounds: a real fallback


def test_a_round_limit_below_a_devices_compute_is_one_line(tmp_path, caplog):
    """The joint radio's delay queue counts compute + upload: D_th below a device's compute at
    f_max (FLOPs / flops_per_s) is reported in one line naming the devices; above, nothing."""
    run, _ = _warnings(tmp_path, caplog, "probe", None)
    compute_s = run.learner.expected_flops(run.sim.rank) / FLOPS_PER_S  # every device alike
    caplog.clear()
    sets = {**JOINT, "rounds": 1, "controller.d_th_s": 0.5 * compute_s}
    Run(small_scenario(**sets), tmp_path / "short")
    lines = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert len(lines) == 1 and "\n" not in lines[0]
    assert "of 20 of 20 devices" in lines[0] and f"{compute_s:g} s" in lines[0]
    caplog.clear()
    Run(small_scenario(**{**sets, "controller.d_th_s": 2.0 * compute_s}), tmp_path / "long")
    assert [r for r in caplog.records if r.name == LOGGER] == []


def test_the_rounding_a_round_at_d_th_leaves_in_the_queue_is_no_backlog(tmp_path, monkeypatch):
    """With Q = 0 and Z > 0 a round takes D = D_th; its compute + upload sums to D_th only up
    to rounding, leaving Q at about 1e-16 s. That queue counts as empty: no solver fallback
    (the step at such a Q searches round times up to W / Q and fails), the same decisions as
    the fallback's rule of Q = 0 (the run with the tolerance at 0, replayed here)."""
    import wirelessfl.controllers.joint_radio as joint_radio  # noqa: PLC0415

    d_th_s = 0.8  # a budget at which rounding past it occurs (at 1.0 it depends on last bits)
    sets = {
        **JOINT,
        "n_clients": 6,
        "n_scheduled": 3,
        "rounds": 10,
        "controller.d_th_s": d_th_s,
        "controller.energy_budget_j": 0.01,
    }
    rounds = run_scenario(small_scenario(**sets), tmp_path / "run").rounds
    residue = (rounds.queue > 0.0) & (rounds.queue <= 1.0e-12 * d_th_s)
    assert residue.sum() >= 3  # the case occurs: rounding above D_th, not a backlog
    assert (rounds.queue <= 1.0e-12 * d_th_s).all()
    assert (rounds.solver_fallback == 0).all()
    assert np.allclose(rounds.completion_s.iloc[1:], d_th_s, rtol=0.0, atol=1.0e-9)

    monkeypatch.setattr(joint_radio, "EMPTY_QUEUE_RTOL", 0.0)
    exact = run_scenario(small_scenario(**sets), tmp_path / "exact").rounds
    assert (exact.solver_fallback[residue] == 1).all()  # each residue round fell back
    for column in ("sparsification", "delay_s", "queue", "energy_queue_mean_j"):
        assert np.array_equal(rounds[column], exact[column]), column
