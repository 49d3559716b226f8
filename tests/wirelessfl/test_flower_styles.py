"""Flower clients written as Flower's current quickstart examples write them, run unchanged in
our simulator (``learner.kind: flower``), on local data (scikit-learn's digits):

- ``quickstart-sklearn``'s logic as a Message API ``ClientApp`` (``@app.train()`` /
  ``@app.evaluate()``; the server supplies the initial parameters) and, as the example wrote it
  before, ``client_fn(context) -> FlowerClient(...).to_client()`` with no ``get_parameters``, a
  fit that reports only ``train_accuracy`` and an evaluate that reports ``test_accuracy``; the
  same ``client_fn`` wrapped in ``ClientApp(client_fn=...)``;
- ``quickstart-pytorch``'s logic as a Message API ``ClientApp`` (state-dict ``ArrayRecord``s,
  ``lr`` from the train config, epochs and batch size from the run config).

Checked: the global parameters against FedAvg by hand, every metric column against its
weighted mean by hand, the context (node config, run config, a state that lasts the run and a
resume), and the one-line refusals and the one warning line.
"""

from __future__ import annotations

import functools
import logging
import warnings

import numpy as np
import pytest
from scenario_helpers import interrupt_at

pytest.importorskip("flwr")
pytest.importorskip("sklearn")

from flwr.app import ArrayRecord, Context, Message, MetricRecord, RecordDict  # noqa: E402
from flwr.client import NumPyClient  # noqa: E402
from flwr.clientapp import ClientApp  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.metrics import log_loss  # noqa: E402

from wirelessfl.bridges import flower_metrics as fm  # noqa: E402
from wirelessfl.config import scenario_from_dict  # noqa: E402
from wirelessfl.errors import ConfigError  # noqa: E402
from wirelessfl.sim import Run, resume_run, run_scenario  # noqa: E402

N_CLIENTS, ROUNDS = 4, 3
FLOPS_PER_S = 1.0e9
FIT_FLOPS = 1.0e8  # the Message API sklearn client reports FIT_FLOPS x (its fits so far)
LABELS = np.arange(10)
N_FEATURES = 64


# ---- the task (quickstart-sklearn's task.py on local data) -----------------------------------
@functools.cache
def _digits() -> tuple[np.ndarray, np.ndarray]:
    x, y = load_digits(return_X_y=True)
    return x / 16.0, y


def load_data(partition_id: int, num_partitions: int):
    """An IID partition of the digits, 80 % train / 20 % test."""
    x, y = _digits()
    part = np.array_split(np.random.default_rng(0).permutation(len(y)), num_partitions)
    rows = part[partition_id]
    cut = int(0.8 * len(rows))
    return x[rows[:cut]], y[rows[:cut]], x[rows[cut:]], y[rows[cut:]]


def create_model(c: float, partition_id: int) -> LogisticRegression:
    """One saga epoch per fit, warm-started; seeded by the partition (never numpy's global
    generator: runs repeat, and a resume too)."""
    model = LogisticRegression(
        C=c, max_iter=1, warm_start=True, solver="saga", random_state=partition_id
    )
    model.classes_ = LABELS
    model.coef_ = np.zeros((len(LABELS), N_FEATURES))
    model.intercept_ = np.zeros(len(LABELS))
    return model


def get_model_params(model: LogisticRegression) -> list[np.ndarray]:
    return [model.coef_, model.intercept_]


def set_model_params(model: LogisticRegression, params: list[np.ndarray]) -> None:
    model.coef_, model.intercept_ = params[0], params[1]


def train_model(model: LogisticRegression, x: np.ndarray, y: np.ndarray) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence: one epoch per round
        model.fit(x, y)


#: What the quickstart's server sends as its initial arrays.
INITIAL = get_model_params(create_model(1.0, 0))


# ---- quickstart-sklearn as a Message API ClientApp --------------------------------------------
app = ClientApp()


@app.train()
def train(msg: Message, context: Context):
    partition_id = context.node_config["partition-id"]
    model = create_model(context.run_config["C"], partition_id)
    set_model_params(model, msg.content["arrays"].to_numpy_ndarrays())
    x, y, _, _ = load_data(partition_id, context.node_config["num-partitions"])
    train_model(model, x, y)
    fits = 1 + (int(context.state["progress"]["fits"]) if "progress" in context.state else 0)
    context.state["progress"] = MetricRecord({"fits": fits})
    metrics = {
        "num-examples": len(x),
        "train_logloss": log_loss(y, model.predict_proba(x), labels=LABELS),
        "train_accuracy": model.score(x, y),
        "flops": FIT_FLOPS * fits,
    }
    content = RecordDict(
        {"arrays": ArrayRecord(get_model_params(model)), "metrics": MetricRecord(metrics)}
    )
    return Message(content=content, reply_to=msg)


