"""FLoRAL (Almansoori, Horváth, Takáč, arXiv 2410.03497) through the real simulator on its
synthetic linear task (``scenarios/floral/synthetic_linear.yaml``, seconds on a CPU), against
independent computations: C = 1 with a frozen base is FedAvg on LoRA factors (written out in
plain torch below), the learned routers recover the true clusters and beat full-model FedAvg,
the personalised test loss by hand, the uplink bits by counting the message, ``--resume``
restores the private routers, the oracle router, and the one-line configuration errors."""

from __future__ import annotations

import copy
import math
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import yaml
from scenario_helpers import digits_scenario, interrupt_at

torch = pytest.importorskip("torch")

from wirelessfl.config import scenario_from_dict  # noqa: E402
from wirelessfl.config.loader import SCENARIO_DIR  # noqa: E402
from wirelessfl.data.mixture_tasks import load_synthetic_linear  # noqa: E402
from wirelessfl.errors import ConfigError  # noqa: E402
from wirelessfl.models.rng import torch_generator  # noqa: E402
from wirelessfl.registries import DATASETS  # noqa: E402
from wirelessfl.sim import Run  # noqa: E402
from wirelessfl.training.batch_schedule import batch_schedule  # noqa: E402

pytestmark = [pytest.mark.train, pytest.mark.usefixtures("one_torch_thread")]

SCENARIO = SCENARIO_DIR / "floral" / "synthetic_linear.yaml"
K, D_X, D_Y, BATCH, LR = 10, 10, 3, 4, 0.1  # the scenario's clients, Linear(10, 3), SGD
V = 32  # payload.bits_per_value
BASE = D_X * D_Y + D_Y  # 33 values of Linear(10, 3)
ADAPTOR = (D_X + D_Y) * 1 + D_Y  # rank 1 at rho = 0.01, plus its bias adaptor: 16
W_IN, W_OUT, B_IN = "net.linear.adaptor_in", "net.linear.adaptor_out", "net.linear.adaptor_bias"
BASE_W, BASE_B = "net.linear.base.weight", "net.linear.base.bias"


def _scenario(rounds, strategy=None, *, algorithm="floral", seed=0, **overrides):
    """The shipped scenario with ``rounds`` rounds (evaluated at the last), ``strategy`` keys
    merged into its own for floral (the only ones for another algorithm; ``strategy=False``:
    no strategy section), dotted ``overrides``."""
    data = yaml.safe_load(SCENARIO.read_text())
    data.update(rounds=rounds, eval_every=rounds, seed=seed, algorithm={"name": algorithm})
    if strategy is False:
        data.pop("strategy")
    else:
        own = data["strategy"] if algorithm == "floral" else {}
        data["strategy"] = {**own, **(strategy or {})}
    for key, value in overrides.items():
        node, parts = data, key.split(".")
        for p in parts[:-1]:
            node = node.setdefault(p, {})
        node[parts[-1]] = value
    return scenario_from_dict(data)


def _capture_messages(run: Run) -> list[dict]:
    """Record every round's arrived messages (client -> Message) as the server receives them."""
    algorithm, seen = run.learner.algorithm, []
    original = algorithm.aggregate

    def aggregate(global_state, messages, plans, round_plan):
        seen.append(dict(messages))
        return original(global_state, messages, plans, round_plan)

    algorithm.aggregate = aggregate
    return seen


def _client_rows(groups: np.ndarray, k: int) -> np.ndarray:
    return np.flatnonzero(np.asarray(groups) == k)


