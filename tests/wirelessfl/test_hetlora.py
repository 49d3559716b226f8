"""HetLoRA: truncated broadcast, zero-padded weighted sum, sparsity weights, self-pruning.

Independent references are numpy computations on the same tensors; the runs are tiny_mlp on
digits (two adapted 64 x 64 layers, a 64 -> 10 head of 650 values) at model rank 4.
"""

from __future__ import annotations

import numpy as np
import pytest
from scenario_helpers import digits_scenario

from wirelessfl.algorithms import make_algorithm
from wirelessfl.algorithms.client_ranks import client_rank, client_ratios
from wirelessfl.errors import ConfigError
from wirelessfl.plans import ClientPlan, RoundPlan

torch = pytest.importorskip("torch")

from wirelessfl.algorithms.hetero_rank.tail_penalty import kept_rank, tail_norm  # noqa: E402
from wirelessfl.algorithms.message import Message  # noqa: E402
from wirelessfl.models.rng import torch_generator  # noqa: E402
from wirelessfl.sim.runner import Run  # noqa: E402
from wirelessfl.training.batch_schedule import batch_schedule  # noqa: E402
from wirelessfl.training.local import LocalResult  # noqa: E402
from wirelessfl.training.private_state import PrivateState  # noqa: E402
from wirelessfl.training.rank_padding import truncate_rank  # noqa: E402
from wirelessfl.training.runtime import Runtime  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")

RATIOS = [0.25, 0.5, 1.0]  # ranks 1, 2, 4 at model rank 4
ALPHA = 16.0  # learner.lora_alpha's default
HEAD = 64 * 10 + 10
PER_RANK = 2 * (64 + 64)  # LoRA values per unit of rank, both layers


def _scenario(**strategy):
    return digits_scenario(
        rounds=3, **{"algorithm.name": "hetlora", "strategy": {"ratio_choices": RATIOS, **strategy}}
    )


@pytest.fixture(scope="module")
def runtime():
    sc = _scenario()
    rt = Runtime(sc)
    rt.start(rank=4, seed=sc.seed)
    return rt


def _algorithm(runtime, **strategy):
    alg = make_algorithm(_scenario(**strategy))
    alg.bind(runtime)
    return alg


def _np(t):
    return t.detach().cpu().double().numpy()


def _random_state(runtime, rank, gen):
    state = truncate_rank(runtime.initial_state(), runtime.state.layers, rank)
    return {k: torch.randn(v.shape, generator=gen) for k, v in state.items()}


def test_aggregate_is_the_zero_padded_weighted_sum_by_hand(runtime):
    alg = _algorithm(runtime)
    gen = torch.Generator().manual_seed(0)
    glob = _random_state(runtime, 4, gen)
    before = {k: _np(v) for k, v in glob.items()}
    ranks = {1: 1, 4: 2, 6: 4}
    messages = {c: Message(shared=_random_state(runtime, r, gen)) for c, r in ranks.items()}
    plans = {c: ClientPlan(c, 0, r, 1.0) for c, r in ranks.items()}
    rp = RoundPlan(0, np.array(sorted(ranks)), 4, 1.0, 0.0, 3)
    p = np.array([runtime.data_fractions[c] for c in ranks])
    w = p / p.sum()
    deltas = {c: {k: _np(v) for k, v in m.shared.items()} for c, m in messages.items()}
    out = alg.aggregate(glob, messages, plans, rp)
    layers = runtime.state.layers
    a_names = {layer.a_param for layer in layers}
    b_names = {layer.b_param for layer in layers}
    for name, value in before.items():
        want = value.copy()
        for wc, c in zip(w, ranks, strict=True):
            d = deltas[c][name]
            if name in a_names:
                want[: d.shape[0]] += wc * d
            elif name in b_names:
                want[:, : d.shape[1]] += wc * d
            else:
                want += wc * d
        np.testing.assert_allclose(_np(out[name]), want, rtol=1e-5, atol=1e-6)


