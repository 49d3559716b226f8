"""The evaluation of the global state before round 0 (``eval_initial``), kept in ``meta.json``:
the untrained state's metrics computed independently (the network-only learner's closed form,
the base model with B = 0, a Flower client's zero parameters), the auto rule, rounds.csv
unchanged by it, ``--resume`` keeping it without evaluating again, the accuracy curves starting
at (0, initial accuracy) and time-to-target counting it."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from scenario_helpers import digits_scenario, interrupt_at, small_scenario

from wirelessfl import plots
from wirelessfl.errors import ConfigError, SimulationError
from wirelessfl.results import accuracy_table, time_to_target
from wirelessfl.sim import Run, resume_run, run_scenario

VOLATILE = ["wall_s"]
#: small_scenario shortened: 12 rounds evaluated every 5 (rounds 4, 9 and the last, 11)
SHORT = {"rounds": 12, "output.events": False, "output.clients": False}


def _table(result) -> pd.DataFrame:
    return result.rounds.drop(columns=VOLATILE)


def _meta(out) -> dict:
    return json.loads((out / "meta.json").read_text())


# -- the key --------------------------------------------------------------------------------------
def test_auto_rule_and_validation():
    assert small_scenario(eval_every=5).evaluates_initial
    assert not small_scenario(eval_every=1).evaluates_initial
    assert small_scenario(eval_every=1, eval_initial=True).evaluates_initial
    assert not small_scenario(eval_every=5, eval_initial=False).evaluates_initial
    with pytest.raises(ConfigError) as err:
        small_scenario(eval_initial="yes")
    assert str(err.value) == "eval_initial: expected true or false (or null), got 'yes'"


def test_auto_rule_in_runs(tmp_path):
    every_round = run_scenario(small_scenario(eval_every=1, **SHORT), tmp_path / "one")
    assert "initial_evaluation" not in every_round.meta
    assert every_round.initial_evaluation is None and math.isnan(every_round.initial_accuracy)
    assert "eval_initial: null" in (tmp_path / "one" / "config.yaml").read_text()
    sparse = run_scenario(small_scenario(eval_every=5, **SHORT), tmp_path / "five")
    assert set(sparse.meta["initial_evaluation"]) == {"accuracy", "test_loss"}


# -- the value: the untrained state, computed independently ---------------------------------------
def test_network_only_initial_evaluation_is_the_closed_form_at_the_initial_loss(tmp_path):
    sc = small_scenario(**SHORT, **{"learner.initial_loss": 1.7, "learner.n_classes": 4})
    result = run_scenario(sc, tmp_path / "run")
    # accuracy = chance + (1 - chance)(1 - e/e0) at e = e0: chance; test_loss = e0
    assert result.meta["initial_evaluation"] == {"accuracy": 0.25, "test_loss": 1.7}
    assert result.initial_evaluation == {"accuracy": 0.25, "test_loss": 1.7}


def test_rounds_are_the_same_with_and_without_it(tmp_path):
    """No random stream and no clock moves for it: every later number of the run is the same."""
    a = run_scenario(small_scenario(eval_initial=True), tmp_path / "on")
    b = run_scenario(small_scenario(eval_initial=False), tmp_path / "off")
    assert a.initial_evaluation is not None and b.initial_evaluation is None
    pd.testing.assert_frame_equal(_table(a), _table(b))
    pd.testing.assert_frame_equal(a.events, b.events)
    pd.testing.assert_frame_equal(a.clients, b.clients)


def test_a_non_finite_initial_evaluation_stops_the_run_in_one_line(tmp_path):
    run = Run(small_scenario(**SHORT), tmp_path / "run")
    run.learner.evaluate = lambda round_index: {"accuracy": 0.1, "test_loss": math.inf}
    with pytest.raises(SimulationError) as err:
        run.execute()
    assert str(err.value).startswith(
        "before round 0: the evaluation of the global state measured non-finite test_loss = inf"
    )
    assert "stopped" in _meta(tmp_path / "run")


# -- resume ---------------------------------------------------------------------------------------
def _counting(run: Run) -> list[int]:
    calls: list[int] = []
    original = run.learner.evaluate

    def evaluate(round_index):
        calls.append(round_index)
        return original(round_index)

    run.learner.evaluate = evaluate
    return calls


def test_resume_keeps_it_and_does_not_evaluate_again(tmp_path):
    every = {"output.checkpoint_every": 3, "output.checkpoint_interval_s": 1e6}
    full = run_scenario(small_scenario(**every), tmp_path / "full")
    run = Run(small_scenario(**every), tmp_path / "cut")
    calls = _counting(run)
    interrupt_at(run, 20)
    assert calls[0] == -1
    recorded = _meta(tmp_path / "cut")["initial_evaluation"]
    assert recorded == full.meta["initial_evaluation"]

    resumed = Run.resume_from(tmp_path / "cut")
    calls = _counting(resumed)
    result = resumed.execute()
    assert -1 not in calls
    assert result.meta["initial_evaluation"] == recorded
    pd.testing.assert_frame_equal(_table(result), _table(full))


def test_a_rebuilt_meta_json_gets_it_back_from_the_checkpoint(tmp_path):
    every = {"output.checkpoint_every": 3, "output.checkpoint_interval_s": 1e6}
    run = Run(small_scenario(**every), tmp_path / "cut")
    interrupt_at(run, 10)
    recorded = _meta(tmp_path / "cut")["initial_evaluation"]
    (tmp_path / "cut" / "meta.json").unlink()
    result = resume_run(tmp_path / "cut")
    assert result.meta["rebuilt"] and result.meta["initial_evaluation"] == recorded


def test_a_run_killed_before_its_first_checkpoint_reuses_the_recorded_one(tmp_path):
    never = {"output.checkpoint_every": 0, "output.checkpoint_interval_s": 1e6}
    run = Run(small_scenario(**never), tmp_path / "cut")
    interrupt_at(run, 3)  # no checkpoint yet: the resume starts again from round 0
    recorded = _meta(tmp_path / "cut")["initial_evaluation"]
    resumed = Run.resume_from(tmp_path / "cut")
    calls = _counting(resumed)
    result = resumed.execute()
    assert -1 not in calls and result.meta["initial_evaluation"] == recorded


# -- curves and time-to-target -------------------------------------------------------------------
def test_accuracy_curve_starts_at_the_initial_state(tmp_path):
    run = run_scenario(small_scenario(**SHORT), tmp_path / "run")
    initial = run.initial_accuracy
    table = accuracy_table(run)
    assert list(table["round"]) == [-1, 4, 9, 11]
    assert list(table["rounds_done"]) == [0, 5, 10, 12]
    first = table.iloc[0]
    assert (first["t_end_s"], first["accuracy"], first["n"]) == (0.0, initial, 1)
    evaluated = run.rounds.dropna(subset=["accuracy"])
    np.testing.assert_array_equal(table["accuracy"].iloc[1:], evaluated["accuracy"])
    np.testing.assert_array_equal(table["t_end_s"].iloc[1:], evaluated["t_end_s"])

    ax = plots.accuracy_vs_round(run).axes[0]
    np.testing.assert_array_equal(ax.lines[0].get_xdata(), [0, 5, 10, 12])
    assert ax.lines[0].get_ydata()[0] == initial
    assert ax.get_xlabel() == "rounds completed"
    line = plots.accuracy_vs_time(run).axes[0].lines[0]
    assert (line.get_xdata()[0], line.get_ydata()[0]) == (0.0, initial)

    off = run_scenario(small_scenario(eval_initial=False, **SHORT), tmp_path / "off")
    assert list(accuracy_table(off)["rounds_done"]) == [5, 10, 12]


def test_seeds_with_and_without_an_initial_point_average_where_they_have_one(tmp_path):
    a = run_scenario(small_scenario(**SHORT), tmp_path / "a")
    b = run_scenario(small_scenario(seed=4, **SHORT), tmp_path / "b")
    del b.meta["initial_evaluation"]  # as a run of an older version reads
    table = accuracy_table([a, b])
    assert list(table["n"]) == [1, 2, 2, 2]
    assert table["accuracy"].iloc[0] == a.initial_accuracy


def test_time_to_target_counts_an_initial_state_at_the_target():
    rounds = pd.DataFrame(
        {"t_end_s": [1.0, 2.0], "bits_up": [10.0, 20.0], "accuracy": [math.nan, 0.7]}
    )
    reached = {"time_to_target_s": 0.0, "bits_to_target": 0.0}
    assert time_to_target(rounds, 0.5, initial_accuracy=0.5) == reached
    later = {"time_to_target_s": 2.0, "bits_to_target": 30.0}
    assert time_to_target(rounds, 0.6, initial_accuracy=0.5) == later
    assert time_to_target(rounds, 0.6) == later  # no initial evaluation: NaN
    assert time_to_target(None, 0.6, initial_accuracy=0.9) == reached


# -- learners that train ---------------------------------------------------------------------------
@pytest.mark.train
@pytest.mark.usefixtures("one_torch_thread")
def test_lora_initial_evaluation_is_the_base_model_with_b_zero(tmp_path):
    torch = pytest.importorskip("torch")
    from wirelessfl.learners import make_learner

    sc = digits_scenario(rounds=2, eval_every=2)
    result = run_scenario(sc, tmp_path / "run")
    initial = result.initial_evaluation
    # independently: a fresh learner's model (same seed: the run's initial head and base) with
    # its LoRA adapters switched off, over the whole test set in one batch
    learner = make_learner(sc)
    learner.start(rank=sc.controller.rank, n_clients=sc.n_clients, seed=sc.seed)
    runtime = learner.runtime
    b = [v for k, v in learner.global_state.items() if "lora_B" in k]
    assert b and all(float(v.abs().max()) == 0.0 for v in b)  # B = 0: the LoRA update is zero
    batch = runtime.test_data.batch(torch.arange(len(runtime.test_data)))
    model = runtime.model
    model.eval()
    with torch.no_grad(), model.disable_adapter():
        loss, logits = runtime.bundle.loss_and_logits(model, batch)
    correct = int((logits.argmax(-1) == batch["y"]).sum())
    assert initial["accuracy"] == correct / len(batch["y"])
    assert initial["test_loss"] == pytest.approx(float(loss), rel=1e-5)


@pytest.mark.train
@pytest.mark.usefixtures("one_torch_thread")
def test_floral_evaluates_the_initial_private_state_and_leaves_the_rounds_alone(tmp_path):
    """FLoRAL's personalised evaluation reads the clients' private routers, empty before round
    0: it evaluates their initial values; a regression task's accuracy is NaN (null)."""
    pytest.importorskip("torch")
    import yaml

    from wirelessfl.config import scenario_from_dict
    from wirelessfl.config.loader import SCENARIO_DIR

    data = yaml.safe_load((SCENARIO_DIR / "floral" / "synthetic_linear.yaml").read_text())
    data.update(rounds=4, eval_every=2)
    on = run_scenario(scenario_from_dict(data), tmp_path / "on")
    off = run_scenario(scenario_from_dict({**data, "eval_initial": False}), tmp_path / "off")
    pd.testing.assert_frame_equal(_table(on), _table(off))
    assert on.meta["initial_evaluation"]["accuracy"] is None
    assert math.isnan(on.initial_accuracy)
    assert on.initial_evaluation["test_loss"] > on.rounds["test_loss"].dropna().iloc[-1]
    assert list(accuracy_table(on)["round"]) == []  # no accuracy measured: no curve