@app.evaluate()
def evaluate(msg: Message, context: Context):
    partition_id = context.node_config["partition-id"]
    model = create_model(context.run_config["C"], partition_id)
    set_model_params(model, msg.content["arrays"].to_numpy_ndarrays())
    _, _, x, y = load_data(partition_id, context.node_config["num-partitions"])
    metrics = {
        "num-examples": len(x),
        "test_logloss": log_loss(y, model.predict_proba(x), labels=LABELS),
        "accuracy": model.score(x, y),
    }
    return Message(content=RecordDict({"metrics": MetricRecord(metrics)}), reply_to=msg)


# ---- the same, as the example wrote it before: client_fn(context) -> Client --------------------
class FlowerClient(NumPyClient):
    """No get_parameters (the server supplies them); fit reports only train_accuracy."""

    def __init__(self, model, x_train, y_train, x_test, y_test):
        self.model = model
        self.x_train, self.y_train, self.x_test, self.y_test = x_train, y_train, x_test, y_test

    def fit(self, parameters, config):
        set_model_params(self.model, parameters)
        train_model(self.model, self.x_train, self.y_train)
        accuracy = self.model.score(self.x_train, self.y_train)
        return get_model_params(self.model), len(self.x_train), {"train_accuracy": accuracy}

    def evaluate(self, parameters, config):
        set_model_params(self.model, parameters)
        loss = log_loss(self.y_test, self.model.predict_proba(self.x_test), labels=LABELS)
        accuracy = self.model.score(self.x_test, self.y_test)
        return float(loss), len(self.x_test), {"test_accuracy": accuracy}


def client_fn(context: Context):
    partition_id = context.node_config["partition-id"]
    data = load_data(partition_id, context.node_config["num-partitions"])
    model = create_model(context.run_config["C"], partition_id)
    return FlowerClient(model, *data).to_client()


legacy_app = ClientApp(client_fn=client_fn)


def _scenario(client: str, **learner):
    return scenario_from_dict(
        {
            "seed": 3,
            "n_clients": N_CLIENTS,
            "n_scheduled": 3,
            "rounds": ROUNDS,
            "eval_every": 1,
            "channel": {"bandwidth_hz": 1.0e6, "mean_snr_db": 10.0},
            "devices": {"kind": "fixed", "flops_per_s": FLOPS_PER_S},
            "controller": {"name": "fixed"},
            "learner": {
                "kind": "flower",
                "client_fn": f"{__name__}:{client}",
                "initial_parameters": f"{__name__}:INITIAL",
                "run_config": {"C": 1.0},
                **learner,
            },
            "output": {"clients": True, "checkpoint_every": 1},
        }
    )


def _weights(run) -> list[np.ndarray]:
    with np.load(run.path / "checkpoints" / str(ROUNDS) / "learner.npz") as saved:
        return [saved["arr_0"], saved["arr_1"]]


@pytest.fixture(scope="module")
def message_run(tmp_path_factory):
    return run_scenario(_scenario("app"), tmp_path_factory.mktemp("message") / "run")


