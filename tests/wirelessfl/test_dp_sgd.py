"""Sample-level DP-SGD (``privacy.dp_sgd``): Opacus's per-sample gradients clipped exactly as a
hand loop over single samples clips them, the noise's std by Monte Carlo, the batched trainer
refused in one line, and the per-device epsilon against Opacus's accountant stepped by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scenario_helpers import digits_scenario

from wirelessfl.errors import ConfigError

torch = pytest.importorskip("torch")
pytest.importorskip("opacus")

from opacus.accountants import RDPAccountant  # noqa: E402

from wirelessfl.models.rng import torch_generator  # noqa: E402
from wirelessfl.privacy.dp_sgd import DpSgd, per_sample_gradients, privatize_gradients  # noqa: E402
from wirelessfl.sim.runner import Run  # noqa: E402
from wirelessfl.training.runtime import Runtime  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")

B = 8


def _scenario(**overrides):
    base = {"algorithm.name": "fedit", "privacy.dp_sgd": True, "learner.trainer": "sequential"}
    return digits_scenario(**{**base, **overrides})


@pytest.fixture(scope="module")
def runtime():
    rt = Runtime(_scenario())
    rt.start(rank=4, seed=1)
    return rt


def _flat_grads(params):
    return torch.cat([p.grad.flatten().double() for p in params.values()])


def _loss(rt, idx):
    return rt.bundle.loss_and_logits(rt.model, rt.train_data.batch(idx))[0]


def test_per_sample_clipping_equals_a_hand_loop(runtime):
    rt, clip = runtime, 0.05
    params = rt.state.params
    idx = torch.arange(B)
    by_hand = torch.zeros(sum(p.numel() for p in params.values()), dtype=torch.float64)
    clipped = 0
    for i in range(B):  # one backward per sample: its own gradient, clipped by hand
        rt.model.zero_grad(set_to_none=True)
        _loss(rt, idx[i : i + 1]).backward()
        g = _flat_grads(params)
        clipped += int(float(g.norm()) > clip)
        by_hand += g * min(1.0, clip / float(g.norm()))
    by_hand /= B
    rt.model.zero_grad(set_to_none=True)
    with per_sample_gradients(rt.model):
        _loss(rt, idx).backward()
        fraction = privatize_gradients(
            params, DpSgd(clip, 0.0), torch_generator(0, "dp_sgd", 0, 0), B
        )
    got = _flat_grads(params)
    rt.model.zero_grad(set_to_none=True)
    assert clipped > 0  # the test clips something
    assert fraction == pytest.approx(clipped / B)
    assert torch.allclose(got, by_hand, rtol=1e-5, atol=1e-8)
    assert not any(getattr(p, "grad_sample", None) is not None for p in rt.model.parameters())


def test_noise_std_is_sigma_c_over_b(runtime):
    rt, clip, sigma = runtime, 1e6, 0.5  # nothing clipped: the residual is the noise / B
    params = rt.state.params
    idx = torch.arange(B)
    rt.model.zero_grad(set_to_none=True)
    _loss(rt, idx).backward()
    clean = _flat_grads(params)
    rt.model.zero_grad(set_to_none=True)
    with per_sample_gradients(rt.model):
        _loss(rt, idx).backward()
        privatize_gradients(params, DpSgd(clip, sigma), torch_generator(0, "dp_sgd", 1, 0), B)
    residual = _flat_grads(params) - clean
    rt.model.zero_grad(set_to_none=True)
    n = residual.numel()
    assert float(residual.std()) == pytest.approx(sigma * clip / B, rel=5 / math.sqrt(2 * n))
    assert abs(float(residual.mean())) < 5 * sigma * clip / B / math.sqrt(n)


@pytest.mark.parametrize(
    ("overrides", "words"),
    [
        ({"learner.trainer": "batched"}, "does not keep exact per-sample gradients"),
        ({"algorithm.name": "floral"}, "trains with trainers of its own"),
        ({"algorithm.name": "h2tune"}, "trains with trainers of its own"),
    ],
)
def test_refusals_are_one_line(overrides, words):
    with pytest.raises(ConfigError) as err:
        _scenario(**overrides)
    assert words in str(err.value) and "\n" not in str(err.value)


def test_a_run_reports_the_largest_device_epsilon(tmp_path):
    sc = _scenario(
        rounds=3,
        **{"privacy.sample_noise_multiplier": 1.1, "privacy.delta": 1e-5},
    )
    run = Run(sc, tmp_path / "run")
    rt = run.learner.runtime
    result = run.execute()
    clients = result.clients
    sizes = rt.partition.sizes
    expected = []
    steps = np.zeros(sc.n_clients, dtype=int)
    for t in range(3):
        for c in clients[clients["round"] == t].client:  # every scheduled client trained
            if clients[(clients["round"] == t) & (clients.client == c)].status.item() != "outage":
                steps[c] += rt.steps_for(int(c))
        eps = []
        for c in np.flatnonzero(steps):
            acc = RDPAccountant()
            acc.history = [(1.1, min(1.0, sc.learner.batch_size / sizes[c]), int(steps[c]))]
            eps.append(acc.get_epsilon(1e-5))
        expected.append(max(eps))
    assert np.allclose(result.rounds.dp_sgd_epsilon, expected, rtol=1e-12)
    assert np.all(np.diff(expected) >= 0) and expected[-1] > expected[0]
    assert "dp_epsilon" not in result.rounds.columns  # no client-level DP in this run


def test_drop_tables_by_hand():
    """``dp-ffa``'s tables on a made-up summary: drops and their difference computed here."""
    import pandas as pd

    from wirelessfl.study.privacy_figures import drop_table

    acc = {  # (algorithm, sigma) -> final accuracy per seed 0, 1, 2 (sigma 0: no DP)
        ("fedit", 0.0): [0.90, 0.88, 0.91],
        ("fedit", 2.0): [0.60, 0.50, 0.65],
        ("ffa_lora", 0.0): [0.85, 0.86, 0.84],
        ("ffa_lora", 2.0): [0.80, 0.70, 0.80],
    }
    rows = [
        {
            "algorithm.name": name,
            "privacy.dp_sgd": sigma > 0,
            "privacy.sample_noise_multiplier": sigma if sigma > 0 else float("nan"),
            "seed": seed,
            "finished": True,
            "final_accuracy": a,
            "final_dp_sgd_epsilon": 3.0 if sigma > 0 else math.inf,
        }
        for (name, sigma), values in acc.items()
        for seed, a in enumerate(values)
    ]
    tables = drop_table(pd.DataFrame(rows))
    drops = tables["dp_drops"].set_index("algorithm")
    assert drops.loc["fedit", "diffs"] == pytest.approx((0.30, 0.38, 0.26))
    assert drops.loc["ffa_lora", "diffs"] == pytest.approx((0.05, 0.16, 0.04))
    (pair,) = tables["ffa_vs_fedit"].to_dict("records")
    assert pair["diffs"] == pytest.approx((0.25, 0.22, 0.22))
    assert pair["mean_diff"] == pytest.approx(0.23)
    assert pair["verdict"] == "not established"  # 3 seeds: below the page's 5
    assert "fewer than 5 seeds" in pair["reason"]
    level = tables["ffa_above_fedit"].set_index("sigma")
    assert list(level.index) == [0.0, 2.0]
    assert level.loc[0.0, "diffs"] == pytest.approx((-0.05, -0.02, -0.07))
    assert level.loc[2.0, "diffs"] == pytest.approx((0.20, 0.20, 0.15))
    assert level.loc[2.0, "mean_epsilon"] == 3.0 and math.isinf(level.loc[0.0, "mean_epsilon"])
    assert level.loc[2.0, "verdict"] == "not established"


