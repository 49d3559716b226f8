"""FedAvg-LoRA (FedIT) and its top-k variant against independent computations: the server step
by hand, the kept entries by magnitude, the payload sizes by formula."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scenario_helpers import digits_scenario, small_scenario

from wirelessfl.plans import ClientPlan, RoundPlan

torch = pytest.importorskip("torch")

from wirelessfl.algorithms import Message, make_algorithm  # noqa: E402
from wirelessfl.algorithms.compression_stage import compress_message  # noqa: E402
from wirelessfl.sim import run_scenario  # noqa: E402
from wirelessfl.training.runtime import Runtime  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")

V = 32  # bits per value (payload.bits_per_value default)
LAYER = 4 * (64 + 64)  # r (d + l) of each tiny_mlp adapted layer (fc1, fc2: 64 -> 64) at r = 4
HEAD = 64 * 10 + 10  # tiny_mlp's task head on digits (10 classes), trained and sent dense


def _scenario(name, strategy=None, **overrides):
    return digits_scenario(**{"algorithm.name": name, "strategy": strategy or {}, **overrides})


def _bound(name, strategy=None):
    sc = _scenario(name, strategy)
    runtime = Runtime(sc)
    runtime.start(rank=4, seed=sc.seed)
    algorithm = make_algorithm(sc)
    algorithm.bind(runtime)
    return algorithm, runtime


def test_topk_with_ratio_one_is_fedit(tmp_path):
    dense = run_scenario(_scenario("fedit", rounds=3), tmp_path / "dense")
    topk = run_scenario(
        _scenario("fedit_topk", rounds=3, **{"compression.ratio": 1.0}), tmp_path / "topk"
    )
    pd.testing.assert_frame_equal(
        dense.rounds.drop(columns="wall_s"), topk.rounds.drop(columns="wall_s")
    )
    pd.testing.assert_frame_equal(dense.clients, topk.clients)
    trained = dense.clients[dense.clients.status == "arrived"]
    assert (trained.bits == V * (2 * LAYER + HEAD)).all()
    assert (trained.bits_down == V * (2 * LAYER + HEAD)).all()
    assert (dense.rounds["algo.sent_fraction"] == 1.0).all()


def test_topk_upload_keeps_the_largest_entries_of_each_layer():
    algorithm, runtime = _bound("fedit_topk")
    stage = algorithm.cost.compression  # App. C.2's: top-k of half, no error feedback
    assert (stage.sparsifier, stage.ratio, stage.error_feedback) == ("topk", 0.5, False)
    g = torch.Generator().manual_seed(0)
    delta = {n: torch.randn(v.shape, generator=g) for n, v in runtime.initial_state().items()}
    plan = ClientPlan(0, 0, 4, 0.5)
    message = Message(shared=dict(delta), lora=algorithm.lora_tensors(plan))
    compress_message(message, stage=stage, ratio=0.5, model_rank=4, memory=None, generator=None)
    keep = round(0.5 * LAYER)
    for layer in runtime.state.layers:
        names = (layer.a_param, layer.b_param)
        sent = torch.cat([message.shared[n].reshape(-1) for n in names])
        original = torch.cat([delta[n].reshape(-1) for n in names])
        kept = sent != 0
        assert int(kept.sum()) == keep
        torch.testing.assert_close(sent[kept], original[kept], rtol=0, atol=0)
        assert float(original[kept].abs().min()) >= float(original[~kept].abs().max())
    for name in runtime.state.full_names:
        assert torch.equal(message.shared[name], delta[name])
    payload = message.payload(bits_per_value=V, count_index=True)
    assert payload.n_values == 2 * keep + HEAD and payload.n_total == 2 * LAYER + HEAD
    assert payload.index_bits == 2 * min(LAYER, keep * math.ceil(math.log2(LAYER)))
    assert "memory" not in message.private or message.private["memory"] is None


def test_topk_run_counts_values_and_index_bits(tmp_path):
    sc = _scenario(
        "fedit_topk", rounds=2, **{"payload.index_overhead": True, "compression.ratio": 0.25}
    )
    result = run_scenario(sc, tmp_path / "run")
    trained = result.clients[result.clients.status == "arrived"]
    keep = round(0.25 * LAYER)
    index = min(LAYER, keep * math.ceil(math.log2(LAYER)))
    assert (trained.bits == V * (2 * keep + HEAD) + 2 * index).all()
    assert (trained.bits_down == V * (2 * LAYER + HEAD)).all()  # the download is dense
    assert (trained["ratio"] == 0.25).all()
    assert (result.rounds["algo.sent_fraction"] == 0.25).all()


@pytest.mark.parametrize("aggregation", ["weighted_mean", "unbiased"])
def test_aggregate_by_hand_with_a_lower_controller_rank(aggregation):
    algorithm, runtime = _bound("fedit", {"aggregation": aggregation})
    global_state = runtime.initial_state()
    layers = runtime.state.layers
    plans = {2: ClientPlan(2, 0, 2, 1.0), 5: ClientPlan(5, 0, 4, 1.0)}
    g = torch.Generator().manual_seed(3)
    messages = {}
    for c, plan in plans.items():
        start = algorithm.broadcast(plan, global_state).shared  # truncated to the client's rank
        for layer in layers:
            assert start[layer.a_param].shape[0] == plan.rank
            assert start[layer.b_param].shape[1] == plan.rank
        messages[c] = Message(
            shared={n: torch.randn(v.shape, generator=g) for n, v in start.items()}
        )
    p = {c: float(runtime.data_fractions[c]) for c in plans}
    if aggregation == "weighted_mean":
        w = {c: p[c] / sum(p.values()) for c in plans}
    else:
        w = {c: 8 / 2 * p[c] for c in plans}  # (N / K) p_k
    expected = {n: v.clone() for n, v in global_state.items()}
    for c, plan in plans.items():
        for layer in layers:  # the client's components are the first r_k; zeros beyond
            expected[layer.a_param][: plan.rank] += w[c] * messages[c].shared[layer.a_param]
            expected[layer.b_param][:, : plan.rank] += w[c] * messages[c].shared[layer.b_param]
        for name in runtime.state.full_names:
            expected[name] += w[c] * messages[c].shared[name]
    round_plan = RoundPlan(0, np.array([2, 5]), [2, 4], 1.0, math.nan, 2)
    got = algorithm.aggregate(global_state, messages, plans, round_plan)
    for name, value in expected.items():
        torch.testing.assert_close(got[name], value, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize(("name", "ratio"), [("fedit", 1.0), ("fedit_topk", 0.5)])
def test_network_only_sizes(name, ratio, tmp_path):
    controller = {"name": "fixed", "rank": 8, "sparsification": 1.0, "r_max": 16}
    sc = small_scenario(rounds=3, controller=controller, **{"algorithm.name": name})
    clients = run_scenario(sc, tmp_path / "run").clients
    trained = clients[clients.status == "arrived"]
    per_layer = [8 * (64 + 64), 8 * (64 + 32)]  # small_scenario's layer shapes at r = 8
    assert (trained.bits == V * sum(round(ratio * n) for n in per_layer)).all()
    assert (trained.bits_down == V * sum(per_layer)).all()
