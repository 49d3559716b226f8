"""Flower clients in our simulator (``learner.kind: flower``): a numpy logistic-regression
``NumPyClient`` defined here runs under Rayleigh fading with a deadline; the round times are
checked against the upload sizes and the channel's rates drawn independently from
``channels.Cell``, and the global parameters against FedAvg by hand."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import yaml
from scenario_helpers import interrupt_at

pytest.importorskip("flwr")

from flwr.client import NumPyClient  # noqa: E402

from channels import Cell, make_fading  # noqa: E402
from wirelessfl.bridges.flower_learner import FlowerClientLearner  # noqa: E402
from wirelessfl.config import scenario_from_dict  # noqa: E402
from wirelessfl.errors import ConfigError  # noqa: E402
from wirelessfl.sim import Run, resume_run, run_scenario  # noqa: E402

FEATURES = 6
STEPS, LR = 5, 0.5
N_CLIENTS, ROUNDS, V = 5, 4, 32
CLIENT_FLOPS = 2.0e8
FLOPS_PER_S = [1.0e9, 1.0e9, 1.0e8, 1.0e9, 1.0e9]  # client 2 computes for 2 s
DEADLINE_S = 1.0  # cuts client 2 whenever it is scheduled
BANDWIDTH_HZ = 1.0e5


def _rows(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    x = rng.normal(size=(n, FEATURES))
    w = np.linspace(-1.0, 1.0, FEATURES)
    y = (x @ w + 0.3 * rng.normal(size=n) > 0).astype(float)
    return x, y


def _loss(w: np.ndarray, b: np.ndarray, x: np.ndarray, y: np.ndarray) -> float:
    p = 1.0 / (1.0 + np.exp(-(x @ w + b[0])))
    return float(-np.mean(y * np.log(p + 1e-12) + (1 - y) * np.log(1 - p + 1e-12)))


class LogisticClient(NumPyClient):
    """Full-batch gradient descent on a client's own synthetic rows (20 + 10 id of them)."""

    def __init__(self, cid: int) -> None:
        rng = np.random.default_rng([7, cid])
        self.x, self.y = _rows(rng, 20 + 10 * cid)
        self.x_test, self.y_test = _rows(rng, 30)

    def get_parameters(self, config):
        return [np.zeros(FEATURES), np.zeros(1)]

    def fit(self, parameters, config):
        w, b = (p.copy() for p in parameters)
        for _ in range(STEPS):
            err = 1.0 / (1.0 + np.exp(-(self.x @ w + b[0]))) - self.y
            w -= LR * self.x.T @ err / len(self.y)
            b -= LR * np.array([err.mean()])
        return [w, b], len(self.y), {"loss": _loss(w, b, self.x, self.y)}

    def evaluate(self, parameters, config):
        w, b = parameters
        accuracy = float((((self.x_test @ w + b[0]) > 0) == self.y_test).mean())
        return _loss(w, b, self.x_test, self.y_test), len(self.y_test), {"accuracy": accuracy}


def make_client(cid: int) -> LogisticClient:
    return LogisticClient(cid)


def _scenario(**learner):
    return scenario_from_dict(
        {
            "seed": 5,
            "n_clients": N_CLIENTS,
            "n_scheduled": 4,
            "rounds": ROUNDS,
            "eval_every": 1,
            "channel": {"bandwidth_hz": BANDWIDTH_HZ, "mean_snr_db": 10.0},
            "devices": {"kind": "listed", "per_client_flops_per_s": FLOPS_PER_S},
            "controller": {"name": "fixed"},
            "payload": {"bits_per_value": V},
            "faults": {"deadline_s": DEADLINE_S},
            "learner": {
                "kind": "flower",
                "client_fn": f"{__name__}:make_client",
                "client_flops": CLIENT_FLOPS,
                **learner,
            },
            "output": {"clients": True, "checkpoint_every": 1},
        }
    )


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    return run_scenario(_scenario(), tmp_path_factory.mktemp("flower") / "run")