# -- Flower clients ---------------------------------------------------------------------------
FEATURES = 3


def _client_rows(cid: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng([11, cid])
    x = rng.normal(size=(10 + 5 * cid, FEATURES))
    return x, (x.sum(axis=1) > 0.3).astype(float)


def make_client(cid: int):
    from flwr.client import NumPyClient

    class Client(NumPyClient):
        def get_parameters(self, config):
            return [np.zeros(FEATURES), np.zeros(1)]

        def fit(self, parameters, config):
            w, b = (p + 0.1 for p in parameters)
            return [w, b], 10, {"loss": 0.5}

        def evaluate(self, parameters, config):
            seen.append(config["server-round"])
            w, b = parameters
            x, y = _client_rows(cid)
            p = 1.0 / (1.0 + np.exp(-(x @ w + b[0])))
            loss = float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))
            return loss, len(y), {"accuracy": float(((x @ w + b[0] > 0) == y).mean())}

    return Client()


seen: list[int] = []


def test_flower_clients_evaluate_the_initial_parameters_at_server_round_0(tmp_path):
    pytest.importorskip("flwr")
    sc = small_scenario(
        **SHORT,
        **{
            "controller": {"name": "fixed"},
            "learner": {"kind": "flower", "client_fn": f"{__name__}:make_client"},
            "n_clients": 3,
            "n_scheduled": 2,
        },
    )
    seen.clear()
    result = run_scenario(sc, tmp_path / "run")
    assert seen[:3] == [0, 0, 0]  # every client, Flower's server round 0
    # zero parameters: p = 1/2 for every row, so the loss is ln 2 and nothing is predicted 1
    n = np.array([len(_client_rows(c)[1]) for c in range(3)], dtype=float)
    negatives = np.array([float((_client_rows(c)[1] == 0).mean()) for c in range(3)])
    assert result.initial_evaluation["test_loss"] == pytest.approx(math.log(2.0), rel=1e-12)
    assert result.initial_accuracy == pytest.approx(float(n @ negatives / n.sum()), rel=1e-12)


def test_initial_evaluation_needs_the_state_before_round_0(tmp_path):
    run = Run(small_scenario(**SHORT), tmp_path / "run")
    run.sim.run_round(0)
    with pytest.raises(RuntimeError):
        run.sim.evaluate_initial()
