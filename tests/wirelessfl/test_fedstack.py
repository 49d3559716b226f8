"""FedStack (FLoRA): stacking into a merged update, training and evaluation on W0 + Delta,
the download of the unmerged stacks (capped at the dense size), resume.

tiny_mlp on digits: two adapted 64 x 64 layers (a stack of rank R is 128 R values per layer,
the dense sum 4096), a 650-value head, model rank 4, alpha 16.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scenario_helpers import digits_scenario, interrupt_at

from wirelessfl.algorithms import make_algorithm
from wirelessfl.algorithms.client_ranks import client_rank, client_ratios
from wirelessfl.plans import ClientPlan, RoundPlan

torch = pytest.importorskip("torch")

from wirelessfl.algorithms.hetero_rank.cost import stack_download  # noqa: E402
from wirelessfl.algorithms.hetero_rank.fresh_lora import fresh_factors  # noqa: E402
from wirelessfl.algorithms.hetero_rank.merged_base import base_weight, delta_name  # noqa: E402
from wirelessfl.algorithms.message import Message  # noqa: E402
from wirelessfl.models import build_model  # noqa: E402
from wirelessfl.sim import resume_run  # noqa: E402
from wirelessfl.sim.runner import Run  # noqa: E402
from wirelessfl.training.private_state import PrivateState  # noqa: E402
from wirelessfl.training.runtime import Runtime  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")

RATIOS = [0.25, 0.5, 1.0]
ALPHA, R = 16.0, 4
HEAD = 64 * 10 + 10
PREFIX = "base_model.model."


def _scenario(rounds=3, **strategy):
    return digits_scenario(
        rounds=rounds,
        **{"algorithm.name": "fedstack", "strategy": {"ratio_choices": RATIOS, **strategy}},
    )


def _runtime():
    sc = _scenario()
    rt = Runtime(sc)
    rt.start(rank=R, seed=sc.seed)
    return rt


@pytest.fixture(scope="module")
def runtime():
    return _runtime()


def _algorithm(runtime):
    alg = make_algorithm(_scenario())
    alg.bind(runtime)
    return alg


def _np(t):
    return t.detach().cpu().double().numpy()


def _with_delta(alg, runtime, seed=0):
    """The initial global state with a random merged update and head."""
    gen = torch.Generator().manual_seed(seed)
    glob = alg.initial_state()
    for name in [delta_name(x) for x in runtime.state.layers] + runtime.state.full_names:
        glob[name] = glob[name] + 0.02 * torch.randn(glob[name].shape, generator=gen)
    return glob


def test_stacking_adds_the_weighted_effective_products(runtime):
    alg = _algorithm(runtime)
    layers, head = runtime.state.layers, runtime.state.full_names
    glob = _with_delta(alg, runtime)
    before = {k: _np(v) for k, v in glob.items()}
    gen = torch.Generator().manual_seed(1)
    ranks = {1: 1, 2: 4, 6: 2}
    messages = {}
    for c, r in ranks.items():
        shared = {}
        for x in layers:
            shared[x.a_param] = torch.randn((r, 64), generator=gen)
            shared[x.b_param] = torch.randn((64, r), generator=gen)
        for n in head:
            shared[n] = torch.randn(glob[n].shape, generator=gen)
        messages[c] = Message(shared=shared)
    plans = {c: ClientPlan(c, 3, r, 1.0) for c, r in ranks.items()}
    rp = RoundPlan(3, np.array(sorted(ranks)), R, 1.0, 0.0, 3)
    p = np.array([runtime.data_fractions[c] for c in ranks])
    w = p / p.sum()
    glob = alg.aggregate(glob, messages, plans, rp)
    alg.cost.aggregated(3, plans)  # what the learner tells the cost model after aggregating
    for x in layers:
        want = before[delta_name(x)] + sum(
            wc
            * (ALPHA / r)
            * _np(messages[c].shared[x.b_param])
            @ _np(messages[c].shared[x.a_param])
            for wc, (c, r) in zip(w, ranks.items(), strict=True)
        )
        np.testing.assert_allclose(_np(glob[delta_name(x)]), want, rtol=1e-5, atol=1e-5)
        assert not glob[x.a_param].any() and not glob[x.b_param].any()  # the factors stay zero
    for n in head:
        want = before[n] + sum(
            wc * _np(messages[c].shared[n]) for wc, c in zip(w, ranks, strict=True)
        )
        np.testing.assert_allclose(_np(glob[n]), want, rtol=1e-5, atol=1e-6)
    assert alg.stacks.stack_ranks == {3: 7}
    assert alg.metrics(glob, messages, rp)["stack_rank"] == 7


def test_training_and_evaluation_run_on_the_merged_base_and_restore_it(runtime):
    alg = _algorithm(runtime)
    layers = runtime.state.layers
    glob = _with_delta(alg, runtime, seed=2)
    w0 = {x.name: base_weight(runtime.model, x).detach().clone() for x in layers}
    plans = [ClientPlan(3, 1, 2, 1.0), ClientPlan(5, 1, 4, 1.0)]
    starts = [alg.broadcast(p, glob).shared for p in plans]
    results = alg.train(plans, starts, PrivateState())
    scores = alg.evaluate(glob)
    for x in layers:  # W0 exactly, bit for bit
        assert torch.equal(base_weight(runtime.model, x), w0[x.name])
    # the fresh adapters: B = 0 and A Kaiming-uniform (bound 1/sqrt(64)) at r_i before training
    assert results[0].local[layers[0].a_param].shape == (2, 64)
    # independent path 1: a second runtime whose base weights hold W0 + Delta for good
    other = _runtime()
    with torch.no_grad():
        for x in layers:
            base_weight(other.model, x).add_(glob[delta_name(x)])
    fresh = [
        {
            **s,
            **fresh_factors(
                other.state.params, layers, p.rank, other.generator("fedstack_init", p.client, 1)
            ),
        }
        for p, s in zip(plans, starts, strict=True)
    ]
    for f in fresh:
        a = f[layers[0].a_param]
        assert a.abs().max() <= 0.125 and not f[layers[0].b_param].any()
    want = other.train(plans, fresh, PrivateState())
    for got, ref in zip(results, want, strict=True):
        for name, value in ref.local.items():
            torch.testing.assert_close(got.local[name], value, rtol=1e-5, atol=1e-6)
    # independent path 2: the plain model (no peft) with W0 + Delta and the global head
    sc = _scenario()
    bundle = build_model("tiny_mlp", n_classes=runtime.data.n_classes, seed=sc.seed)
    model = bundle.model.to(runtime.device).eval()
    with torch.no_grad():
        for x in layers:
            module = model.get_submodule(x.name.removeprefix(PREFIX))
            torch.testing.assert_close(module.weight, w0[x.name], rtol=0, atol=0)
            module.weight.add_(glob[delta_name(x)])
        for name in runtime.state.full_names:
            plain = name.removeprefix(PREFIX).replace(".modules_to_save.default", "")
            model.get_parameter(plain).copy_(glob[name])
        batch = runtime.test_data.batch(torch.arange(len(runtime.test_data)))
        loss, logits = bundle.loss_and_logits(model, batch)
    correct = int((logits.argmax(-1) == batch["y"]).sum())
    assert scores["accuracy"] == correct / len(runtime.test_data)
    assert scores["test_loss"] == pytest.approx(float(loss), rel=1e-5)
    unmerged = runtime.evaluate({n: glob[n] for n in runtime.state.params})
    assert unmerged["test_loss"] != pytest.approx(scores["test_loss"], rel=1e-4)  # Delta counts


def test_download_is_the_unmerged_stacks_capped_at_the_dense_sum(runtime):
    assert stack_download(0, 64, 64) == (0, 0.0)
    assert stack_download(5, 64, 64) == (5 * 128, 2.0 * 4096 * 5)
    assert stack_download(32, 64, 64) == (4096, 2.0 * 4096 * 32)  # equal: the stacks
    assert stack_download(33, 64, 64) == (4096, 4096.0)  # the dense sum is smaller
    alg = _algorithm(runtime)
    glob = alg.initial_state()
    alg.stacks.stack_ranks = {0: 10, 1: 12, 3: 15}
    alg.stacks.synced = {4: 1}

    def bits(client, t):
        plan = ClientPlan(client, t, 2, 1.0)
        message = alg.broadcast(plan, glob)
        assert alg.cost.download(plan).bits(bits_per_value=32, count_index=False) == (
            message.bits(bits_per_value=32, count_index=False)  # the cost model's size
        )
        alg.cost.downloaded(plan)  # as the learner does after each broadcast
        return message.bits(bits_per_value=32, count_index=False)

    assert bits(4, 4) == 32 * (2 * 27 * 128 + HEAD)  # rounds 1..3 since its download at 1
    assert alg.stacks.synced[4] == 4 and bits(4, 4) == 32 * HEAD  # nothing new
    assert bits(6, 4) == 32 * (2 * 4096 + HEAD)  # never synced: 37 x 128 > 4096
    assert bits(7, 1) == 32 * (2 * 10 * 128 + HEAD)
    steps = runtime.flops_per_step_at(2) * runtime.steps_for(7)
    assert alg.client_flops(ClientPlan(7, 1, 2, 1.0)) == steps + 2 * 2.0 * 4096 * 10


def _expected_downloads(clients):
    """(bits_down, merge FLOPs) per (round, client) replayed from clients.csv: the stacks since
    the client's last download, each of rank sum(arrived r_j of its round), capped per layer."""
    stacked, synced, out = {}, {}, {}
    for t, rows in clients.groupby("round"):
        for row in rows[rows.bits_down > 0].itertuples():
            total = sum(stacked.get(u, 0) for u in range(synced.get(row.client, 0), t))
            values, flops = stack_download(total, 64, 64)
            out[(t, row.client)] = (32 * (2 * values + HEAD), 2 * flops)
            synced[row.client] = t
        stacked[t] = int(rows[rows.status == "arrived"]["rank"].sum())
    return out


