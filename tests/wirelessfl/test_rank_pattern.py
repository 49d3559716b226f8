"""peft's ``rank_pattern`` from a scenario (``learner.rank_pattern``; network-only:
``learner.shape.layer_ranks``): a matched layer trains and is sent at its own rank r_l, the
others at the controller's, and every size is Σ_l r_l (d_l + l_l). Checked against peft's own
key matching, hand counts of the values and bits, a model wrapped at the client's rank, and the
closed forms of the offline and online planners; the one-line refusals."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scenario_helpers import digits_scenario, small_scenario

from optim import convergence_bound
from wirelessfl.config import load_scenario
from wirelessfl.errors import ConfigError
from wirelessfl.learners import make_learner
from wirelessfl.models.layers import pattern_key, pattern_ranks
from wirelessfl.plans import ClientPlan
from wirelessfl.sim import run_scenario
from wirelessfl.sim.simulator import Simulator

torch = pytest.importorskip("torch")

from peft.utils.other import get_pattern_key  # noqa: E402

from wirelessfl.training.private_state import PrivateState  # noqa: E402
from wirelessfl.training.rank_padding import truncate_rank  # noqa: E402
from wirelessfl.training.runtime import Runtime  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")

V = 32  # bits per value
SIDE = 64 + 64  # tiny_mlp: fc1 and fc2 are 64 -> 64, d + l = 128
HEAD = 64 * 10 + 10  # the task head, sent dense
PATTERN = {"learner.rank_pattern": {"fc1": 8}}
FEDIT = {"algorithm.name": "fedit", "learner.trainer": "sequential", "rounds": 2}
SOFT = {"learner.trainer": "sequential", "rounds": 2}


def _runtime(rank: int, **overrides) -> Runtime:
    scenario = digits_scenario(**{**FEDIT, **PATTERN, **overrides})
    runtime = Runtime(scenario)
    runtime.start(rank=rank, seed=scenario.seed)
    return runtime


# ---- which modules a key fixes --------------------------------------------------------------
@pytest.mark.parametrize(
    ("keys", "name"),
    [
        (["fc1"], "fc1"),
        (["fc1"], "encoder.fc1"),
        (["c1"], "fc1"),  # a key is a whole name part, not a substring
        (["layer.3.q"], "model.layer.3.q"),
        ([r"layer\.\d\.q"], "model.layer.7.q"),
        (["fc2", "fc."], "fc1"),  # the first key that matches
        (["fc.", "fc1"], "fc1"),
        (["q"], "model.layer.3.v"),
    ],
)
def test_keys_match_modules_as_peft_matches_them(keys, name):
    theirs = get_pattern_key(keys, name)  # peft returns the name itself when no key matches
    assert pattern_key(keys, name) == (None if theirs == name and name not in keys else theirs)


def test_pattern_ranks_per_target_and_its_one_line_refusals():
    targets = ["blocks.0.fc1", "blocks.0.fc2", "blocks.1.fc1"]
    assert pattern_ranks(targets, {"0.fc1": 2, "fc1": 6}) == [2, None, 6]
    lines = {
        "matches none of the target modules; they are blocks.0.fc1, blocks.0.fc2, blocks.1.fc1": {
            "fc3": 2
        },
        "matches only target modules that an earlier key fixes (peft takes the first key that "
        "matches); remove it or put it first": {"fc1": 2, "1.fc1": 4},
        "fixes the rank of every target module, so the controller's rank would adapt none; "
        "leave at least one of blocks.0.fc1, blocks.0.fc2, blocks.1.fc1 out": {"fc.": 2},
    }
    for tail, pattern in lines.items():
        with pytest.raises(ConfigError) as err:
            pattern_ranks(targets, pattern)
        assert str(err.value).startswith("learner.rank_pattern: ")
        assert str(err.value).endswith(tail) and "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("value", "line"),
    [
        ({"fc1": 0}, "learner.rank_pattern.fc1: a rank is an integer in [1, 65,536], got 0"),
        ({"fc1": 2.5}, "learner.rank_pattern.fc1: a rank is an integer in [1, 65,536], got 2.5"),
        ({"fc1": True}, "learner.rank_pattern.fc1: a rank is an integer in [1, 65,536], got True"),
        ([8], "learner.rank_pattern: expected dict (or null), got [8]"),
        ({}, "learner.rank_pattern: expected at least one module key, got {}; use null for none"),
        ({"fc(": 2}, "learner.rank_pattern: 'fc(' is not a module name or regular expression"),
    ],
)
def test_bad_ranks_and_keys_are_one_line_at_load(value, line):
    with pytest.raises(ConfigError) as err:
        digits_scenario(**{"learner.rank_pattern": value})
    assert str(err.value).startswith(line) and "\n" not in str(err.value)


def test_a_rank_past_the_layer_and_a_key_of_no_target_are_refused_by_the_runtime():
    with pytest.raises(ConfigError) as err:
        Runtime(digits_scenario(**{"learner.rank_pattern": {"fc2": 65}}))
    assert str(err.value) == (
        "learner.rank_pattern: rank 65 for 'fc2' is out of range: accepted 1..64 "
        "(min(d_in, d_out) of that layer)"
    )
    with pytest.raises(ConfigError, match=r"^learner.rank_pattern: 'head' matches none"):
        Runtime(digits_scenario(**{"learner.rank_pattern": {"head": 2}}))


def test_network_only_runs_take_layer_ranks_instead():
    with pytest.raises(ConfigError) as err:
        small_scenario(**{"learner.rank_pattern": {"fc1": 2}})
    assert str(err.value).startswith(
        "learner.rank_pattern: names modules of the peft model that learner.kind: lora trains"
    )
    for ranks, tail in [
        ([4], "one entry per layer of learner.shape.layer_shapes (2), got 1"),
        ([4, 0], "[1]: a rank is an integer in [1, 65,536] or null, got 0"),
        (
            [4, 2],
            ": every layer has a fixed rank, so the controller's rank would adapt none; "
            "leave at least one entry null",
        ),
    ]:
        with pytest.raises(ConfigError) as err:
            small_scenario(**{"learner.shape.layer_ranks": ranks})
        assert str(err.value).startswith("learner.shape.layer_ranks") and str(err.value).endswith(
            tail
        )


# ---- what peft builds, trains and scales ----------------------------------------------------
def test_the_pattern_reaches_peft_and_the_other_layers_take_the_model_rank():
    runtime = _runtime(4)
    shapes = {
        layer.name.removeprefix("base_model.model."): (
            tuple(runtime.state.params[layer.a_param].shape),
            tuple(runtime.state.params[layer.b_param].shape),
            layer.fixed_rank,
        )
        for layer in runtime.state.layers
    }
    assert shapes == {"fc1": ((8, 64), (64, 8), 8), "fc2": ((4, 64), (64, 4), None)}
    assert runtime.model.peft_config["default"].rank_pattern == {"fc1": 8}
    assert runtime.geometry().layer_ranks == (8, None)


def test_a_lower_rank_client_keeps_the_fixed_layer_at_its_rank_and_scaling():
    wide, narrow = _runtime(4), _runtime(2)
    layers = wide.state.layers
    start = truncate_rank(wide.initial_state(), layers, 2)
    assert tuple(start[layers[0].a_param].shape) == (8, 64)  # fc1 is not cut
    assert tuple(start[layers[1].a_param].shape) == (2, 64)
    fc1 = wide.model.get_submodule(layers[0].name)
    fc2 = wide.model.get_submodule(layers[1].name)
    with wide.client_rank(2):  # alpha / r_l on fc1, alpha / r_k on fc2 (alpha = 16)
        assert (fc1.scaling["default"], fc2.scaling["default"]) == (16 / 8, 16 / 2)
    assert (fc1.scaling["default"], fc2.scaling["default"]) == (16 / 8, 16 / 4)
    # trains as the model wrapped at the client's rank with the same pattern would
    g = torch.Generator().manual_seed(3)
    start = {k: v + 0.01 * torch.randn(v.shape, generator=g) for k, v in start.items()}
    plan = [ClientPlan(3, 0, 2, 1.0)]
    got = wide.train(plan, [start], PrivateState(), zeta=0.01)[0]
    want = narrow.train(plan, [start], PrivateState(), zeta=0.01)[0]
    assert {k: v.shape for k, v in got.local.items()} == {k: v.shape for k, v in want.local.items()}
    for name, value in want.local.items():
        torch.testing.assert_close(got.local[name], value, rtol=1e-4, atol=1e-6)


def test_the_batched_trainer_gives_the_sequential_result_with_fixed_layers():
    seq, bat = _runtime(4), _runtime(4, **{"learner.trainer": "batched"})
    assert bat.trainer_name == "batched"
    g = seq.initial_state()
    starts = [truncate_rank(g, seq.state.layers, 1), g, truncate_rank(g, seq.state.layers, 3)]
    plans = [ClientPlan(c, 1, r, 1.0) for c, r in zip((0, 2, 5), (1, 4, 3), strict=True)]
    a = seq.train(plans, starts, PrivateState(), zeta=0.01)
    b = bat.train(plans, starts, PrivateState(), zeta=0.01)
    for x, y in zip(a, b, strict=True):
        assert x.local.keys() == y.local.keys()
        for name in x.local:
            torch.testing.assert_close(x.local[name], y.local[name], rtol=1e-4, atol=1e-6)


def test_flops_move_only_the_layers_at_the_controller_rank():
    runtime = _runtime(4)
    tokens = runtime.settings.batch_size  # one sample is one token for images
    # channels.lora_training_flops: 6 T per LoRA weight; only fc2's 128 per rank move
    assert runtime.flops_per_step_at(2) == pytest.approx(
        runtime.flops_per_step - 6 * tokens * 2 * SIDE, rel=1e-12
    )


# ---- what is sent, counted and planned ------------------------------------------------------
def test_fedit_sends_and_plans_each_layer_at_its_rank(tmp_path):
    run = run_scenario(digits_scenario(**FEDIT, **PATTERN), tmp_path / "run")
    values = 8 * SIDE + 4 * SIDE + HEAD  # Σ_l r_l (d_l + l_l) + the head, dense
    trained = run.clients[run.clients["status"] == "arrived"]
    assert len(trained) and (trained["bits"] == V * values).all()
    assert (trained["bits_down"] == V * values).all()
    runtime = Runtime(digits_scenario(**FEDIT, **PATTERN))
    cost = _cost_model(runtime)
    assert cost.upload_bits(ClientPlan(0, 0, 4, 1.0)) == V * values
    assert run.rounds["loss"].notna().all()


def test_ffa_lora_sends_each_layer_b_at_its_rank(tmp_path):
    ffa = {**FEDIT, "algorithm.name": "ffa_lora"}
    run = run_scenario(digits_scenario(**ffa, **PATTERN), tmp_path / "run")
    values = 8 * 64 + 4 * 64 + HEAD  # B (d_out = 64, r_l) of each layer, A frozen and unsent
    trained = run.clients[run.clients["status"] == "arrived"]
    assert len(trained) and (trained["bits"] == V * values).all()
    assert (trained["bits_down"] == V * values).all()
    cost = _cost_model(Runtime(digits_scenario(**ffa, **PATTERN)))
    assert cost.upload_bits(ClientPlan(0, 0, 4, 1.0)) == V * values


def test_soft_thins_each_layer_at_its_rank_as_planned(tmp_path):
    index = {"payload.index_overhead": True}
    run = run_scenario(digits_scenario(**SOFT, **PATTERN, **index), tmp_path / "run")
    # O = 0.5 (fixed controller): round(O r_l (d_l + l_l)) values per layer, the head dense, and
    # per layer the smaller of a bitmask and a coordinate list of the kept values
    kept = [round(0.5 * 8 * SIDE), round(0.5 * 4 * SIDE)]
    totals = [8 * SIDE, 4 * SIDE]
    index_bits = sum(min(n, k * math.ceil(math.log2(n))) for k, n in zip(kept, totals, strict=True))
    trained = run.clients[run.clients["status"] == "arrived"]
    assert len(trained) and (trained["bits"] == V * (sum(kept) + HEAD) + index_bits).all()
    runtime = Runtime(digits_scenario(**SOFT, **PATTERN, **index))
    cost = _cost_model(runtime)
    assert cost.upload_bits(ClientPlan(0, 0, 4, 0.5)) == V * (sum(kept) + HEAD) + index_bits
    split = cost.affine_upload(ClientPlan(0, 0, 4, 0.5))
    assert (split.ratio_values, split.fixed_values) == (8 * SIDE + 4 * SIDE, HEAD)


def _cost_model(runtime: Runtime):
    from wirelessfl.algorithms.spec import cost_model_class

    scenario = runtime.scenario
    cls = cost_model_class(scenario.algorithm.name)
    return cls(scenario.strategy, scenario=scenario, geometry=runtime.geometry())


def _controller(**overrides):
    """A network-only run's controller on layers (64, 64) fixed at rank 6 and (64, 32)."""
    scenario = small_scenario(**{"learner.shape.layer_ranks": [6, None], **overrides})
    return Simulator(scenario, make_learner(scenario)).controller