# ---- 7a: C = 1, frozen base, no bias adaptor, no preconditioning = FedAvg on LoRA factors --------
def test_one_adaptor_on_a_frozen_base_is_fedavg_on_the_lora_factors(tmp_path):
    rounds, seed = 3, 0
    strategy = {"n_adaptors": 1, "bias_adaptors": False, "precondition": False}
    run = Run(_scenario(rounds, {**strategy, "train_base": False}), tmp_path / "run")
    initial = {n: v.clone() for n, v in run.learner.global_state.items()}
    result = run.execute()
    assert (result.rounds["n_arrived"] == K).all()

    # the same seeded build, by hand: nn.Linear(10, 3) under torch.manual_seed(seed), then the
    # adaptor's V^T ~ Uniform(+-sqrt(6 / d_in)) under the same seed, U = 0
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        base = torch.nn.Linear(D_X, D_Y)
        torch.manual_seed(seed)
        bound = math.sqrt(6.0 / D_X)
        vt = torch.empty(1, 1, D_X).uniform_(-bound, bound)[0].double()  # V^T (r, d_in)
    w, b = base.weight.detach().double(), base.bias.detach().double()
    u = torch.zeros(D_Y, 1, dtype=torch.float64)  # U (d_out, r)
    torch.testing.assert_close(initial[BASE_W].double(), w, rtol=0, atol=0)
    torch.testing.assert_close(initial[BASE_B].double(), b, rtol=0, atol=0)
    torch.testing.assert_close(initial[W_IN][0].double(), vt, rtol=0, atol=0)
    assert set(initial) == {BASE_W, BASE_B, W_IN, W_OUT} and float(initial[W_OUT].abs().max()) == 0

    data = load_synthetic_linear(seed=seed, n_clients=K)
    x, y = data.train.x.double(), data.train.y.double()
    train_losses = []
    for t in range(rounds):
        trained, sizes, losses = [], [], []
        for k in range(K):
            rows = _client_rows(data.train_groups, k)
            xk, yk = x[rows], y[rows]
            uk, vk = u.clone(), vt.clone()
            steps = math.ceil(len(rows) / BATCH)  # one local epoch
            batches = batch_schedule(
                len(rows), steps, BATCH, torch_generator(seed, "batches", k, t)
            )
            step_losses = []
            for idx in batches:
                uk.requires_grad_(True)
                vk.requires_grad_(True)
                pred = xk[idx] @ (w + uk @ vk).T + b
                loss = 0.5 * (pred - yk[idx]).pow(2).sum(dim=1).mean()
                g_u, g_v = torch.autograd.grad(loss, [uk, vk])
                uk, vk = (uk - LR * g_u).detach(), (vk - LR * g_v).detach()  # plain SGD
                step_losses.append(float(loss.detach()))
            trained.append((uk, vk))
            sizes.append(float(len(rows)))
            losses.append(float(np.mean(step_losses)))
        n = sum(sizes)
        u = sum(s * uk for s, (uk, _) in zip(sizes, trained, strict=True)) / n
        vt = sum(s * vk for s, (_, vk) in zip(sizes, trained, strict=True)) / n
        train_losses.append(float(np.dot(sizes, losses) / n))

    final = run.learner.global_state
    torch.testing.assert_close(final[W_OUT][0].double(), u, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(final[W_IN][0].double(), vt, rtol=1e-5, atol=1e-5)
    assert float(final[W_OUT].abs().max()) > 1e-2  # the factors did move
    torch.testing.assert_close(final[BASE_W].double(), w, rtol=0, atol=0)  # frozen
    torch.testing.assert_close(final[BASE_B].double(), b, rtol=0, atol=0)
    np.testing.assert_allclose(result.rounds["loss"], train_losses, rtol=1e-5)
    # the test loss of the last round: every client's model is the global one
    xt, yt = data.test.x.double(), data.test.y.double()
    pred = xt @ (w + u @ vt).T + b
    test_loss = float((0.5 * (pred - yt).pow(2).sum(dim=1)).mean())
    assert float(result.rounds["test_loss"].iloc[-1]) == pytest.approx(test_loss, rel=1e-5)


# ---- 7b: the routers recover the clusters; personalisation beats FedAvg -------------------------
def _personalised_test_loss(state, private, data) -> float:
    """Mean over all test rows of 0.5 ||y_hat - y||^2, client k's layer
    W + sum_c pi_c U_c V_c^T, b + sum_c pi_c L_b,c with pi = max(softmax(theta^k), 0.01)."""
    w, b = state[BASE_W].double(), state[BASE_B].double()
    vt, u, lb = state[W_IN].double(), state[W_OUT].double(), state[B_IN].double()
    total, count = 0.0, 0
    for k in range(K):
        theta = private.get(k)["theta"].double()
        pi = torch.clamp(torch.exp(theta) / torch.exp(theta).sum(), min=0.01)
        w_k = w + sum(pi[c] * u[c] @ vt[c] for c in range(len(pi)))
        b_k = b + sum(pi[c] * lb[c] for c in range(len(pi)))
        rows = _client_rows(data.test_groups, k)
        pred = data.test.x[rows].double() @ w_k.T + b_k
        total += float((0.5 * (pred - data.test.y[rows].double()).pow(2).sum(dim=1)).sum())
        count += len(rows)
    return total / count


@pytest.mark.parametrize("seed", [0, 1])
def test_floral_recovers_the_clusters_and_beats_fedavg(seed, tmp_path):
    rounds = 60
    run = Run(_scenario(rounds, seed=seed), tmp_path / "floral")
    messages = _capture_messages(run)
    floral = run.execute().rounds
    accuracy = floral["algo.routing_accuracy"].to_numpy()
    assert (accuracy[40:] == 1.0).all(), accuracy
    # the last round's router metrics by hand from the uploaded pi^k = softmax(theta^k)
    last = floral.iloc[-1]
    pis = np.stack([messages[-1][k].shared["mixture_weights"].double().numpy() for k in range(K)])
    entropy = float(np.mean(-(pis * np.log(pis)).sum(axis=1)))
    assert float(last["algo.router_entropy"]) == pytest.approx(entropy, rel=1e-6)
    truth = np.zeros((K, 2))
    truth[np.arange(K), np.arange(K) % 2] = 1.0  # equal N^k: p(k|c) = 1 / 5 on cluster c
    truth /= truth.sum(axis=0)
    p_hat = pis / pis.sum(axis=0)  # pi_c^k N^k / sum_k' pi_c^k' N^k' with equal N^k
    costs = [  # the two matchings of components to clusters
        np.abs(p_hat - truth).sum(axis=0).mean(),
        np.abs(p_hat - truth[:, ::-1]).sum(axis=0).mean(),
    ]
    assert float(last["algo.aggregation_mismatch"]) == pytest.approx(min(costs), rel=1e-6)
    assert min(costs) < 0.5
    # by hand from the private routers: clients of one cluster share their top component, the
    # two clusters have different ones
    tops = [int(run.learner.private.get(k)["theta"].argmax()) for k in range(K)]
    clusters = np.arange(K) % 2
    assert len({tops[k] for k in range(K) if clusters[k] == 0}) == 1
    assert len({tops[k] for k in range(K) if clusters[k] == 1}) == 1
    assert tops[0] != tops[1]
    # the personalised test loss by hand from the global state and the routers
    data = load_synthetic_linear(seed=seed, n_clients=K)
    loss = _personalised_test_loss(run.learner.global_state, run.learner.private, data)
    assert float(floral["test_loss"].iloc[-1]) == pytest.approx(loss, rel=1e-5)

    fedavg_run = Run(
        _scenario(rounds, False, algorithm="fedavg_full", seed=seed), tmp_path / "fedavg"
    )
    fedavg = fedavg_run.execute().rounds
    # FedAvg's one global model, by hand: members.<name> holds the single copy (C = 1)
    state = fedavg_run.learner.global_state
    w, b = state["members.linear__weight"][0].double(), state["members.linear__bias"][0].double()
    pred = data.test.x.double() @ w.T + b
    by_hand = float((0.5 * (pred - data.test.y.double()).pow(2).sum(dim=1)).mean())
    assert float(fedavg["test_loss"].iloc[-1]) == pytest.approx(by_hand, rel=1e-5)
    assert float(floral["test_loss"].iloc[-1]) < 0.1 * float(fedavg["test_loss"].iloc[-1])


# ---- 7c: the uplink grows with C -----------------------------------------------------------------
@pytest.mark.parametrize("n_adaptors", [1, 2, 4])
def test_uplink_bits_grow_with_the_number_of_adaptors(n_adaptors, tmp_path):
    run = Run(_scenario(1, {"n_adaptors": n_adaptors}), tmp_path / "run")
    messages = _capture_messages(run)
    rounds = run.execute().rounds
    c = n_adaptors
    weights = c if c > 1 else 0  # pi^k travels only when there is a mixture
    assert rounds["bits_up"].iloc[0] == V * (BASE + c * ADAPTOR + weights) * K
    assert rounds["bits_down"].iloc[0] == V * (BASE + c * ADAPTOR) * K
    # the message, counted by hand: base W (3 x 10) and b (3); per component V^T (1 x 10),
    # U (3 x 1), the bias adaptor (3); pi^k (C) when C > 1
    (arrived,) = messages
    assert sorted(arrived) == list(range(K))
    for message in arrived.values():
        want = {BASE_W: (3, 10), BASE_B: (3,), W_IN: (c, 1, 10), W_OUT: (c, 3, 1), B_IN: (c, 3)}
        if c > 1:
            want["mixture_weights"] = (c,)
        assert {n: tuple(v.shape) for n, v in message.shared.items()} == want
        assert sum(math.prod(s) for s in want.values()) == BASE + c * ADAPTOR + weights
        assert "theta" not in message.shared


@pytest.mark.parametrize(
    "algorithm,strategy,copies",
    [
        ("fedavg_full", False, 1),
        ("ensemble", {"n_members": 2}, 2),
        ("ensemble", {"n_members": 3}, 3),
    ],
)
def test_full_model_baselines_send_every_copy(algorithm, strategy, copies, tmp_path):
    rounds = Run(_scenario(1, strategy, algorithm=algorithm), tmp_path / "run").execute().rounds
    weights = copies if copies > 1 else 0  # pi^k up when there is a mixture
    assert rounds["bits_up"].iloc[0] == V * (copies * BASE + weights) * K
    assert rounds["bits_down"].iloc[0] == V * copies * BASE * K


def test_local_adaptor_sends_only_the_base(tmp_path):
    run = Run(_scenario(2, False, algorithm="floral_local"), tmp_path / "run")
    messages = _capture_messages(run)
    rounds = run.execute().rounds
    assert (rounds["bits_up"] == V * BASE * K).all()
    assert (rounds["bits_down"] == V * BASE * K).all()
    for arrived in messages:
        for message in arrived.values():
            assert set(message.shared) == {BASE_W, BASE_B}
    # the adaptor stays with the client, and differs from client to client
    kept = [run.learner.private.get(k) for k in range(K)]
    assert all(set(p) == {W_IN, W_OUT, B_IN} for p in kept)
    assert not torch.equal(kept[0][W_OUT], kept[1][W_OUT])


# ---- 7d: --resume restores the private routers -------------------------------------------------
def _private_snapshot(run: Run) -> dict:
    return copy.deepcopy(run.learner.private.state_dict())


def _assert_same_private(a: dict, b: dict) -> None:
    assert sorted(a) == sorted(b)
    for client in a:
        assert sorted(a[client]) == sorted(b[client])
        for name in a[client]:
            assert torch.equal(a[client][name], b[client][name]), (client, name)


def test_resumed_run_restores_the_routers_and_repeats_the_uninterrupted_one(tmp_path):
    sc = _scenario(6, **{"output.checkpoint_every": 1})
    cut_at = 3

    full = Run(sc, tmp_path / "full")
    before = {}
    original = full.sim.run_round

    def recording(t):
        if t == cut_at:
            before["private"] = _private_snapshot(full)
            before["global"] = {n: v.clone() for n, v in full.learner.global_state.items()}
        return original(t)

    full.sim.run_round = recording
    full_result = full.execute()

    interrupt_at(Run(sc, tmp_path / "cut"), cut_at)
    resumed = Run.resume_from(tmp_path / "cut")
    restored = {}
    original_resumed = resumed.sim.run_round

    def check(t):
        if t == cut_at:
            restored["private"] = _private_snapshot(resumed)
            restored["global"] = {n: v.clone() for n, v in resumed.learner.global_state.items()}
        return original_resumed(t)

    resumed.sim.run_round = check
    resumed_result = resumed.execute()

    # the routers (private) and the global state are those of the uninterrupted run at round 3
    assert sorted(restored["private"]) == [str(k) for k in range(K)]
    assert all(set(e) == {"theta"} for e in restored["private"].values())
    assert any(float(e["theta"].abs().max()) > 0 for e in restored["private"].values())
    _assert_same_private(restored["private"], before["private"])
    for name, value in before["global"].items():
        assert torch.equal(restored["global"][name], value), name
    # and the end is the same
    _assert_same_private(_private_snapshot(resumed), _private_snapshot(full))
    for name, value in full.learner.global_state.items():
        assert torch.equal(resumed.learner.global_state[name], value), name
    pd.testing.assert_frame_equal(
        full_result.rounds.drop(columns="wall_s"), resumed_result.rounds.drop(columns="wall_s")
    )
    assert math.isfinite(float(resumed_result.rounds["test_loss"].iloc[-1]))


# ---- 7e: one-line configuration errors -----------------------------------------------------------
def _unclustered_linear(*, seed: int, n_clients: int):
    """synthetic_linear with per-client test rows but without its cluster labels."""
    data = load_synthetic_linear(seed=seed, n_clients=n_clients)
    data.client_clusters = None
    return data


@pytest.fixture
def unclustered_dataset():
    name = "floral_test_unclustered"
    DATASETS.register(name, _unclustered_linear)
    yield name
    DATASETS.unregister(name)


def _one_line_error(make, match: str) -> None:
    with pytest.raises(ConfigError, match=match) as err:
        make()
    assert "\n" not in str(err.value)


def test_adam_is_refused(tmp_path):
    sc = _scenario(2, **{"learner.optimizer": "adam"})
    _one_line_error(lambda: Run(sc, tmp_path / "a"), r"^learner\.optimizer: algorithm floral ")


def test_a_data_set_without_per_client_test_rows_is_refused(tmp_path):
    overrides = {"algorithm.name": "floral", "learner.partition": "iid", "strategy": {}}
    sc = digits_scenario(**overrides, **{"learner.optimizer": "sgd"})
    _one_line_error(lambda: Run(sc, tmp_path / "a"), r"^learner\.dataset: algorithm floral ")


def test_oracle_needs_clusters(tmp_path, unclustered_dataset):
    # the same data with its clusters: the oracle runs
    Run(_scenario(1, {"router": "oracle"}), tmp_path / "ok")
    sc = _scenario(1, {"router": "oracle"}, **{"learner.dataset": unclustered_dataset})
    _one_line_error(
        lambda: Run(sc, tmp_path / "a"), r"^strategy\.router: 'oracle' needs the true clusters"
    )


def test_oracle_needs_one_component_per_cluster(tmp_path):
    sc = _scenario(1, {"router": "oracle", "n_adaptors": 3})
    _one_line_error(
        lambda: Run(sc, tmp_path / "a"),
        r"^strategy\.router: 'oracle' routes to the 2 true clusters, but floral has 3 ",
    )


def test_n_clients_in_the_dataset_options_is_refused(tmp_path):
    sc = _scenario(1, **{"learner.dataset_options": {"n_clients": 5}})
    _one_line_error(
        lambda: Run(sc, tmp_path / "a"), r"^learner\.dataset_options\.n_clients: the number "
    )


def test_cli_exits_2_with_one_line(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "wirelessfl",
            "run",
            str(SCENARIO),
            "--set",
            "learner.optimizer=adam",
            "--out",
            str(tmp_path / "x"),
            "--quiet",
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert proc.returncode == 2
    lines = [line for line in proc.stderr.strip().splitlines() if "warning" not in line]
    assert len(lines) == 1
    assert lines[0].startswith("wirelessfl: error: learner.optimizer: algorithm floral ")


# ---- 8. the oracle router ----------------------------------------------------------------------
def test_oracle_router_weights_the_true_cluster(tmp_path):
    run = Run(_scenario(2, {"router": "oracle"}), tmp_path / "run")
    messages = _capture_messages(run)
    model = run.learner.algorithm.model
    forwards = []

    def record(layer, args):
        forwards.append((model.training, model.theta.detach().clone(), layer.weights.pi.clone()))

    model.net.linear.register_forward_pre_hook(record)
    rounds = run.execute().rounds
    assert (rounds["n_arrived"] == K).all()
    for arrived in messages:
        assert sorted(arrived) == list(range(K))
        for k, message in arrived.items():
            pi = message.shared["mixture_weights"].double()
            assert float(pi[k % 2]) == pytest.approx(1.0, abs=1e-12)
            assert float(pi[1 - k % 2]) < 1e-30
            assert "theta" not in message.private  # the oracle keeps no router
    # every forward pass: pi = 1 on the client's cluster, the 0.01 floor elsewhere
    # 2 rounds x 10 clients x 2 steps, and 2 evaluations of every client: before round 0
    # (eval_every 2 > 1, so eval_initial is on) and after round 1
    assert len(forwards) == 2 * K * 2 + 2 * K
    for _, theta, pi in forwards:
        cluster = int(theta.argmax())
        assert float(pi[cluster]) == pytest.approx(1.0, abs=1e-6)
        assert float(pi[1 - cluster]) == pytest.approx(0.01, rel=1e-6)
    evaluation = [theta for training, theta, _ in forwards if not training]
    assert [int(theta.argmax()) for theta in evaluation] == [k % 2 for k in range(K)] * 2
    # the aggregate: component c is the N^k-weighted mean of cluster c's clients' copies only
    last = messages[-1]
    for name in (W_IN, W_OUT, B_IN):
        for c in range(2):
            members = [k for k in range(K) if k % 2 == c]
            want = sum(last[k].shared[name][c].double() for k in members) / len(members)
            got = run.learner.global_state[name][c].double()
            torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