def test_round_times_follow_the_upload_sizes_and_the_channel_rates(result):
    snr = Cell.from_mean_snr(
        mean_snr_db=10.0, n_clients=N_CLIENTS, seed=5, fading=make_fading("rayleigh")
    ).snr_block(0, ROUNDS)[0]
    bits = V * (FEATURES + 1)  # the parameter list, dense
    rounds, clients = result.rounds, result.clients
    assert (clients.bits == bits).all() and (clients.bits_down == bits).all()
    for t in range(ROUNDS):
        row = rounds.iloc[t]
        mine = clients[clients["round"] == t].sort_values("client")
        ids = mine.client.to_numpy()
        np.testing.assert_allclose(mine.snr_db, 10 * np.log10(snr[t, ids]), rtol=1e-12)
        # eq. (31) shares give every client the same upload time: v n sum_j 1 / (B log2(1 + SNR_j))
        upload_s = bits * np.sum(1.0 / (BANDWIDTH_HZ * np.log2(1.0 + snr[t, ids])))
        compute_s = CLIENT_FLOPS / np.array(FLOPS_PER_S)[ids]
        np.testing.assert_allclose(mine.compute_s, compute_s, rtol=1e-12)
        late = compute_s > DEADLINE_S  # cut by the deadline before its upload started
        np.testing.assert_allclose(mine.upload_s, upload_s, rtol=1e-9)
        assert list(mine.status) == ["straggler" if x else "arrived" for x in late]
        finish = compute_s[~late] + upload_s
        expected = DEADLINE_S if late.any() else finish.max()
        assert row.completion_s == pytest.approx(expected, rel=1e-9)
        assert row.delay_s == pytest.approx(upload_s, rel=1e-9)
        assert row.bits_up == bits * int((~late).sum())
        assert row.t_start_s == pytest.approx(rounds.completion_s.iloc[:t].sum(), rel=1e-9)
    assert rounds.n_stragglers.sum() > 0  # the deadline cut someone: FedAvg of the arrived only


def test_global_parameters_are_fedavg_by_hand_of_the_arrived(result):
    clients = result.clients
    w, b = np.zeros(FEATURES), np.zeros(1)
    for t in range(ROUNDS):
        arrived = clients[(clients["round"] == t) & (clients.status == "arrived")].client
        fits = [LogisticClient(int(c)).fit([w, b], {}) for c in sorted(arrived)]
        n = np.array([f[1] for f in fits], dtype=float)
        w = sum(k * f[0][0] for k, f in zip(n, fits, strict=True)) / n.sum()
        b = sum(k * f[0][1] for k, f in zip(n, fits, strict=True)) / n.sum()
        loss = np.dot(n, [f[2]["loss"] for f in fits]) / n.sum()
        assert result.rounds.loss.iloc[t] == pytest.approx(loss, rel=1e-12)
        evaluations = [LogisticClient(c).evaluate([w, b], {}) for c in range(N_CLIENTS)]
        m = np.array([e[1] for e in evaluations], dtype=float)
        test_loss = np.dot(m, [e[0] for e in evaluations]) / m.sum()
        accuracy = np.dot(m, [e[2]["accuracy"] for e in evaluations]) / m.sum()
        assert result.rounds.test_loss.iloc[t] == pytest.approx(test_loss, rel=1e-12)
        assert result.rounds.accuracy.iloc[t] == pytest.approx(accuracy, rel=1e-12)
    with np.load(result.path / "checkpoints" / str(ROUNDS) / "learner.npz") as saved:
        np.testing.assert_allclose(saved["arr_0"], w, rtol=1e-12)
        np.testing.assert_allclose(saved["arr_1"], b, rtol=1e-12)
    assert result.rounds.accuracy.iloc[-1] > 0.7  # it learns


