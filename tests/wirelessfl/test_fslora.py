"""FSLoRA (arXiv:2501.19389) against independent computations: the sketch's moments (Def. 3.1,
Lemma D.3), the sketched gradients (eq. 3) by autograd on the full factors, the server step
(eq. 5) by hand, the payload sizes by formula, and FedIT when no client is sketched."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scenario_helpers import digits_scenario, interrupt_at, small_scenario

from channels.compute import DeviceProfile
from channels.streams import stream_generator
from wirelessfl.algorithms.fslora.sketch import draw_index_sets, sketch_side_bits
from wirelessfl.errors import ConfigError
from wirelessfl.plans import RoundPlan

torch = pytest.importorskip("torch")

from wirelessfl.algorithms import Message, make_algorithm  # noqa: E402
from wirelessfl.algorithms.fslora.algorithm import SketchPlan  # noqa: E402
from wirelessfl.models.rng import torch_generator  # noqa: E402
from wirelessfl.sim import resume_run, run_scenario  # noqa: E402
from wirelessfl.sim.runner import Run  # noqa: E402
from wirelessfl.training.batch_schedule import batch_schedule  # noqa: E402
from wirelessfl.training.private_state import PrivateState  # noqa: E402
from wirelessfl.training.runtime import Runtime  # noqa: E402
from wirelessfl.training.stacked_ranks import rank_multiplier  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")

V = 32  # bits per value (payload.bits_per_value default)
SUM_DL = 2 * (64 + 64)  # tiny_mlp's adapted layers fc1 64 -> 64 and fc2 64 -> 64: sum (d + l)
HEAD = 64 * 10 + 10  # tiny_mlp's task head on digits (10 classes), trained and sent dense
TOL = {"rtol": 1e-4, "atol": 1e-6}  # float32 steps recovered as (start - local) / lr


def _scenario(strategy=None, **overrides):
    return digits_scenario(**{"algorithm.name": "fslora", "strategy": strategy or {}, **overrides})


def _bound(strategy=None, rank=4, **overrides):
    """An FSLoRA algorithm bound to a started runtime of model rank ``rank``."""
    sc = _scenario(strategy, **overrides)
    runtime = Runtime(sc)
    runtime.start(rank=rank, seed=sc.seed)
    algorithm = make_algorithm(sc)
    algorithm.bind(runtime)
    return algorithm, runtime


def _round(clients, rank, t=0):
    return RoundPlan(t, np.asarray(clients), rank, 1.0, math.nan, len(clients))


def _random_b(state, runtime, scale=0.1, seed=0):
    """``state`` with nonzero lora_B (peft initialises B = 0, which would zero A's gradient)."""
    g = torch.Generator().manual_seed(seed)
    out = dict(state)
    for layer in runtime.state.layers:
        b = state[layer.b_param]
        out[layer.b_param] = scale * torch.randn(b.shape, generator=g)
    return out


# ---- Def. 3.1 / Lemma D.3: the random-k sketch --------------------------------------------------
def test_sketch_is_unbiased_with_second_moment_r_over_k():
    r, k, n = 8, 3, 20_000
    s = np.zeros((n, r))
    for t in range(n):
        (indices,) = draw_index_sets(7, 2, t, rank=r, k=k, n_sets=1)
        assert len(set(indices)) == k and list(indices) == sorted(indices)
        s[t, list(indices)] = r / k  # diag of S (Def. 3.1)
    # E[S] = I: each s_j has mean 1 and variance r/k - 1; E[S^2] = (r/k) I: s_j^2 has mean r/k
    # and variance (r/k)^3 (1 - k/r). S is diagonal, so its off-diagonal moments vanish.
    se1 = math.sqrt((r / k - 1) / n)
    se2 = math.sqrt((r / k) ** 3 * (1 - k / r) / n)
    np.testing.assert_allclose(s.mean(axis=0), 1.0, atol=5 * se1)
    np.testing.assert_allclose((s**2).mean(axis=0), r / k, atol=5 * se2)


def test_index_sets_are_uniform_over_k_subsets_and_independent_per_layer():
    r, k, n = 5, 2, 10_000
    counts: dict[tuple[int, ...], int] = {}
    for t in range(n):
        (indices,) = draw_index_sets(3, 0, t, rank=r, k=k, n_sets=1)
        counts[indices] = counts.get(indices, 0) + 1
    assert len(counts) == math.comb(r, k)
    expected = n / math.comb(r, k)
    chi2 = sum((c - expected) ** 2 / expected for c in counts.values())
    assert chi2 < 27.9  # chi-square, 9 degrees of freedom, p = 0.001
    # per layer: independent sets; the full rank: every index, nothing to send
    sets = [draw_index_sets(3, 1, t, rank=16, k=4, n_sets=2) for t in range(20)]
    assert any(a != b for a, b in sets)
    assert draw_index_sets(3, 1, 0, rank=6, k=6, n_sets=1) == (tuple(range(6)),)
    # side bits: min(bitmask r, list k ceil(log2 r)), 0 at k = r
    assert [sketch_side_bits(k, 64) for k in (1, 8, 11, 64)] == [6, 48, 64, 0]


# ---- eq. (3): the slice training gives the sketched gradients -----------------------------------
def _sketched_gradients(runtime, state, plan, batch):
    """Autograd of loss(W0 + (alpha/r) B S A) w.r.t. the full B, A (and the head)."""
    r, k = plan.model_rank, plan.rank
    leaves = {n: v.clone().requires_grad_(True) for n, v in state.items()}
    params = dict(leaves)
    for layer, indices in zip(runtime.state.layers, plan.layer_sets(2), strict=True):
        s = torch.zeros(r)
        s[list(indices)] = r / k  # S = (r/k) sum_{j in I} e_j e_j^T (Def. 3.1)
        params[layer.a_param] = s[:, None] * leaves[layer.a_param]  # B (S A), peft orientation
    logits = torch.func.functional_call(runtime.model, params, (batch["x"],))
    loss = torch.nn.functional.cross_entropy(logits, batch["y"])
    grads = torch.autograd.grad(loss, list(leaves.values()))
    return dict(zip(leaves, grads, strict=True))


def _one_round_with_batches(algorithm, runtime, state):
    """Clients 2 and 5 train one round (rank 2 of 4) from ``state``; yields each plan, its
    result and the one batch it trained on."""
    plans = algorithm.plan(_round([2, 5], 4))
    starts = [algorithm.broadcast(p, state).shared for p in plans]
    results = algorithm.train(plans, starts, PrivateState())
    for plan, result in zip(plans, results, strict=True):
        assert plan.rank == 2 and plan.model_rank == 4
        data = runtime.train_data.subset(runtime.partition.indices[plan.client])
        gen = torch_generator(runtime.seed, "batches", plan.client, plan.round_index)
        (idx,) = batch_schedule(len(data), 1, runtime.settings.batch_size, gen)
        yield plan, result, data.batch(idx)


@pytest.mark.parametrize("index_sets", ["shared", "per_layer"])
def test_slice_training_takes_the_sketched_gradient_step(index_sets):
    lr = 0.5
    algorithm, runtime = _bound(
        {"sketch_ratio": 0.5, "index_sets": index_sets},
        **{"learner.optimizer": "sgd", "learner.local_steps": 1, "learner.lr": lr},
    )
    state = _random_b(runtime.initial_state(), runtime)
    for plan, result, batch in _one_round_with_batches(algorithm, runtime, state):
        want = _sketched_gradients(runtime, state, plan, batch)
        for layer, indices in zip(runtime.state.layers, plan.layer_sets(2), strict=True):
            cols = list(indices)
            outside = [j for j in range(4) if j not in cols]
            for name, got_slice, dim in (
                (layer.a_param, result.local[layer.a_param], 0),
                (layer.b_param, result.local[layer.b_param], 1),
            ):
                start = state[name].index_select(dim, torch.tensor(cols))
                step = (start - got_slice) / lr  # one plain SGD step: the gradient of the slice
                g = want[name]
                torch.testing.assert_close(step, g.index_select(dim, torch.tensor(cols)), **TOL)
                # eq. (3): the columns of B and rows of A outside I get no gradient
                assert float(g.index_select(dim, torch.tensor(outside)).abs().max()) == 0.0
                assert float(g.abs().max()) > 0.0
        for name in runtime.state.full_names:
            torch.testing.assert_close((state[name] - result.local[name]) / lr, want[name], **TOL)


def _hand_sketched_gradients_rslora(runtime, state, plan, batch, alpha):
    """Autograd, in float64, of tiny_mlp's loss written out by hand with every adapted layer's
    weight ``W0 + (alpha / sqrt(r)) B S A`` (eq. (2) under rsLoRA): no peft module and none of
    the runtime's scalings in the forward; the full B, A and the head are the leaves."""
    r, k = plan.model_rank, plan.rank
    leaves = {n: v.detach().double().clone().requires_grad_(True) for n, v in state.items()}
    h = batch["x"].double().flatten(1)
    layers = runtime.state.layers
    assert [layer.name.rsplit(".", 1)[1] for layer in layers] == ["fc1", "fc2"]
    for layer, indices in zip(layers, plan.layer_sets(2), strict=True):
        base = runtime.model.get_submodule(layer.name).base_layer
        s = torch.zeros(r, dtype=torch.float64)
        s[list(indices)] = r / k  # S = (r/k) sum_{j in I} e_j e_j^T (Def. 3.1)
        b, a = leaves[layer.b_param], leaves[layer.a_param]
        w = base.weight.detach().double() + alpha / math.sqrt(r) * b @ (s[:, None] * a)
        h = torch.relu(h @ w.T + base.bias.detach().double())
    (head_w,) = [n for n in runtime.state.full_names if n.endswith(".weight")]
    (head_b,) = [n for n in runtime.state.full_names if n.endswith(".bias")]
    logits = h @ leaves[head_w].T + leaves[head_b]
    loss = torch.nn.functional.cross_entropy(logits, batch["y"])
    grads = torch.autograd.grad(loss, list(leaves.values()))
    return dict(zip(leaves, grads, strict=True))


@pytest.mark.parametrize("trainer", ["sequential", "batched"])
def test_rslora_slice_training_takes_the_step_of_eq2_scaled_alpha_over_sqrt_r(trainer):
    """With rsLoRA the model's scaling at rank r is alpha/sqrt(r), so eq. (2) scales the rank-k
    slice (alpha/sqrt(r))(r/k), not a rank-k rsLoRA's alpha/sqrt(k): one client's one-step
    update, under both trainers, against the hand-written sketched loss."""
    lr, alpha = 0.5, 16.0
    algorithm, runtime = _bound(
        {"sketch_ratio": 0.5},
        **{
            "learner.optimizer": "sgd",
            "learner.local_steps": 1,
            "learner.lr": lr,
            "learner.use_rslora": True,
            "learner.lora_alpha": alpha,
            "learner.trainer": trainer,
        },
    )
    assert (runtime.batched is not None) == (trainer == "batched")
    state = _random_b(runtime.initial_state(), runtime)
    for plan, result, batch in _one_round_with_batches(algorithm, runtime, state):
        want = _hand_sketched_gradients_rslora(runtime, state, plan, batch, alpha)
        got, expected = {}, {}
        for layer, indices in zip(runtime.state.layers, plan.layer_sets(2), strict=True):
            cols = torch.tensor(list(indices))
            for name, dim in ((layer.a_param, 0), (layer.b_param, 1)):
                got[name] = state[name].index_select(dim, cols).double() - result.local[name]
                expected[name] = lr * want[name].index_select(dim, cols)
        for name in runtime.state.full_names:
            got[name] = state[name].double() - result.local[name].double()
            expected[name] = lr * want[name]
        for name in got:  # the update of each tensor, to 1e-5 of its norm
            err = float(torch.linalg.vector_norm(got[name] - expected[name]))
            size = float(torch.linalg.vector_norm(expected[name]))
            assert size > 0.0 and err <= 1e-5 * size, (name, err, size)


def test_rank_multiplier_closed_forms():
    """Relative to the model's scaling at r: own rank r/k (sqrt(r/k) rsLoRA), sketch r/k."""
    r, k = 8, 2
    assert rank_multiplier(r, k, rslora=False) == r / k
    assert rank_multiplier(r, k, rslora=True) == pytest.approx(math.sqrt(r / k))
    for rslora in (False, True):
        assert rank_multiplier(r, k, rslora=rslora, rank_scaling="sketch") == r / k
    assert rank_multiplier(r, r, rslora=True, rank_scaling="sketch") == 1.0
    with pytest.raises(ValueError, match="rank_scaling must be one of"):
        rank_multiplier(r, k, rslora=True, rank_scaling="sketched")  # type: ignore[arg-type]


def test_a_round_moves_only_the_sketched_columns_and_rows():
    algorithm, runtime = _bound(
        {"sketch_ratio": 0.5, "index_sets": "per_layer", "download": "sketch"},
        **{"learner.optimizer": "adam"},  # Adam moves every entry that has a gradient
    )
    state = _random_b(runtime.initial_state(), runtime)
    (plan,) = algorithm.plan(_round([3], 4))
    download = algorithm.broadcast(plan, state)
    (result,) = algorithm.train([plan], [download.shared], PrivateState())
    message = algorithm.client_message(plan, download, result, {})
    before = {n: v.clone() for n, v in state.items()}
    after = algorithm.aggregate(state, {3: message}, {3: plan}, _round([3], 4))
    for layer, indices in zip(runtime.state.layers, plan.layer_sets(2), strict=True):
        moved_a = (after[layer.a_param] != before[layer.a_param]).any(dim=1)
        moved_b = (after[layer.b_param] != before[layer.b_param]).any(dim=0)
        expected = torch.zeros(4, dtype=torch.bool)
        expected[list(indices)] = True
        assert torch.equal(moved_a, expected) and torch.equal(moved_b, expected)


# ---- eq. (5): the server step by hand ------------------------------------------------------------
@pytest.mark.parametrize("aggregation", ["weighted_mean", "unbiased"])
def test_aggregate_is_eq5_by_hand(aggregation):
    algorithm, runtime = _bound({"aggregation": aggregation, "index_sets": "per_layer"})
    layers = runtime.state.layers
    global_state = _random_b(runtime.initial_state(), runtime)
    g = torch.Generator().manual_seed(1)
    sets = {1: ((0, 2), (1, 3)), 6: ((2, 3), (0, 2))}  # per client, per layer: I (k = 2)
    plans, messages = {}, {}
    for c, client_sets in sets.items():
        plans[c] = SketchPlan(c, 0, 2, 1.0, model_rank=4, index_sets=client_sets)
        delta = {}
        for layer in layers:
            a, b = global_state[layer.a_param], global_state[layer.b_param]
            delta[layer.a_param] = torch.randn((2, a.shape[1]), generator=g)
            delta[layer.b_param] = torch.randn((b.shape[0], 2), generator=g)
        for name in runtime.state.full_names:
            delta[name] = torch.randn(global_state[name].shape, generator=g)
        messages[c] = Message(shared=delta, lora=algorithm.lora_tensors(plans[c]))
    p = {c: float(runtime.data_fractions[c]) for c in sets}
    n_clients, n_scheduled = 8, 3  # one scheduled client did not arrive
    if aggregation == "weighted_mean":
        w = {c: p[c] / sum(p.values()) for c in sets}
    else:
        w = {c: n_clients / n_scheduled * p[c] for c in sets}
    expected = {n: v.clone() for n, v in global_state.items()}
    for c, client_sets in sets.items():
        for i, layer in enumerate(layers):
            for pos, j in enumerate(client_sets[i]):  # column j of B, row j of A
                expected[layer.a_param][j] += w[c] * messages[c].shared[layer.a_param][pos]
                expected[layer.b_param][:, j] += w[c] * messages[c].shared[layer.b_param][:, pos]
        for name in runtime.state.full_names:
            expected[name] += w[c] * messages[c].shared[name]
    round_plan = RoundPlan(0, np.array([1, 6]), 2, 1.0, math.nan, n_scheduled)
    got = algorithm.aggregate(global_state, messages, plans, round_plan)
    for name, value in expected.items():
        torch.testing.assert_close(got[name], value, rtol=1e-6, atol=1e-7)


# ---- whole runs --------------------------------------------------------------------------------
def _algo_free(frame):
    """The columns that do not depend on the algorithm (its penalty, ``bound``, does)."""
    return frame.drop(
        columns=[c for c in frame.columns if c.startswith("algo.") or c in ("wall_s", "bound")]
    )


def test_fslora_without_sketching_is_fedit_bit_for_bit(tmp_path):
    fs = run_scenario(_scenario({"sketch_ratio": 1.0}, rounds=3), tmp_path / "fs")
    fi = run_scenario(digits_scenario(rounds=3, **{"algorithm.name": "fedit"}), tmp_path / "fi")
    pd.testing.assert_frame_equal(_algo_free(fs.rounds), _algo_free(fi.rounds))
    pd.testing.assert_frame_equal(fs.clients, fi.clients)
    assert (fs.rounds["algo.sketch_penalty"] == 1.0).all()
    assert (fs.rounds["bound"] == 1.0).all()  # Theorem 4.4's mean r^2 / k_i^2
    assert fs.rounds["accuracy"].notna().any()


@pytest.mark.parametrize("download", ["full", "sketch"])
def test_bits_up_and_down_per_client(download, tmp_path):
    strategy = {"ratio_choices": [0.25, 0.5, 1.0], "download": download}
    controller = {"name": "fixed", "rank": 8, "sparsification": 1.0, "r_max": 16}
    result = run_scenario(_scenario(strategy, rounds=3, controller=controller), tmp_path / "run")
    trained = result.clients[result.clients.status == "arrived"]
    k = trained["rank"]
    assert set(k) <= {2, 4, 8} and len(set(k)) > 1
    # up: v (k_i sum(d + l) + head); no index: the server drew I
    assert (trained.bits == V * (k * SUM_DL + HEAD)).all()
    # down: r (full) or k_i (sketch) per unit of sum(d + l), the head, one index set
    side = {2: min(8, 2 * 3), 4: min(8, 4 * 3), 8: 0}
    down_rank = 8 if download == "full" else k
    assert (trained.bits_down == V * (down_rank * SUM_DL + HEAD) + k.map(side)).all()
    # ratios are drawn once per client (uniformly from the list, ``ratios`` stream) and kept
    assert (trained.groupby("client")["rank"].nunique() == 1).all()
    choices = np.array([0.25, 0.5, 1.0])
    for c, ranks in trained.groupby("client")["rank"]:
        pick = stream_generator(1, "ratios", int(c)).integers(3)
        assert set(ranks) == {round(choices[pick] * 8)}
    # Theorem 4.4's factors over the arrived clients
    for t, group in trained.groupby("round"):
        row = result.rounds.loc[result.rounds["round"] == t].iloc[0]
        assert row["algo.mean_k"] == pytest.approx(group["rank"].mean())
        assert row["algo.sketch_penalty"] == pytest.approx(np.mean((8 / group["rank"]) ** 2))
        assert row["algo.mean_r_over_k"] == pytest.approx(np.mean(8 / group["rank"]))


def test_per_layer_index_sets_send_one_set_per_layer(tmp_path):
    strategy = {"sketch_ratio": 0.5, "index_sets": "per_layer"}
    result = run_scenario(_scenario(strategy, rounds=2), tmp_path / "run")
    trained = result.clients[result.clients.status == "arrived"]
    assert (trained["rank"] == 2).all()
    side = 2 * min(4, 2 * 2)  # two layers, each k = 2 of r = 4
    assert (trained.bits_down == V * (4 * SUM_DL + HEAD) + side).all()


def test_topk_on_the_uploaded_slices(tmp_path):
    topk = {"sparsifier": "topk", "ratio": 0.25, "error_feedback": False}  # App. C.2's, at 0.25
    sc = _scenario({"sketch_ratio": 0.5}, rounds=2, compression=topk)
    result = run_scenario(sc, tmp_path / "run")
    trained = result.clients[result.clients.status == "arrived"]
    kept = 2 * round(0.25 * 2 * 128)  # per layer round(topk k (d + l)), k = 2
    assert (trained.bits == V * (kept + HEAD)).all()
    assert (trained["ratio"] == 0.25).all()
    assert (result.rounds["algo.sent_fraction"] == 0.25).all()


def test_interrupted_and_resumed_run_repeats_the_uninterrupted_one(tmp_path):
    sc = _scenario({"ratio_choices": [0.5, 1.0]}, rounds=4)
    full = run_scenario(sc, tmp_path / "full")
    interrupt_at(Run(sc, tmp_path / "cut"), 3)
    resumed = resume_run(tmp_path / "cut")
    pd.testing.assert_frame_equal(
        full.rounds.drop(columns="wall_s"), resumed.rounds.drop(columns="wall_s")
    )
    pd.testing.assert_frame_equal(full.clients, resumed.clients)


# ---- network-only runs and settings --------------------------------------------------------------
SHAPES_DL = (64 + 64) + (64 + 32)  # small_scenario's layer shapes [[64, 64], [64, 32]]
FIXED8 = {"name": "fixed", "rank": 8, "sparsification": 1.0, "r_max": 16}


@pytest.mark.parametrize("download", ["full", "sketch"])
def test_network_only_sizes(download, tmp_path):
    sc = small_scenario(
        rounds=3,
        controller=FIXED8,
        **{"algorithm.name": "fslora", "strategy": {"sketch_ratio": 0.5, "download": download}},
    )
    clients = run_scenario(sc, tmp_path / "run").clients
    trained = clients[clients.status == "arrived"]
    assert (trained["rank"] == 4).all()
    assert (trained.bits == V * 4 * SHAPES_DL).all()
    down_rank = 8 if download == "full" else 4
    assert (trained.bits_down == V * down_rank * SHAPES_DL + min(8, 4 * 3)).all()


def test_network_only_sizes_with_the_sketch_controller(tmp_path):
    """The controller gives k_i <= r itself; the full download is still the rank-r LoRA."""
    controller = {"name": "sketch", "rank": 8, "k_min": 1, "d_th_s": 0.02, "V": 1e-4}
    sc = small_scenario(rounds=20, controller=controller, **{"algorithm.name": "fslora"})
    clients = run_scenario(sc, tmp_path / "run").clients
    trained = clients[clients.status == "arrived"]
    k = trained["rank"]
    assert len(set(k)) > 1 and k.max() <= 8
    assert (trained.bits == V * k * SHAPES_DL).all()
    side = k.map(lambda x: min(8, x * 3) if x < 8 else 0)  # ceil(log2 8) = 3 bits per index
    assert (trained.bits_down == V * 8 * SHAPES_DL + side).all()


def test_ratio_by_device_class(tmp_path):
    classes = {"low_end_phone": 0.5, "laptop_cpu": 0.5}
    sc = small_scenario(
        rounds=10,
        controller=FIXED8,
        devices={"kind": "classes", "classes": classes, "include_compute": False},
        **{
            "algorithm.name": "fslora",
            "strategy": {"ratio_by_class": {"low_end_phone": 0.25, "laptop_cpu": 0.75}},
        },
    )
    clients = run_scenario(sc, tmp_path / "run").clients
    trained = clients[clients.status == "arrived"]
    drawn = DeviceProfile(kind="classes", classes=classes).draw_classes(sc.seed, sc.n_clients)
    want = {"low_end_phone": 2, "laptop_cpu": 6}  # round(0.25 * 8), round(0.75 * 8)
    assert len(set(trained["rank"])) == 2
    for c, rank in zip(trained.client, trained["rank"], strict=True):
        assert rank == want[drawn[int(c)]]


@pytest.mark.parametrize(
    ("strategy", "message"),
    [
        ({"sketch_ratio": 0}, r"^strategy\.sketch_ratio: must be > 0"),
        ({"ratio_choices": [2]}, r"^strategy\.ratio_choices\[0\]: expected a ratio in \(0, 1\]"),
        ({"download": "half"}, r"^strategy\.download: must be one of 'full', 'sketch'"),
        ({"index_sets": "layer"}, r"^strategy\.index_sets: must be one of"),
        ({"topk_ratio": 0.5}, r"^strategy\.topk_ratio: moved to compression\.ratio"),
    ],
)
def test_bad_settings_are_one_line_errors_naming_the_key(strategy, message):
    with pytest.raises(ConfigError, match=message) as err:
        _scenario(strategy)
    assert "\n" not in str(err.value)


def test_ratio_by_class_needs_device_classes_and_kept_adam_moments_are_refused(tmp_path):
    with pytest.raises(ConfigError, match=r"^strategy\.ratio_by_class needs devices\.kind"):
        Run(_scenario({"ratio_by_class": {"laptop_cpu": 0.5}}), tmp_path / "a")
    overrides = {"learner.optimizer": "adam", "learner.keep_optimizer_state": True}
    with pytest.raises(ConfigError, match=r"^learner\.keep_optimizer_state: fslora redraws"):
        Run(_scenario(**overrides), tmp_path / "b")