def test_tsfa_offline_search_counts_the_fixed_layer():
    ctl = _controller(**{"controller.d_th_s": 0.01})
    c, s = ctl.ctx, ctl.ctx.settings
    summary = ctl.summary()
    # Lemma 2 per rank r with the payload v O (r (64 + 32) + 6 (64 + 64)): the largest O in
    # [O_min, 1] whose average delay (K / N) sum_k payload / (B log2(1 + SNR_k)) meets D_th
    inv = float(np.sum(1.0 / np.log2(1.0 + np.asarray(c.mean_snr))))
    ranks = np.arange(1, s.r_max + 1)
    per_ratio_s = c.n_scheduled / c.n_clients * V * (ranks * 96 + 6 * 128) * inv / c.bandwidth_hz
    o = np.clip(s.d_th_s / per_ratio_s, s.o_min, 1.0)
    feasible = per_ratio_s * s.o_min <= s.d_th_s
    assert feasible.any() and (o[feasible] < 1.0).all()  # the fixed layer's values thin O
    got = np.asarray(summary["offline_sparsifications"])
    np.testing.assert_allclose(got[feasible], o[feasible], rtol=1e-12)
    bounds = [
        float(
            convergence_bound(
                rank=int(r),
                sparsification=float(x),
                n_scheduled=c.n_scheduled,
                n_clients=c.n_clients,
                constants=c.constants,
            )
        )
        for r, x in zip(ranks[feasible], o[feasible], strict=True)
    ]
    assert ctl.rank == int(ranks[feasible][int(np.argmin(bounds))])


