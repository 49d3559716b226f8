"""FlexLoRA: the global state is the rank-r truncated SVD (numpy's) of the weighted mean of the
clients' effective products, and each client starts from its rank-r_i truncation.

tiny_mlp on digits: two adapted 64 x 64 layers, a 650-value head, model rank 4, alpha 16.
"""

from __future__ import annotations

import numpy as np
import pytest
from scenario_helpers import digits_scenario

from wirelessfl.algorithms import make_algorithm
from wirelessfl.algorithms.client_ranks import client_rank, client_ratios
from wirelessfl.plans import ClientPlan, RoundPlan

torch = pytest.importorskip("torch")

from wirelessfl.sim.runner import Run  # noqa: E402
from wirelessfl.training.local import LocalResult  # noqa: E402
from wirelessfl.training.rank_padding import truncate_rank  # noqa: E402
from wirelessfl.training.runtime import Runtime  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")

RATIOS = [0.25, 0.5, 1.0]
ALPHA, R = 16.0, 4
HEAD = 64 * 10 + 10
PER_RANK = 2 * (64 + 64)


def _scenario(**strategy):
    return digits_scenario(
        rounds=3,
        **{"algorithm.name": "flexlora", "strategy": {"ratio_choices": RATIOS, **strategy}},
    )


@pytest.fixture(scope="module")
def runtime():
    sc = _scenario()
    rt = Runtime(sc)
    rt.start(rank=R, seed=sc.seed)
    return rt


def _np(t):
    return t.detach().cpu().double().numpy()


def _truncation(w, k):
    u, s, vt = np.linalg.svd(w, full_matrices=False)
    return (u[:, :k] * s[:k]) @ vt[:k], s


def test_aggregate_is_the_truncated_svd_of_the_mean_effective_product(runtime):
    alg = make_algorithm(_scenario())
    alg.bind(runtime)
    layers = runtime.state.layers
    gen = torch.Generator().manual_seed(0)
    glob = alg.initial_state()
    head_before = {n: _np(glob[n]) for n in runtime.state.full_names}
    ranks = {0: 1, 3: 2, 5: 4, 7: 4}
    messages, plans = {}, {}
    for c, r in ranks.items():
        start = alg.broadcast(ClientPlan(c, 0, r, 1.0), glob)
        local = {k: v + 0.1 * torch.randn(v.shape, generator=gen) for k, v in start.shared.items()}
        plans[c] = ClientPlan(c, 0, r, 1.0)
        messages[c] = alg.client_message(plans[c], start, LocalResult(local, 0.0), {})
        assert messages[c].shared[layers[0].a_param].shape == (r, 64)  # factors at r_i
    p = np.array([runtime.data_fractions[c] for c in ranks])
    w = p / p.sum()
    means = {
        x.name: sum(
            wc
            * (ALPHA / r)
            * _np(messages[c].shared[x.b_param])
            @ _np(messages[c].shared[x.a_param])
            for wc, (c, r) in zip(w, ranks.items(), strict=True)
        )
        for x in layers
    }
    heads = {
        n: head_before[n]
        + sum(wc * _np(messages[c].shared[n]) for wc, c in zip(w, ranks, strict=True))
        for n in head_before
    }
    rp = RoundPlan(0, np.array(sorted(ranks)), R, 1.0, 0.0, len(ranks))
    glob = alg.aggregate(glob, messages, plans, rp)
    residual = total = 0.0
    for x in layers:
        want, s = _truncation(means[x.name], R)
        got = (ALPHA / R) * _np(glob[x.b_param]) @ _np(glob[x.a_param])
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(  # Sigma in B: B's columns have norms s / s(r), A orthonormal
            np.linalg.norm(_np(glob[x.b_param]), axis=0), s[:R] * R / ALPHA, rtol=1e-4
        )
        np.testing.assert_allclose(
            _np(glob[x.a_param]) @ _np(glob[x.a_param]).T, np.eye(R), atol=1e-5
        )
        residual += np.sum(s[R:] ** 2)
        total += np.sum(s**2)
    for n, want in heads.items():
        np.testing.assert_allclose(_np(glob[n]), want, rtol=1e-5, atol=1e-7)
    metrics = alg.metrics(glob, messages, rp)
    assert metrics["truncation_error"] == pytest.approx(np.sqrt(residual / total), rel=1e-3)
    svd = 14 * 64 * 64**2 + 8 * 64**3
    flops = len(layers) * (sum(2 * 64 * 64 * r for r in ranks.values()) + svd)
    assert metrics["server_flops"] == flops
    # each client's start is the rank-r_i truncation of the mean product
    for r in (1, 2, 4):
        start = alg.broadcast(ClientPlan(9, 1, r, 1.0), glob).shared
        assert start[layers[0].b_param].shape == (64, r)
        for x in layers:
            got = (ALPHA / r) * _np(start[x.b_param]) @ _np(start[x.a_param])
            np.testing.assert_allclose(got, _truncation(means[x.name], r)[0], rtol=1e-4, atol=1e-6)
        for n in heads:
            assert torch.equal(start[n], glob[n])
    assert np.isnan(alg.metrics(glob, {}, rp)["server_flops"])


def test_round_zero_sends_the_initial_factors_cut_as_they_are(runtime):
    alg = make_algorithm(_scenario())
    alg.bind(runtime)
    glob = alg.initial_state()
    start = alg.broadcast(ClientPlan(2, 0, 2, 1.0), glob).shared
    want = truncate_rank(glob, runtime.state.layers, 2)
    assert set(start) == set(want)
    for name, value in want.items():
        assert torch.equal(start[name], value)  # B = 0: the rescaling changes nothing


def test_flexlora_runs_three_rounds_with_per_client_ranks(tmp_path):
    run = Run(_scenario(), tmp_path / "run")
    result = run.execute()
    ratios = client_ratios(run.learner.algorithm.settings, run.scenario)
    trained = result.clients[result.clients.status == "arrived"]
    for row in trained.itertuples():
        r = client_rank(ratios[row.client], R, R)
        assert row.rank == r
        assert row.bits == row.bits_down == 32 * (PER_RANK * r + HEAD)
    assert set(trained["rank"]) == {1, 2, 4}
    rounds = result.rounds
    assert (rounds["algo.truncation_error"] >= 0).all() and rounds["algo.server_flops"].gt(0).all()
    assert rounds.loss.notna().all() and rounds.accuracy.notna().iloc[-1]
    # the global factors are the rank-r truncation: A has orthonormal rows
    glob = run.learner.global_state
    for x in run.learner.runtime.state.layers:
        a = _np(glob[x.a_param])
        np.testing.assert_allclose(a @ a.T, np.eye(R), atol=1e-5)