def test_a_message_api_clientapp_is_fedavg_by_hand(message_run):
    rounds, clients = message_run.rounds, message_run.clients
    sizes = {c: len(load_data(c, N_CLIENTS)[1]) for c in range(N_CLIENTS)}
    params, fits_so_far = [a.copy() for a in INITIAL], dict.fromkeys(range(N_CLIENTS), 0)
    for t in range(ROUNDS):
        mine = clients[clients["round"] == t]
        arrived = sorted(mine[mine.status == "arrived"].client)
        assert len(arrived) == 3  # no deadline, no outage: every scheduled client arrives
        trained, loss, accuracy = [], [], []
        for c in arrived:
            model = create_model(1.0, c)
            set_model_params(model, [a.copy() for a in params])
            x, y, _, _ = load_data(c, N_CLIENTS)
            train_model(model, x, y)
            trained.append(get_model_params(model))
            loss.append(log_loss(y, model.predict_proba(x), labels=LABELS))
            accuracy.append(model.score(x, y))
            fits_so_far[c] += 1
            row = mine[mine.client == c].iloc[0]  # the node's state counts its fits
            assert row.compute_s == pytest.approx(FIT_FLOPS * fits_so_far[c] / FLOPS_PER_S)
        n = np.array([sizes[c] for c in arrived], dtype=float)
        params = [sum(k * p[i] for k, p in zip(n, trained, strict=True)) / n.sum() for i in (0, 1)]
        assert rounds.loss.iloc[t] == pytest.approx(np.dot(n, loss) / n.sum(), rel=1e-10)
        assert rounds["algo.train_accuracy"].iloc[t] == pytest.approx(
            np.dot(n, accuracy) / n.sum(), rel=1e-10
        )
        tests = []
        for c in range(N_CLIENTS):
            model = create_model(1.0, c)
            set_model_params(model, params)
            _, _, x, y = load_data(c, N_CLIENTS)
            tests.append(
                (len(y), log_loss(y, model.predict_proba(x), labels=LABELS), model.score(x, y))
            )
        m = np.array([k for k, _, _ in tests], dtype=float)
        assert rounds.test_loss.iloc[t] == pytest.approx(
            np.dot(m, [e[1] for e in tests]) / m.sum(), rel=1e-10
        )
        assert rounds.accuracy.iloc[t] == pytest.approx(
            np.dot(m, [e[2] for e in tests]) / m.sum(), rel=1e-10
        )
    for mine, expected in zip(_weights(message_run), params, strict=True):
        np.testing.assert_allclose(mine, expected, rtol=1e-10, atol=1e-14)
    assert rounds.accuracy.iloc[-1] > 0.8  # it learns


@pytest.mark.parametrize("client", ["client_fn", "legacy_app"])
def test_client_fn_of_context_and_its_clientapp_train_the_same_model(
    message_run, tmp_path, caplog, client
):
    with caplog.at_level(logging.WARNING, logger="wirelessfl.bridges.flower_learner"):
        run = run_scenario(_scenario(client), tmp_path / "run")
    for mine, theirs in zip(_weights(run), _weights(message_run), strict=True):
        np.testing.assert_allclose(mine, theirs, rtol=1e-10, atol=1e-14)
    rounds = run.rounds
    for column in ("accuracy", "test_loss", "algo.train_accuracy"):  # test_accuracy recognised
        np.testing.assert_allclose(rounds[column], message_run.rounds[column], rtol=1e-10)
    assert rounds.loss.isna().all()  # fit reports no loss: not required, NaN, said once
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1 and "hold no training loss" in lines[0] and "\n" not in lines[0]


def test_a_client_fn_and_its_clientapp_give_the_same_tables(tmp_path):
    one = run_scenario(_scenario("client_fn"), tmp_path / "one")
    two = run_scenario(_scenario("legacy_app"), tmp_path / "two")
    columns = [c for c in one.rounds.columns if c != "wall_s"]
    assert one.rounds[columns].equals(two.rounds[columns])


def test_a_killed_run_resumes_to_the_same_tables_with_the_nodes_state(message_run, tmp_path):
    interrupt_at(Run(_scenario("app"), tmp_path / "run"), 2)
    resumed = resume_run(tmp_path / "run")
    columns = [c for c in message_run.rounds.columns if c != "wall_s"]
    assert resumed.rounds[columns].equals(message_run.rounds[columns])
    assert resumed.clients.equals(message_run.clients)  # compute_s follows each node's state


def test_initial_parameters_from_a_npz_file(message_run, tmp_path):
    np.savez(tmp_path / "initial.npz", *INITIAL)
    run = run_scenario(
        _scenario("app", initial_parameters=str(tmp_path / "initial.npz")), tmp_path / "run"
    )
    columns = [c for c in message_run.rounds.columns if c != "wall_s"]
    assert run.rounds[columns].equals(message_run.rounds[columns])