def test_the_online_step_plans_the_delay_of_every_layer_at_its_rank():
    ctl = _controller(**{"controller.name": "osfa", "controller.rank": 4})
    snr = np.array([3.0, 10.0, 30.0, 5.0, 12.0])
    ctl.begin_round(0, np.array([0, 3, 7, 11, 19]))
    decision = ctl.decide(snr, np.zeros(5))
    o = decision.sparsification
    values = round(o * 6 * 128) + round(o * 4 * 96)  # per layer round(O r_l (d_l + l_l))
    # eq. (31)'s shares: everyone finishes after v n sum_j 1 / (B log2(1 + SNR_j))
    want_s = V * values * float(np.sum(1.0 / np.log2(1.0 + snr))) / ctl.ctx.bandwidth_hz
    assert decision.planned_delay_s == pytest.approx(want_s, rel=1e-12)
    assert 0.05 <= o <= 1.0


def test_the_rank_knob_plans_the_fixed_layer_at_every_candidate_rank():
    ctl = _controller(
        **{"algorithm.name": "fedit", "controller.name": "osfa", "controller.rank": 4}
    )
    snr = np.array([3.0, 10.0, 30.0, 5.0, 12.0])
    ctl.begin_round(0, np.array([0, 3, 7, 11, 19]))
    decision = ctl.decide(snr, np.zeros(5))
    cap = int(decision.ranks[0])
    values = 6 * 128 + cap * 96  # dense: fc1-like layer at 6, the other at the round's rank
    want_s = V * values * float(np.sum(1.0 / np.log2(1.0 + snr))) / ctl.ctx.bandwidth_hz
    assert decision.planned_delay_s == pytest.approx(want_s, rel=1e-12)
    assert 1 <= cap <= 4 and (decision.ranks == cap).all()