def test_norm_weights_are_the_clients_effective_product_norms(runtime):
    alg = _algorithm(runtime, aggregation_weights="norm")
    gen = torch.Generator().manual_seed(1)
    layers = runtime.state.layers
    norms, messages = {}, {}
    for c, r in {2: 1, 3: 4}.items():
        start = _random_state(runtime, r, gen)
        local = {k: v + 0.1 * torch.randn(v.shape, generator=gen) for k, v in start.items()}
        plan = ClientPlan(c, 0, r, 1.0)
        messages[c] = alg.client_message(plan, Message(shared=start), LocalResult(local, 0.0), {})
        squares = sum(
            np.sum(((ALPHA / r) * _np(local[x.b_param]) @ _np(local[x.a_param])) ** 2)
            for x in layers
        )
        norms[c] = np.sqrt(squares)
    assert messages[2].diagnostics["norm"] == pytest.approx(norms[2], rel=1e-5)
    rp = RoundPlan(0, np.array([2, 3]), 4, 1.0, 0.0, 2)
    total = norms[2] + norms[3]
    assert alg.client_weights([2, 3], messages, rp) == pytest.approx(
        [norms[2] / total, norms[3] / total], rel=1e-5
    )
    with pytest.raises(ConfigError, match="^strategy.aggregation_weights: norm"):
        _scenario(aggregation_weights="norm", aggregation="unbiased")


def test_self_pruning_rule_on_a_constructed_case(runtime):
    assert [kept_rank(r, 0.9) for r in (1, 2, 4, 10)] == [1, 1, 3, 9]
    assert kept_rank(8, 0.5) == 4
    alg = _algorithm(runtime, self_pruning=True, pruning_decay=0.5)
    layers = runtime.state.layers
    gen = torch.Generator().manual_seed(2)
    begin = _random_state(runtime, 4, gen)
    # the tail norm, by hand: sum over layers of ||B[:, 2:] A[2:]||_F
    want = sum(
        np.linalg.norm(_np(begin[x.b_param])[:, 2:] @ _np(begin[x.a_param])[2:]) for x in layers
    )
    assert float(tail_norm(begin, layers, 2)) == pytest.approx(want, rel=1e-5)
    grown = {k: v.clone() for k, v in begin.items()}
    shrunk = {k: v.clone() for k, v in begin.items()}
    for x in layers:
        grown[x.b_param][:, 2:] *= 2.0
        shrunk[x.b_param][:, 2:] *= 0.5
    plan = ClientPlan(5, 1, 4, 1.0)
    kept = alg.client_message(plan, Message(shared=begin), LocalResult(grown, 0.0), {})
    assert kept.diagnostics["rank"] == 4 and alg.pruned == {}
    assert kept.shared[layers[0].a_param].shape[0] == 4
    pruned = alg.client_message(plan, Message(shared=begin), LocalResult(shrunk, 0.0), {})
    assert pruned.diagnostics["rank"] == 2 and alg.pruned == {5: 2}
    assert pruned.shared[layers[0].a_param].shape[0] == 2  # the tail is not sent
    np.testing.assert_allclose(
        _np(pruned.shared[layers[0].b_param]),
        _np(shrunk[layers[0].b_param] - begin[layers[0].b_param])[:, :2],
    )
    # the pruned rank caps the client's later plans, and survives a checkpoint
    rp = RoundPlan(2, np.array([5]), 4, 0.5, 0.0, 1)
    ratio = client_ratios(alg.settings, alg.scenario)[5]
    assert alg.plan(rp)[0].rank == min(2, client_rank(ratio, 4, 4))
    again = _algorithm(runtime, self_pruning=True, pruning_decay=0.5)
    again.load_state_dict(alg.state_dict())
    assert again.pruned == {5: 2}


def _check_bits(clients, runtime, ratios):
    trained = clients[clients.status == "arrived"]
    assert len(trained) > 0
    for row in trained.itertuples():
        r = client_rank(ratios[row.client], 4, 4)
        assert row.rank == r
        assert row.bits_down == 32 * (PER_RANK * r + HEAD)
    return trained


def test_hetlora_runs_three_rounds_with_per_client_ranks(tmp_path):
    run = Run(_scenario(), tmp_path / "run")
    result = run.execute()
    ratios = client_ratios(run.learner.algorithm.settings, run.scenario)
    trained = _check_bits(result.clients, run.learner.runtime, ratios)
    assert (trained.bits == 32 * (PER_RANK * trained["rank"] + HEAD)).all()
    assert set(trained["rank"]) == {1, 2, 4}
    np.testing.assert_allclose(
        result.rounds["algo.mean_rank"],
        [trained[trained["round"] == t]["rank"].mean() for t in range(3)],
    )
    assert result.rounds.loss.notna().all() and result.rounds.accuracy.notna().iloc[-1]