# ---- one line for every mistake, one warning line for no accuracy --------------------------------
def test_no_get_parameters_and_no_setting_is_one_line_on_the_command_line(tmp_path, capsys):
    from wirelessfl.cli import main

    scenario = tmp_path / "flower.yaml"
    scenario.write_text(
        "n_clients: 2\nn_scheduled: 2\nrounds: 1\n"
        "controller: {name: fixed, bandwidth: equal_delay}\n"
        f"learner: {{kind: flower, client_fn: '{__name__}:client_fn', run_config: {{C: 1.0}}}}\n"
    )
    assert main(["run", str(scenario), "--out", str(tmp_path / "r"), "--quiet"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "wirelessfl: error: learner.initial_parameters: the clients (client_fn) give no initial "
        "parameters (no get_parameters: in Flower the server supplies them); set it to "
        "'module:attribute' (a list of numpy arrays or an ArrayRecord) or a .npz file"
    ]


no_evaluate = ClientApp()
no_evaluate.train()(train)


def _count_only(msg: Message, context: Context):
    content = RecordDict({"metrics": MetricRecord({"num-examples": 10, "f1": 0.5})})
    return Message(content=content, reply_to=msg)


no_accuracy = ClientApp()
no_accuracy.train()(train)
no_accuracy.evaluate()(_count_only)


def _no_examples(msg: Message, context: Context):
    content = RecordDict(
        {"arrays": msg.content["arrays"], "metrics": MetricRecord({"train_loss": 0.1})}
    )
    return Message(content=content, reply_to=msg)


no_examples = ClientApp()
no_examples.train()(_no_examples)
no_examples.evaluate()(evaluate)


def _listed_accuracy(msg: Message, context: Context):
    metrics = MetricRecord({"num-examples": 10, "accuracy": [0.5, 0.6]})
    return Message(content=RecordDict({"metrics": metrics}), reply_to=msg)


listed_accuracy = ClientApp()
listed_accuracy.train()(train)
listed_accuracy.evaluate()(_listed_accuracy)

NOT_ARRAYS = np.zeros(3)


@pytest.mark.parametrize(
    ("client", "learner", "message"),
    [
        ("client_fn", {"initial_parameters": None}, "learner.initial_parameters: the clients"),
        ("app", {"initial_parameters": None}, r"clients \(ClientApp \(Message API\)\) give no"),
        ("app", {"initial_parameters": "no_such_mod_x:A"}, "cannot import module 'no_such_mod"),
        ("app", {"initial_parameters": f"{__name__}:NOPE"}, "does not exist"),
        ("app", {"initial_parameters": f"{__name__}:NOT_ARRAYS"}, "is a ndarray; expected a"),
        ("app", {"initial_parameters": "missing.npz"}, "learner.initial_parameters: no file"),
        ("no_evaluate", {}, r"client 0's ClientApp has no @app.evaluate\(\) function"),
        ("no_examples", {}, "client .'s train reply has no metric 'num-examples'"),
        ("listed_accuracy", {}, r"client 0's metric 'accuracy' is \[0.5, 0.6\], not a number"),
    ],
)
@pytest.mark.parametrize("bandwidth", ["equal_delay", "minmax"])
def test_mistakes_get_one_line(tmp_path, client, learner, message, bandwidth):
    scenario = _scenario(client, **learner)
    scenario.controller.bandwidth = bandwidth
    with pytest.raises(ConfigError, match=message) as caught:
        run_scenario(scenario, tmp_path / "run")
    assert "\n" not in str(caught.value)


def test_a_flower_config_value_must_be_a_scalar():
    with pytest.raises(ConfigError, match="learner.run_config: Flower config values") as caught:
        _scenario("app", run_config={"C": [1.0]})
    assert "\n" not in str(caught.value)


def test_clients_that_report_no_accuracy_are_told_once(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="wirelessfl.bridges.flower_learner"):
        run = run_scenario(_scenario("no_accuracy"), tmp_path / "run")
    assert run.rounds.accuracy.isna().all() and run.rounds.test_loss.isna().all()
    assert run.rounds.loss.notna().all()  # train_logloss is a training loss
    lines = sorted(r.getMessage() for r in caplog.records)
    assert len(lines) == 2, lines  # ROUNDS + 1 evaluations, one line each for accuracy and loss
    assert "hold no accuracy" in lines[0] and "the accuracy column is NaN" in lines[0]
    assert "hold no loss" in lines[1] and "['f1', 'num-examples']" in lines[1]


# ---- metric names -------------------------------------------------------------------------------
def test_the_first_recognised_name_counts():
    assert fm.first_number({"train_accuracy": 0.5, "accuracy": 0.9}, fm.TRAIN_ACCURACY, "c") == 0.5
    assert fm.first_number({"eval_acc": 0.7, "num-examples": 3}, fm.EVAL_ACCURACY, "c") == 0.7
    assert fm.first_number({"train_logloss": 1.5}, fm.TRAIN_LOSS, "c") == 1.5
    assert fm.first_number({"eval_loss": 2.5}, fm.EVAL_LOSS, "c") == 2.5
    assert fm.first_number({"f1": 0.5}, fm.EVAL_ACCURACY, "c") is None
    with pytest.raises(ConfigError, match="client 3's metric 'acc' is True, not a number"):
        fm.first_number({"acc": True}, fm.EVAL_ACCURACY, "client 3")


def test_the_weighted_mean_skips_clients_that_report_nothing():
    assert fm.weighted_mean([1.0, None, 4.0], [1.0, 5.0, 3.0]) == pytest.approx(13.0 / 4.0)
    assert fm.weighted_mean([None, None], [1.0, 1.0]) is None


# ---- quickstart-pytorch as a Message API ClientApp ----------------------------------------------
torch = pytest.importorskip("torch")


class Net(torch.nn.Module):
    """A small MLP for 8 x 8 digits (the quickstart's CNN is for CIFAR-10)."""

    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(N_FEATURES, 32)
        self.fc2 = torch.nn.Linear(32, len(LABELS))

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def initial_net() -> ArrayRecord:
    torch.manual_seed(0)
    return ArrayRecord(Net().state_dict())


def _loader(x, y, batch_size, generator=None):
    data = torch.utils.data.TensorDataset(torch.tensor(x, dtype=torch.float32), torch.tensor(y))
    return torch.utils.data.DataLoader(
        data, batch_size=batch_size, shuffle=generator is not None, generator=generator
    )


torch_app = ClientApp()


@torch_app.train()
def torch_train(msg: Message, context: Context):
    model = Net()
    model.load_state_dict(msg.content["arrays"].to_torch_state_dict())
    partition_id = context.node_config["partition-id"]
    x, y, _, _ = load_data(partition_id, context.node_config["num-partitions"])
    # shuffled from a generator seeded by the partition and the round, not torch's global one
    seed = 1000 * partition_id + int(msg.content["config"]["server-round"])
    loader = _loader(x, y, context.run_config["batch-size"], torch.Generator().manual_seed(seed))
    optimizer = torch.optim.SGD(model.parameters(), lr=msg.content["config"]["lr"], momentum=0.9)
    running = 0.0
    for _ in range(context.run_config["local-epochs"]):
        for images, labels in loader:
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(images), labels)
            loss.backward()
            optimizer.step()
            running += loss.item()
    metrics = {
        "train_loss": running / (context.run_config["local-epochs"] * len(loader)),
        "num-examples": len(x),
    }
    content = RecordDict(
        {"arrays": ArrayRecord(model.state_dict()), "metrics": MetricRecord(metrics)}
    )
    return Message(content=content, reply_to=msg)


