"""FedIT and FLoRAL end to end on clients of unequal size, against one round computed by hand.

The task is FLoRAL's synthetic linear regression (one ``Linear(10, 3)``) with client k keeping
``SIZES[k]`` training rows, so the size weighting (FedIT's p_k = N^k / N, FLoRAL's N^k for the
base and pi_c^k N^k for adaptor c) matters. Every client trains two full-batch SGD steps
(``local_unit: epochs``, a batch larger than any client). The expected global state after
round 0 is written here from the algorithms' equations (forward pass, squared error, SGD,
FLoRAL's preconditioning, the weighted averages) in float64, from the same initial state and
data; the run goes through ``run_scenario`` and its checkpoint.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from wirelessfl.config import scenario_from_dict  # noqa: E402
from wirelessfl.data.arrays import ArrayDataset  # noqa: E402
from wirelessfl.data.mixture_tasks import load_synthetic_linear  # noqa: E402
from wirelessfl.learners.federated import FederatedLearner  # noqa: E402
from wirelessfl.registries import DATASETS  # noqa: E402
from wirelessfl.sim import run_scenario  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")

SIZES = [2, 5, 3, 6]  # training rows of clients 0..3 (N = 16)
STEPS = 2  # full-batch SGD steps per round
LR = 0.05
DATASET = "_synthetic_linear_unequal"


@pytest.fixture
def unequal_data():
    """Registers the unequal data set for the test; yields what the loader returned."""
    made = {}

    def load(*, seed, n_clients):
        data = load_synthetic_linear(seed=seed, n_clients=n_clients, samples_per_client=8)
        groups = data.train_groups
        keep = np.concatenate([np.flatnonzero(groups == k)[: SIZES[k]] for k in range(n_clients)])
        made["data"] = dataclasses.replace(
            data,
            train=ArrayDataset(data.train.x[keep], data.train.y[keep]),
            train_groups=groups[keep],
        )
        return made["data"]

    DATASETS.register(DATASET, load)
    yield made
    DATASETS.unregister(DATASET)


def _scenario(algorithm: str, strategy: dict, **learner) -> object:
    return scenario_from_dict(
        {
            "name": f"unequal_{algorithm}",
            "seed": 0,
            "n_clients": len(SIZES),
            "n_scheduled": len(SIZES),  # every client trains and arrives
            "rounds": 1,
            "eval_every": 1,
            "channel": {"bandwidth_hz": 1.0e6, "mean_snr_db": 20.0},
            "devices": {"kind": "fixed", "flops_per_s": 1.0e9},
            "controller": {"name": "fixed", "rank": 1, "sparsification": 1.0, "r_max": 1},
            "constants": {"E": STEPS},
            "algorithm": {"name": algorithm},
            "strategy": strategy,
            "learner": {
                "kind": "lora",
                "model": "synthetic_linear",
                "dataset": DATASET,
                "partition": "by_client",
                "local_unit": "epochs",
                "local_steps": STEPS,
                "batch_size": 64,  # > every client: one full batch per epoch
                "optimizer": "sgd",
                "lr": LR,
                **learner,
            },
            "output": {"clients": True},
        }
    )


def _initial(scenario) -> tuple[dict, dict]:
    """The global state before round 0 and every parameter of the built model (float64)."""
    learner = FederatedLearner(scenario)
    learner.start(rank=1, n_clients=len(SIZES), seed=scenario.seed)
    model = dict(learner.runtime.bundle.model.named_parameters())
    as64 = lambda d: {k: v.detach().double().clone() for k, v in d.items()}  # noqa: E731
    return as64(learner.global_state), as64(model)


def _after_one_round(scenario, tmp_path) -> dict:
    result = run_scenario(scenario, tmp_path / scenario.name)
    arrived = result.clients[result.clients.status == "arrived"]
    assert sorted(arrived.client) == list(range(len(SIZES)))  # the weights cover all clients
    payload = torch.load(tmp_path / scenario.name / "checkpoints" / "1" / "learner.pt")
    return {k: v.double() for k, v in payload["global"].items()}


def _client_rows(data, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    rows = np.flatnonzero(data.train_groups == k)
    assert len(rows) == SIZES[k]
    return data.train.x[rows].double(), data.train.y[rows].double()


def _squared_error(pred: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return 0.5 * ((pred - y) ** 2).sum(dim=1).mean()  # mean_i 1/2 ||y_hat_i - y_i||^2


def _close(got: dict, expected: dict) -> None:
    assert set(got) == set(expected)
    for name, value in expected.items():
        torch.testing.assert_close(got[name], value, rtol=2e-5, atol=1e-6, msg=name)


def test_fedit_round_with_unequal_clients_by_hand(unequal_data, tmp_path):
    alpha = 2.0  # peft scale alpha / r at r = 1
    scenario = _scenario("fedit", {}, lora_alpha=alpha)
    start, model = _initial(scenario)
    a_name = next(k for k in start if "lora_A" in k)
    b_name = next(k for k in start if "lora_B" in k)
    w, b = model["linear.base_layer.weight"], model["linear.base_layer.bias"]  # frozen
    data = unequal_data["data"]

    trained = []
    for k in range(len(SIZES)):
        x, y = _client_rows(data, k)
        a, bb = start[a_name].clone(), start[b_name].clone()  # (1, 10), (3, 1)
        for _ in range(STEPS):  # y_hat = W x + b + (alpha / r) B A x; plain SGD on A and B
            err = x @ w.T + b + alpha * (x @ a.T) @ bb.T - y  # (n, 3)
            grad_out = err / len(x)  # d loss / d y_hat
            grad_b = alpha * grad_out.T @ (x @ a.T)  # (3, 1)
            grad_a = alpha * (grad_out @ bb).T @ x  # (1, 10)
            a, bb = a - LR * grad_a, bb - LR * grad_b
        trained.append({a_name: a, b_name: bb})
    n = np.asarray(SIZES, dtype=float)
    p = n / n.sum()  # weighted_mean over the arrived clients: N^k / N
    expected = {
        name: start[name] + sum(p[k] * (trained[k][name] - start[name]) for k in range(len(n)))
        for name in start
    }
    assert not torch.allclose(expected[b_name], sum(t[b_name] for t in trained) / len(n))
    _close(_after_one_round(scenario, tmp_path), expected)


def test_floral_round_with_unequal_clients_by_hand(unequal_data, tmp_path):
    router_lr, eps = 0.5, 1e-5
    strategy = {
        "floral": {
            "n_adaptors": 2,
            "rho": 0.01,  # rank 1 on Linear(10, 3)
            "router_lr": router_lr,
            "router_noise": 0.0,
            "router_floor": 0.0,
            "precondition": True,
            "precondition_eps": eps,
        }
    }
    scenario = _scenario("floral", strategy)
    start, _ = _initial(scenario)
    pre = "net.linear."
    names = ("base.weight", "base.bias", "adaptor_in", "adaptor_out", "adaptor_bias")
    data = unequal_data["data"]

    trained, pis = [], []
    for k in range(len(SIZES)):
        x, y = _client_rows(data, k)
        p = {n: start[pre + n].clone().requires_grad_(True) for n in names}
        theta = torch.zeros(2, dtype=torch.float64, requires_grad=True)  # a first round: zeros
        for _ in range(STEPS):
            pi = torch.softmax(theta, dim=0)
            # W~ = W + sum_c pi_c U_c V_c^T, b~ = b + sum_c pi_c L_{b,c}
            weight = p["base.weight"] + sum(
                pi[c] * p["adaptor_out"][c] @ p["adaptor_in"][c] for c in range(2)
            )
            bias = p["base.bias"] + pi @ p["adaptor_bias"]
            loss = _squared_error(x @ weight.T + bias, y)
            grads = torch.autograd.grad(loss, [*p.values(), theta])
            g = dict(zip(names, grads[:-1], strict=True))
            with torch.no_grad():  # eq. (36) at rank 1: divide by the other factor's norm^2 + eps
                v_sq = (p["adaptor_in"] ** 2).sum(dim=(1, 2))  # (C,) V_c^T V_c
                u_sq = (p["adaptor_out"] ** 2).sum(dim=(1, 2))  # (C,) U_c^T U_c
                g["adaptor_out"] = g["adaptor_out"] / (v_sq + eps)[:, None, None]
                g["adaptor_in"] = g["adaptor_in"] / (u_sq + eps)[:, None, None]
                for n in names:
                    p[n] -= LR * g[n]
                theta -= router_lr * grads[-1]
        trained.append({n: v.detach() for n, v in p.items()})
        pis.append(torch.softmax(theta.detach(), dim=0))

    n_k = torch.tensor(SIZES, dtype=torch.float64)
    expected = {}
    for n in ("base.weight", "base.bias"):  # line 11: sum_k N^k u^k / sum_k N^k
        expected[pre + n] = sum(n_k[k] * trained[k][n] for k in range(4)) / n_k.sum()
    for n in ("adaptor_in", "adaptor_out", "adaptor_bias"):  # line 12, per component c
        per_c = []
        for c in range(2):
            w_kc = torch.stack([pis[k][c] * n_k[k] for k in range(4)])
            per_c.append(sum(w_kc[k] * trained[k][n][c] for k in range(4)) / w_kc.sum())
        expected[pre + n] = torch.stack(per_c)
    assert max(float(abs(pi[0] - 0.5)) for pi in pis) > 1e-4  # the routers moved apart
    _close(_after_one_round(scenario, tmp_path), expected)