def test_self_pruning_run_uploads_the_kept_rank_and_keeps_it(tmp_path):
    run = Run(_scenario(self_pruning=True, pruning_strength=0.5), tmp_path / "run")
    runtime_trainer = run.learner.runtime.trainer
    result = run.execute()
    alg = run.learner.algorithm
    assert run.learner.runtime.trainer is runtime_trainer  # the penalty trainer is set aside
    ratios = client_ratios(alg.settings, run.scenario)
    clients = result.clients
    trained = clients[clients.status == "arrived"]
    assert alg.pruned, "no client pruned: raise pruning_strength in the test"
    assert result.rounds["algo.pruned_clients"].iloc[-1] == len(alg.pruned)
    for row in trained.itertuples():
        assigned = client_rank(ratios[row.client], 4, 4)
        assert row.rank <= assigned and row.bits_down == 32 * (PER_RANK * row.rank + HEAD)
        sent = {
            32 * (PER_RANK * row.rank + HEAD),
            32 * (PER_RANK * kept_rank(row.rank, 0.9) + HEAD),
        }
        assert row.bits in sent
    for c, kept in alg.pruned.items():  # after its prune, a client trains at the kept rank
        rows = trained[trained.client == c]
        pruned_at = rows[rows.bits < 32 * (PER_RANK * rows["rank"] + HEAD)]["round"].min()
        assert (rows[rows["round"] > pruned_at]["rank"] <= kept).all()


@pytest.mark.parametrize("trainer", ["sequential", "batched"])
def test_rslora_client_trains_its_own_rank_k_lora_at_alpha_over_sqrt_k(trainer):
    """HetLoRA's clients train their own rank-k LoRA ("own_rank", not FSLoRA's sketch): under
    rsLoRA the rank-2 client's one-step update, under both trainers, is that of the hand-written
    loss of W0 + (alpha / sqrt(k)) B_k A_k."""
    lr, k = 0.5, 2
    sc = digits_scenario(
        **{
            "algorithm.name": "hetlora",
            "strategy": {"ratio_choices": [0.5]},  # every client at rank 2 of 4
            "learner.optimizer": "sgd",
            "learner.local_steps": 1,
            "learner.lr": lr,
            "learner.use_rslora": True,
            "learner.trainer": trainer,
        }
    )
    rt = Runtime(sc)
    rt.start(rank=4, seed=sc.seed)
    assert (rt.batched is not None) == (trainer == "batched")
    alg = make_algorithm(sc)
    alg.bind(rt)
    assert alg.RANK_SCALING == "own_rank"
    gen = torch.Generator().manual_seed(2)
    state = {n: 0.1 * torch.randn(v.shape, generator=gen) for n, v in rt.initial_state().items()}
    (plan,) = alg.plan(RoundPlan(0, np.array([3]), 4, 1.0, 0.0, 1))
    assert plan.rank == k
    start = alg.broadcast(plan, state).shared
    (result,) = alg.train([plan], [start], PrivateState())
    data = rt.train_data.subset(rt.partition.indices[plan.client])
    order = torch_generator(rt.seed, "batches", plan.client, plan.round_index)
    (idx,) = batch_schedule(len(data), 1, rt.settings.batch_size, order)
    batch = data.batch(idx)
    # the hand-written loss, float64, at the closed-form scaling alpha / sqrt(k)
    leaves = {n: v.detach().double().clone().requires_grad_(True) for n, v in start.items()}
    h = batch["x"].double().flatten(1)
    assert [x.name.rsplit(".", 1)[1] for x in rt.state.layers] == ["fc1", "fc2"]
    for layer in rt.state.layers:
        base = rt.model.get_submodule(layer.name).base_layer
        b, a = leaves[layer.b_param], leaves[layer.a_param]  # (64, k), (k, 64)
        w = base.weight.detach().double() + ALPHA / np.sqrt(k) * b @ a
        h = torch.relu(h @ w.T + base.bias.detach().double())
    (head_w,) = [n for n in rt.state.full_names if n.endswith(".weight")]
    (head_b,) = [n for n in rt.state.full_names if n.endswith(".bias")]
    loss = torch.nn.functional.cross_entropy(h @ leaves[head_w].T + leaves[head_b], batch["y"])
    grads = dict(zip(leaves, torch.autograd.grad(loss, list(leaves.values())), strict=True))
    for name, g in grads.items():
        got = start[name].double() - result.local[name].double()
        err = float(torch.linalg.vector_norm(got - lr * g))
        size = float(torch.linalg.vector_norm(lr * g))
        assert size > 0.0 and err <= 1e-5 * size, (name, err, size)
