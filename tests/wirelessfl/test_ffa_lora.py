"""FFA-LoRA (``algorithm.name: ffa_lora``): A frozen at its random initialisation, B trained,
uploaded and averaged; checked by hand, with both trainers, network-only and exported (the
export itself: tests/wirelessfl/test_export.py's ``ffa_lora`` case)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scenario_helpers import digits_scenario, small_scenario

from wirelessfl.sim import run_scenario

torch = pytest.importorskip("torch")

from wirelessfl.algorithms import Message, make_algorithm  # noqa: E402
from wirelessfl.learners.export import exportable_algorithms  # noqa: E402
from wirelessfl.plans import ClientPlan, RoundPlan  # noqa: E402
from wirelessfl.sim.runner import Run  # noqa: E402
from wirelessfl.training.private_state import PrivateState  # noqa: E402
from wirelessfl.training.runtime import Runtime  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")

V = 32
HIDDEN = 64  # tiny_mlp: fc1 64 -> 64, fc2 64 -> 64; a head of 64 x 10 + 10
HEAD = 64 * 10 + 10


def _scenario(**overrides):
    return digits_scenario(**{"algorithm.name": "ffa_lora", **overrides})


@pytest.mark.parametrize("trainer", ["sequential", "batched"])
def test_a_never_changes_and_b_trains(trainer, tmp_path):
    run = Run(_scenario(rounds=3, **{"learner.trainer": trainer}), tmp_path / "run")
    learner = run.learner
    initial = learner.runtime.initial_state()
    result = run.execute()
    layers = learner.runtime.state.layers
    for layer in layers:  # the global A is A's initial value, bit for bit
        assert torch.equal(learner.global_state[layer.a_param], initial[layer.a_param])
        assert not torch.equal(learner.global_state[layer.b_param], initial[layer.b_param])
    assert result.rounds.loss.notna().all()


def test_a_client_trains_b_and_the_head_only():
    sc = _scenario()
    runtime = Runtime(sc)
    runtime.start(rank=4, seed=sc.seed)
    algorithm = make_algorithm(sc)
    algorithm.bind(runtime)
    glob = runtime.initial_state()
    plan = ClientPlan(1, 0, 4, 1.0)
    download = algorithm.broadcast(plan, glob)
    assert not set(download.shared) & algorithm.frozen_names()  # A is never sent
    (result,) = algorithm.train([plan], [download.shared], PrivateState())
    for layer in runtime.state.layers:
        assert torch.equal(result.local[layer.a_param], glob[layer.a_param])
        assert not torch.equal(result.local[layer.b_param], glob[layer.b_param])
    message = algorithm.sent_message(plan, download, result, {})
    b_names = {layer.b_param for layer in runtime.state.layers}
    assert set(message.shared) == b_names | set(runtime.state.full_names)
    assert all(group.a is None for group in message.lora)


def test_upload_is_b_only_bits_by_hand(tmp_path):
    result = run_scenario(_scenario(rounds=2), tmp_path / "run")
    trained = result.clients[result.clients.status == "arrived"]
    # per client: B of each adapted layer, d_out x r = 64 x 4 values, and the head, dense
    assert (trained.bits == V * (2 * HIDDEN * 4 + HEAD)).all()
    assert (trained.bits_down == V * (2 * HIDDEN * 4 + HEAD)).all()  # B and the head down


@pytest.mark.parametrize("aggregation", ["weighted_mean", "unbiased"])
def test_aggregate_is_the_weighted_mean_of_the_b_updates_by_hand(aggregation):
    sc = _scenario(strategy={"aggregation": aggregation})
    runtime = Runtime(sc)
    runtime.start(rank=4, seed=sc.seed)
    algorithm = make_algorithm(sc)
    algorithm.bind(runtime)
    glob = runtime.initial_state()
    before = {n: v.clone() for n, v in glob.items()}
    layers = runtime.state.layers
    g = torch.Generator().manual_seed(5)
    plans = {2: ClientPlan(2, 0, 4, 1.0), 5: ClientPlan(5, 0, 2, 1.0)}  # client 5 at rank 2
    messages = {}
    for c, plan in plans.items():
        shared = {}
        for layer in layers:
            b = glob[layer.b_param]
            shared[layer.b_param] = torch.randn((b.shape[0], plan.rank), generator=g)
        for name in runtime.state.full_names:
            shared[name] = torch.randn(glob[name].shape, generator=g)
        messages[c] = Message(shared=shared, lora=algorithm.lora_tensors(plan))
    p = {c: float(runtime.data_fractions[c]) for c in plans}
    w = (
        {c: p[c] / sum(p.values()) for c in plans}
        if aggregation == "weighted_mean"
        else {c: 8 / 2 * p[c] for c in plans}  # (N / K) p_k
    )
    round_plan = RoundPlan(0, np.array([2, 5]), [4, 2], 1.0, math.nan, 2)
    out = algorithm.aggregate(glob, messages, plans, round_plan)
    for layer in layers:
        assert torch.equal(out[layer.a_param], before[layer.a_param])
        want = before[layer.b_param].clone()
        for c, plan in plans.items():
            want[:, : plan.rank] += w[c] * messages[c].shared[layer.b_param]
        torch.testing.assert_close(out[layer.b_param], want, rtol=1e-6, atol=1e-7)
    for name in runtime.state.full_names:
        want = before[name] + sum(w[c] * messages[c].shared[name] for c in plans)
        torch.testing.assert_close(out[name], want, rtol=1e-6, atol=1e-7)


def test_network_only_under_tsfa_and_with_the_topk_stage(tmp_path):
    plain = run_scenario(
        small_scenario(rounds=20, **{"algorithm.name": "ffa_lora"}), tmp_path / "a"
    )
    topk = run_scenario(
        small_scenario(
            rounds=20,
            **{"algorithm.name": "ffa_lora", "compression.sparsifier": "topk"},
        ),
        tmp_path / "b",
    )
    for result in (plain, topk):
        rounds = result.rounds
        np.testing.assert_allclose(rounds.planned_delay_s, rounds.delay_s, rtol=1e-9)
    # small_scenario's layers (64, 64) and (64, 32): B holds r (64 + 32) values
    arrived = plain.clients[plain.clients.status == "arrived"]
    assert (arrived.bits == V * arrived["rank"] * (64 + 32)).all()
    sent = topk.clients[topk.clients.status == "arrived"]
    for row in sent.itertuples():
        kept = round(row.ratio * row.rank * 64) + round(row.ratio * row.rank * 32)
        assert row.bits == V * kept
    assert (sent.ratio < 1.0).any()  # the controller thinned B: O^t is its knob with the stage
    assert (topk.rounds.sparsification < 1.0).any()


def test_soft_importance_sparsifier_is_refused_in_one_line(tmp_path):
    from wirelessfl.errors import ConfigError

    with pytest.raises(ConfigError) as err:
        run_scenario(
            small_scenario(**{"algorithm.name": "ffa_lora", "compression.sparsifier": "soft"}),
            tmp_path / "run",
        )
    assert "sends B alone" in str(err.value) and "\n" not in str(err.value)


def test_it_is_exportable():
    assert "ffa_lora" in exportable_algorithms()