def test_a_factory_passed_in_python_gives_the_same_run(result, tmp_path):
    scenario = _scenario(client_fn=None)
    again = run_scenario(
        scenario, tmp_path / "run", learner=FlowerClientLearner(scenario, make_client)
    )
    columns = [c for c in result.rounds.columns if c != "wall_s"]
    assert again.rounds[columns].equals(result.rounds[columns])


def test_a_killed_run_resumes_to_the_same_tables(result, tmp_path):
    interrupt_at(Run(_scenario(), tmp_path / "run"), 2)
    resumed = resume_run(tmp_path / "run")
    columns = [c for c in result.rounds.columns if c != "wall_s"]
    assert resumed.rounds[columns].equals(result.rounds[columns])


def _not_a_client(cid: int) -> int:
    return cid


@pytest.mark.parametrize(
    ("learner", "controller", "message"),
    [
        ({"client_fn": None}, "fixed", "learner.client_fn: learner.kind 'flower' needs"),
        ({"client_fn": "no_such_module_x:f"}, "fixed", "cannot import module 'no_such_module_x'"),
        ({"client_fn": "math"}, "fixed", "expected 'module:attribute', got 'math'"),
        ({"client_fn": "math:nope"}, "fixed", "'math:nope' does not exist"),
        ({"client_fn": "math:pi"}, "fixed", "'math:pi' is a float; expected a flwr ClientApp"),
        ({"client_fn": f"{__name__}:_not_a_client"}, "fixed", "returned int; expected a flwr"),
        ({}, "tsfa", "controller.name: learner.kind 'flower' sends"),
    ],
)
def test_bad_settings_get_one_line(tmp_path, learner, controller, message):
    scenario = _scenario(**learner)
    scenario.controller.name = controller
    with pytest.raises(ConfigError, match=message) as caught:
        run_scenario(scenario, tmp_path / "run")
    assert "\n" not in str(caught.value)


def test_the_command_line_names_an_unimportable_factory_in_one_line(tmp_path, capsys):
    from wirelessfl.cli import main

    scenario = tmp_path / "flower.yaml"
    scenario.write_text(
        "n_clients: 2\nn_scheduled: 2\nrounds: 1\ncontroller: {name: fixed}\n"
        "learner: {kind: flower, client_fn: 'no_such_module_x:client_fn'}\n"
    )
    assert main(["run", str(scenario), "--out", str(tmp_path / "r"), "--quiet"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "wirelessfl: error: learner.client_fn: cannot import module 'no_such_module_x' "
        "(No module named 'no_such_module_x')"
    ]


def test_the_example_of_docs_flower_md_runs_as_it_says(tmp_path, monkeypatch):
    text = (Path(__file__).resolve().parents[2] / "docs" / "flower.md").read_text()
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    scenario = re.search(r"```yaml\n(.*?)```", text, re.S).group(1)
    (tmp_path / "flower_logreg.py").write_text(code)
    monkeypatch.syspath_prepend(str(tmp_path))
    runs = []
    for style in ("app", "client_fn"):  # the Message API ClientApp, then client_fn(context)
        data = yaml.safe_load(scenario)
        data["learner"]["client_fn"] = f"flower_logreg:{style}"
        runs.append(run_scenario(scenario_from_dict(data), tmp_path / style))
    for result in runs:
        accuracy = result.rounds.accuracy.dropna()
        assert result.rounds.n_arrived.sum() == 81 and result.rounds.n_scheduled.sum() == 100
        assert round(accuracy.iloc[0], 3) == 0.985 and round(accuracy.iloc[-1], 3) == 0.998
    app, client_fn = (r.rounds.drop(columns="wall_s") for r in runs)
    assert app.drop(columns=["loss", "accuracy", "test_loss"]).equals(
        client_fn.drop(columns=["loss", "accuracy", "test_loss"])
    )
    for column in ("loss", "accuracy", "test_loss"):  # each style averaged as Flower does
        np.testing.assert_allclose(app[column], client_fn[column], rtol=1e-12)