def test_a_network_only_run_sends_what_the_fixed_layer_adds(tmp_path):
    rank, o = 4, 0.3
    settings = {"controller.name": "fixed", "controller.rank": rank, "controller.sparsification": o}
    fixed = run_scenario(
        small_scenario(rounds=3, **settings, **{"learner.shape.layer_ranks": [6, None]}),
        tmp_path / "fixed",
    )
    values = round(o * 6 * 128) + round(o * rank * 96)
    assert values == 230 + 115
    assert (fixed.rounds["bits_up"] == fixed.rounds["n_arrived"] * V * values).all()


# ---- who refuses ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("algorithm", "reason"),
    [
        ("hetlora", "truncates, merges or stacks every adapted layer at each client's own rank"),
        ("flexlora", "truncates, merges or stacks every adapted layer at each client's own rank"),
        ("fslora", "sketches k_i of the r rank components of every adapted layer"),
    ],
)
def test_algorithms_of_per_client_ranks_refuse_fixed_layers_at_load(algorithm, reason):
    with pytest.raises(ConfigError) as err:
        digits_scenario(**{"algorithm.name": algorithm, **PATTERN})
    assert str(err.value) == (
        f"learner.rank_pattern: algorithm {algorithm!r} {reason} r_i, so it cannot keep a layer "
        "at a fixed rank; leave it at its default (null)"
        if algorithm != "fslora"
        else f"learner.rank_pattern: algorithm {algorithm!r} {reason}, so it cannot keep a "
        "layer at a fixed rank; leave it at its default (null)"
    )
    with pytest.raises(ConfigError, match=r"^learner.shape.layer_ranks: algorithm "):
        small_scenario(**{"algorithm.name": algorithm, "learner.shape.layer_ranks": [6, None]})