def test_fedstack_runs_three_rounds_and_counts_the_stacks(tmp_path):
    run = Run(_scenario(), tmp_path / "run")
    result = run.execute()
    runtime = run.learner.runtime
    ratios = client_ratios(run.learner.algorithm.settings, run.scenario)
    clients = result.clients
    trained = clients[clients.bits_down > 0]
    expected = _expected_downloads(clients)
    for row in trained.itertuples():
        r = client_rank(ratios[row.client], R, R)
        bits_down, merge_flops = expected[(row.round, row.client)]
        assert row.rank == r and row.bits_down == bits_down
        if row.status == "arrived":
            assert row.bits == 32 * (2 * 128 * r + HEAD)
        steps = runtime.flops_per_step_at(r) * runtime.steps_for(row.client)
        flops = row.compute_s * run.sim.flops_per_s[row.client]
        assert flops == pytest.approx(steps + merge_flops, rel=1e-9)
    assert len({bits for bits, _ in expected.values()}) > 2  # the download grows with the stacks
    rounds = result.rounds
    arrived = clients[clients.status == "arrived"]
    np.testing.assert_array_equal(
        rounds["algo.stack_rank"], [arrived[arrived["round"] == t]["rank"].sum() for t in range(3)]
    )
    assert (rounds["algo.merged_norm"] > 0).all()
    assert rounds.loss.notna().all() and rounds.accuracy.notna().iloc[-1]


def test_fedstack_resume_repeats_the_uninterrupted_run(tmp_path):
    full = Run(_scenario(rounds=4), tmp_path / "full").execute()
    interrupt_at(Run(_scenario(rounds=4), tmp_path / "cut"), 3)
    resumed = resume_run(tmp_path / "cut")
    for a, b in ((full.rounds, resumed.rounds), (full.clients, resumed.clients)):
        wall = [c for c in a.columns if c.startswith("wall")]
        pd.testing.assert_frame_equal(a.drop(columns=wall), b.drop(columns=wall))