def test_five_seeds_give_verdicts_both_ways():
    """With the page's five seeds a consistent gap is a verdict: FFA-LoRA above FedIT under DP
    (its drop smaller), below without it."""
    import pandas as pd

    from wirelessfl.study.privacy_figures import drop_table

    acc = {
        ("fedit", 0.0): [0.90, 0.88, 0.91, 0.89, 0.90],
        ("fedit", 1.0): [0.60, 0.62, 0.58, 0.61, 0.59],
        ("ffa_lora", 0.0): [0.85, 0.84, 0.86, 0.85, 0.83],
        ("ffa_lora", 1.0): [0.80, 0.79, 0.81, 0.78, 0.80],
    }
    rows = [
        {
            "algorithm.name": name,
            "privacy.dp_sgd": sigma > 0,
            "privacy.sample_noise_multiplier": sigma if sigma > 0 else float("nan"),
            "seed": seed,
            "final_accuracy": a,
            "final_dp_sgd_epsilon": 8.0 if sigma > 0 else math.inf,
        }
        for (name, sigma), values in acc.items()
        for seed, a in enumerate(values)
    ]
    tables = drop_table(pd.DataFrame(rows))
    (pair,) = tables["ffa_vs_fedit"].to_dict("records")
    # FedIT's drop - FFA-LoRA's: (0.30-0.05, 0.26-0.05, 0.33-0.05, 0.28-0.07, 0.31-0.03)
    assert pair["diffs"] == pytest.approx((0.25, 0.21, 0.28, 0.21, 0.28))
    assert pair["verdict"] == "above"
    level = tables["ffa_above_fedit"].set_index("sigma")
    assert level.loc[1.0, "diffs"] == pytest.approx((0.20, 0.17, 0.23, 0.17, 0.21))
    assert level.loc[1.0, "verdict"] == "above"
    assert level.loc[0.0, "verdict"] == "below"