@torch_app.evaluate()
def torch_evaluate(msg: Message, context: Context):
    model = Net()
    model.load_state_dict(msg.content["arrays"].to_torch_state_dict())
    partition_id = context.node_config["partition-id"]
    _, _, x, y = load_data(partition_id, context.node_config["num-partitions"])
    loss, correct = 0.0, 0
    loader = _loader(x, y, context.run_config["batch-size"])
    with torch.no_grad():
        for images, labels in loader:
            outputs = model(images)
            loss += torch.nn.functional.cross_entropy(outputs, labels).item()
            correct += (outputs.argmax(1) == labels).sum().item()
    metrics = {
        "eval_loss": loss / len(loader),
        "eval_acc": correct / len(y),
        "num-examples": len(y),
    }
    return Message(content=RecordDict({"metrics": MetricRecord(metrics)}), reply_to=msg)


def _torch_scenario():
    return _scenario(
        "torch_app",
        initial_parameters=f"{__name__}:initial_net",
        run_config={"local-epochs": 1, "batch-size": 32},
        train_config={"lr": 0.1},
    )


@pytest.fixture
def one_thread():
    """Torch on one thread: a tiny model, on a shared CPU."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.usefixtures("one_thread")
def test_quickstart_pytorch_learns_repeatably_with_its_state_dict_names(tmp_path):
    one = run_scenario(_torch_scenario(), tmp_path / "one")
    two = run_scenario(_torch_scenario(), tmp_path / "two")
    columns = [c for c in one.rounds.columns if c != "wall_s"]
    assert one.rounds[columns].equals(two.rounds[columns])  # seeded clients repeat exactly
    accuracy, test_loss = one.rounds.accuracy, one.rounds.test_loss  # eval_acc, eval_loss
    assert accuracy.iloc[-1] > 0.8 and test_loss.iloc[-1] < test_loss.iloc[0]
    assert one.rounds.loss.notna().all()  # train_loss
    with np.load(one.path / "checkpoints" / str(ROUNDS) / "learner.npz") as saved:
        assert list(saved["names"]) == list(Net().state_dict())