@pytest.mark.parametrize("scenario", ["floral/synthetic_linear", "h2tune/hybrid"])
def test_algorithms_with_adapters_of_their_own_refuse_it(scenario):
    with pytest.raises(ConfigError) as err:
        load_scenario(scenario, ["learner.rank_pattern={fc1: 2}"])
    name = load_scenario(scenario, []).algorithm.name
    assert str(err.value) == (
        f"learner.rank_pattern: algorithm {name!r} trains adapters of its own, not peft's, and "
        "ignores it; leave it at its default (None)"
    )


def test_the_error_memory_of_a_fixed_layer_stays_at_its_rank():
    from wirelessfl.algorithms.compression import Compression
    from wirelessfl.algorithms.compression_stage import MEMORY, compress_message
    from wirelessfl.algorithms.message import LoraTensors, Message

    g = torch.Generator().manual_seed(0)
    ranks = {"fc1": 8, "fc2": 2}  # fc1 fixed at 8, fc2 a rank-2 client of a rank-4 model
    delta, groups = {}, []
    for layer, r in ranks.items():
        a, b = f"{layer}.lora_A", f"{layer}.lora_B"
        delta[a], delta[b] = torch.randn(r, 64, generator=g), torch.randn(64, r, generator=g)
        groups.append(LoraTensors(layer, b, a))
    message = Message(shared={k: v.clone() for k, v in delta.items()}, lora=groups)
    stage = Compression(sparsifier="soft", error_feedback=True)
    compress_message(
        message,
        stage=stage,
        ratio=0.5,
        model_rank=4,
        memory=None,
        generator=None,
        fixed_ranks={"fc1": 8},
    )
    memory = message.private[MEMORY]
    for layer, r in ranks.items():
        a, b = f"{layer}.lora_A", f"{layer}.lora_B"
        sent = [message.shared[a], message.shared[b]]
        assert sum(int((x != 0).sum()) for x in sent) == round(0.5 * r * SIDE)
        m_b, m_a = memory[layer]  # (d, r_l) and (r_l, l); fc2's at the model rank 4
        full = 8 if layer == "fc1" else 4
        assert (tuple(m_b.shape), tuple(m_a.shape)) == ((64, full), (full, 64))
        # eqs. (4)-(5) with no memory yet: what was sent plus what is kept is the update
        torch.testing.assert_close(m_b[:, :r].T + sent[0], delta[a], rtol=0, atol=0)
        torch.testing.assert_close(m_a[:r].T + sent[1], delta[b], rtol=0, atol=0)
        assert not m_b[:, r:].any() and not m_a[r:].any()


def test_the_sketch_controller_moves_only_the_flops_that_follow_the_rank():
    from wirelessfl.controllers.sketch import lora_step_fraction
    from wirelessfl.plans import ModelGeometry

    geometry = ModelGeometry(
        ((64, 64), (64, 32)), base_params=5000, batch_size=4, seq_len=3, layer_ranks=(6, None)
    )
    f, r, tokens = lora_step_fraction(geometry, 8), 8, 4 * 3
    for k in range(1, r + 1):  # T (4 P_base + 6 (6 (64 + 64) + k (64 + 32))) per step
        at_k = tokens * (4 * 5000 + 6 * (6 * 128 + k * 96))
        at_r = tokens * (4 * 5000 + 6 * (6 * 128 + r * 96))
        assert 1.0 - f + f * k / r == pytest.approx(at_k / at_r, rel=1e-12)
        assert geometry.training_flops(k, steps=1) == at_k
