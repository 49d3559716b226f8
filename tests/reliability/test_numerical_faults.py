"""Numerical faults stop a run with one line naming the round (and the client), before the
round's record exists, keeping the rounds before it; solver rescues are counted in rounds.csv.

Real training uses ``digits_scenario`` (tiny MLP); the network-only cases ``small_scenario``.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest
from scenario_helpers import digits_scenario, small_scenario

from wirelessfl.algorithms.soft.algorithm import SoftFamily
from wirelessfl.algorithms.soft.settings import SoftSettings
from wirelessfl.config.schema import option
from wirelessfl.controllers.fixed import Fixed
from wirelessfl.errors import ConfigError, SimulationError
from wirelessfl.registries import ALGORITHMS, CONTROLLERS
from wirelessfl.sim import run_scenario

#: No checkpoint (so no rows written) before the last round: rows of the rounds completed
#: before a fault are written only by the runner's error path.
NO_CHECKPOINT = {"output.checkpoint_every": 0, "output.checkpoint_interval_s": 1.0e9}


def _one_line(err: pytest.ExceptionInfo) -> str:
    message = str(err.value)
    assert "\n" not in message
    assert "the rounds before it are kept" in message
    return message


def _rounds(folder) -> list[int]:
    return pd.read_csv(folder / "rounds.csv")["round"].tolist()


# ---- a client's update ---------------------------------------------------------------------
@pytest.mark.usefixtures("one_torch_thread")
def test_sgd_blow_up_with_a_finite_loss_names_round_and_client(tmp_path):
    """Two SGD steps with a huge learning rate: the first makes the factors huge (its loss,
    and the second's, are finite), the second overflows them; the check runs before the
    sparsifier sees them (it refused non-finite weights with a traceback). The blow-up window
    on this model is about lr in [7e8, 2e9]: below it only cov_norm overflows, above it the
    second step's loss is already inf."""
    pytest.importorskip("torch")
    sc = digits_scenario(
        rounds=2, **{"learner.optimizer": "sgd", "learner.lr": 1.2e9, "learner.local_steps": 2}
    )
    with pytest.raises(SimulationError) as err:
        run_scenario(sc, tmp_path / "run")
    message = _one_line(err)
    assert message.startswith("round 0: client ")
    assert "non-finite local update" in message and "after a finite training loss" in message
    assert " of layer " in message and "learner.lr" in message


@pytest.mark.usefixtures("one_torch_thread")
def test_nan_in_one_trained_state_keeps_the_rounds_before(tmp_path, monkeypatch):
    """NaN injected into one client's trained lora_A at round 2 (the runtime's train)."""
    from wirelessfl.training.runtime import Runtime

    original = Runtime.train
    poisoned = {}

    def train(self, plans, starts, private, **kwargs):
        results = original(self, plans, starts, private, **kwargs)
        if plans[0].round_index == 2:
            victim = plans[1]
            name = self.state.layers[0].a_param
            results[1].local[name] = results[1].local[name].clone()
            results[1].local[name][0, 0] = math.nan
            layer = self.state.layers[0].name.removeprefix("base_model.model.")
            poisoned.update(client=victim.client, layer=layer)
        return results

    monkeypatch.setattr(Runtime, "train", train)
    with pytest.raises(SimulationError) as err:
        run_scenario(digits_scenario(rounds=5, **NO_CHECKPOINT), tmp_path / "run")
    message = _one_line(err)
    assert message.startswith(f"round 2: client {poisoned['client']} has a non-finite local")
    assert "nan in 1 of " in message and f"lora_A of layer {poisoned['layer']}" in message
    assert _rounds(tmp_path / "run") == [0, 1]  # written by the runner before it re-raised


# ---- a plug-in algorithm's message, aggregate and metric -------------------------------------
@dataclass
class FaultySettings(SoftSettings):
    """SOFT, plus a fault injected at one round."""

    fault: str = option("none", choices=("none", "message", "aggregate", "metric"))
    at_round: int = option(1, ge=0)


class Faulty(SoftFamily):
    """The SOFT family with a non-finite message, aggregate or metric at ``at_round``."""

    Settings = FaultySettings
    METRICS = {**SoftFamily.METRICS, "boom": "NaN (not measured), inf at the faulty round"}

    def _now(self, fault: str, t: int) -> bool:
        return self.settings.fault == fault and t == self.settings.at_round

    def client_message(self, plan, start, result, private):
        message = super().client_message(plan, start, result, private)
        if self._now("message", plan.round_index):
            name = next(iter(message.shared))
            message.shared[name] = message.shared[name] + math.inf
        return message

    def aggregate(self, global_state, messages, plans, round_plan):
        state = super().aggregate(global_state, messages, plans, round_plan)
        if self._now("aggregate", round_plan.round_index):
            name = next(iter(state))
            state[name] = state[name] + math.inf
        return state

    def metrics(self, global_state, messages, round_plan):
        inf = self._now("metric", round_plan.round_index)
        return {
            **super().metrics(global_state, messages, round_plan),
            "boom": (math.inf if inf else math.nan),
        }


@pytest.fixture
def faulty():
    ALGORITHMS.register("faulty_soft", Faulty)
    yield "faulty_soft"
    ALGORITHMS.unregister("faulty_soft")


@pytest.mark.usefixtures("one_torch_thread")
@pytest.mark.parametrize(
    ("fault", "needle"),
    [
        ("message", r"round 1: client \d+ has a non-finite message \(inf in "),
        ("aggregate", r"round 1: the global state holds non-finite values \(inf in "),
        ("metric", r"round 1: the round measured non-finite algo\.boom = inf after aggregating"),
    ],
)
def test_plugin_faults_stop_at_their_round(faulty, fault, needle, tmp_path):
    sc = digits_scenario(
        rounds=3,
        **{"algorithm.name": faulty, "strategy": {"fault": fault, "at_round": 1}, **NO_CHECKPOINT},
    )
    with pytest.raises(SimulationError, match=needle) as err:
        run_scenario(sc, tmp_path / "run")
    _one_line(err)
    rounds = pd.read_csv(tmp_path / "run" / "rounds.csv")
    assert rounds["round"].tolist() == [0]
    if fault == "metric":  # round 0's NaN was "not measured", not a fault
        assert rounds["algo.boom"].isna().all()


# ---- network-only: the controller's bound and the surrogate's loss model -------------------
def test_bound_constants_that_overflow_are_refused_when_built(tmp_path):
    for overrides in (
        {"constants.S": 1.0e300, "constants.G": 1.0e300},  # TSFA's rank search overflows
        {"controller.name": "fixed", "constants.W": 1.0e300},  # gamma^t is inf
    ):
        with pytest.raises(ConfigError, match=r"^constants: the convergence bound is not finite"):
            run_scenario(small_scenario(rounds=3, **overrides), tmp_path / str(len(overrides)))


def test_surrogate_loss_overflow_names_the_round(tmp_path):
    sc = small_scenario(rounds=3, **{"learner.initial_loss": 1.0e308, "learner.bound_half": 1e-300})
    with pytest.raises(SimulationError) as err:
        run_scenario(sc, tmp_path / "run")
    assert _one_line(err).startswith("round 0: the network-only learner's loss model is not")


class InfiniteBoundFrom(Fixed):
    """The fixed controller, whose bound is inf from the third decision on."""

    def decide(self, snr, compute_s):
        self.calls = getattr(self, "calls", 0) + 1
        d = super().decide(snr, compute_s)
        if self.calls < 3:
            return d
        return type(d)(d.sparsification, d.shares, d.planned_delay_s, math.inf)


def test_infinite_bound_in_a_decision_stops_the_surrogate_run(tmp_path):
    CONTROLLERS.register("inf_bound", InfiniteBoundFrom)
    try:
        sc = small_scenario(rounds=6, **{"controller.name": "inf_bound", **NO_CHECKPOINT})
        with pytest.raises(SimulationError) as err:
            run_scenario(sc, tmp_path / "run")
    finally:
        CONTROLLERS.unregister("inf_bound")
    message = _one_line(err)
    assert message.startswith("round 2: the controller's decision holds non-finite values")
    assert "bound gamma^t inf" in message and "constants.*" in message
    assert _rounds(tmp_path / "run") == [0, 1]


# ---- solver rescues ------------------------------------------------------------------------
@pytest.fixture
def failing_solvers(monkeypatch):
    """``failing_solvers({"CLARABEL"})``: those CVXPY solvers raise SolverError."""
    import cvxpy as cp

    original = cp.Problem.solve
    failing: set[str] = set()

    def solve(self, *args, **kwargs):
        if kwargs.get("solver") in failing:
            raise cp.error.SolverError(f"{kwargs['solver']} failed (injected)")
        return original(self, *args, **kwargs)

    monkeypatch.setattr(cp.Problem, "solve", solve)
    return failing.update


#: A queue that grows from round 1 on, so P3 is solved (not answered in closed form) there.
BACKLOG = {"rounds": 8, "controller.V": 1.0e-3, "controller.d_th_s": 0.2}


def _cvxpy_run(path):
    return run_scenario(small_scenario(**BACKLOG, **{"controller.method": "cvxpy"}), path).rounds


def test_solver_rescues_are_counted_per_round(failing_solvers, tmp_path, caplog):
    exact = run_scenario(small_scenario(**BACKLOG), tmp_path / "exact")
    solved = exact.rounds["queue"].to_numpy() > 0  # Q = 0: closed form, no solver runs
    assert solved.sum() >= 5 and (exact.rounds["solver_fallback"] == 0).all()

    clean = _cvxpy_run(tmp_path / "clean")
    assert (clean["solver_fallback"] == 0).all()

    failing_solvers({"CLARABEL"})  # SCS rescues every solve
    with caplog.at_level(logging.DEBUG, logger="optim"):
        rescued = _cvxpy_run(tmp_path / "scs")
    assert rescued["solver_fallback"].tolist() == solved.astype(int).tolist()
    np.testing.assert_allclose(rescued["sparsification"], exact.rounds["sparsification"], rtol=1e-4)
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "CLARABEL" in warnings[0].getMessage()  # once per run

    failing_solvers({"SCS"})  # both fail: the exact solver answers, two fallbacks
    both = _cvxpy_run(tmp_path / "both")
    assert both["solver_fallback"].tolist() == (2 * solved).tolist()
    np.testing.assert_array_equal(both["sparsification"], exact.rounds["sparsification"])
