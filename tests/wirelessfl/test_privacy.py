"""Client-level DP (``privacy.mode``): clipping and noise by Monte Carlo and closed forms,
adaptive clipping, epsilon against Opacus's own example and its accountant stepped by hand,
the one-line refusals, the stop at a target epsilon, and a resume that draws the same noise."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from scenario_helpers import digits_scenario, interrupt_at, small_scenario

from wirelessfl.errors import ConfigError

torch = pytest.importorskip("torch")
opacus = pytest.importorskip("opacus")

from opacus.accountants import RDPAccountant  # noqa: E402

from wirelessfl.algorithms import make_algorithm  # noqa: E402
from wirelessfl.config.privacy import update_noise_multiplier  # noqa: E402
from wirelessfl.models.rng import torch_generator  # noqa: E402
from wirelessfl.plans import ClientPlan  # noqa: E402
from wirelessfl.privacy.accounting import epsilon, sampling_rate  # noqa: E402
from wirelessfl.privacy.mechanism import add_gaussian_noise, clip_to_norm  # noqa: E402
from wirelessfl.privacy.stage import PrivacyStage  # noqa: E402
from wirelessfl.sim import resume_run  # noqa: E402
from wirelessfl.sim.runner import Run  # noqa: E402
from wirelessfl.training.private_state import PrivateState  # noqa: E402
from wirelessfl.training.runtime import Runtime  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _dp(mode="central", **overrides):
    return digits_scenario(
        **{
            "algorithm.name": "fedit",
            "privacy.mode": mode,
            "privacy.noise_multiplier": 0.3,
            "privacy.clip_norm": 0.05,
            **overrides,
        }
    )


# ---- accounting ---------------------------------------------------------------------------
def test_epsilon_equals_opacus_documented_example():
    # opacus.accountants.analysis.rdp's module docstring: [(q, sigma, steps)] =
    # [(1e-5, 1.0, 10), (1e-4, 3.0, 4)], delta 1e-5, orders 2..32 -> epsilon 0.336
    history = [(1.0, 1e-5, 10), (3.0, 1e-4, 4)]  # ours: (sigma, q, steps), Opacus's history
    got = epsilon(history, delta=1e-5, alphas=range(2, 33))
    assert got == pytest.approx(0.336, abs=5e-4)


def test_stage_epsilon_is_the_accountant_stepped_once_per_release():
    # a fixed denominator (McMahan et al.'s estimator): amplification by sampling at q = K/N
    sc = _dp(
        n_clients=100,
        n_scheduled=10,
        **{"privacy.delta": 1e-5, "strategy.aggregation": "unbiased"},
    )
    stage = PrivacyStage(sc, [0.01] * 100)
    assert sampling_rate(sc) == pytest.approx(0.1)
    by_hand = RDPAccountant()
    for _ in range(30):
        stage.after_round({0: 0.01, 1: 1.0}, None)
        by_hand.step(noise_multiplier=0.3, sample_rate=10 / 100)
    assert stage.epsilon() == pytest.approx(by_hand.get_epsilon(1e-5), rel=1e-12)
    # the next release is accounted before it runs
    by_hand.step(noise_multiplier=0.3, sample_rate=0.1)
    assert stage.epsilon(extra=1) == pytest.approx(by_hand.get_epsilon(1e-5), rel=1e-12)


def test_no_amplification_where_sampling_is_not_uniform():
    fixed = {"strategy.aggregation": "unbiased"}
    assert sampling_rate(_dp(**fixed)) == pytest.approx(0.5)
    assert sampling_rate(_dp(**{**fixed, "selection.method": "best_snr"})) == 1.0
    assert sampling_rate(_dp(**{**fixed, "availability.model": "markov"})) == 1.0
    assert sampling_rate(_dp("local")) == 1.0  # the server sees who sent


def test_no_amplification_without_a_fixed_denominator_or_under_replace():
    # weights normalised over the arrived: a zeroed client scheduled is not a client absent
    assert sampling_rate(_dp()) == 1.0
    unbiased = {"strategy.aggregation": "unbiased"}
    assert sampling_rate(_dp(**{**unbiased, "privacy.adjacency": "add_remove"})) == 0.5
    assert sampling_rate(_dp(**{**unbiased, "privacy.adjacency": "replace"})) == 1.0


def test_local_epsilon_follows_the_device_that_sent_most():
    stage = PrivacyStage(_dp("local", **{"privacy.delta": 1e-5}))
    for ids in ([0, 1], [1, 2], [1, 3]):
        stage.after_round(dict.fromkeys(ids, 0.0), None)
    by_hand = RDPAccountant()
    for _ in range(3):  # client 1 sent three times, at q = 1
        by_hand.step(noise_multiplier=0.3, sample_rate=1.0)
    assert stage.epsilon() == pytest.approx(by_hand.get_epsilon(1e-5), rel=1e-12)


# ---- the mechanism ------------------------------------------------------------------------
def test_clip_scales_the_whole_update_to_c_and_leaves_a_short_one():
    g = torch.Generator().manual_seed(0)
    update = {"a": torch.randn(30, 4, generator=g), "b": torch.randn(7, generator=g)}
    norm = math.sqrt(sum(float(t.double().square().sum()) for t in update.values()))
    clipped = dict(update)
    assert clip_to_norm(clipped, 1.5) == pytest.approx(norm)
    flat = torch.cat([clipped["a"].flatten(), clipped["b"]])
    assert float(flat.norm()) == pytest.approx(1.5, rel=1e-6)
    direction = torch.cat([update["a"].flatten(), update["b"]]) / norm
    assert torch.allclose(flat / 1.5, direction, atol=1e-6)
    short = dict(update)
    clip_to_norm(short, norm * 2)
    assert all(torch.equal(short[n], update[n]) for n in update)


def test_noise_has_the_stated_std_and_comes_from_the_stream():
    n, std = 200_000, 0.7
    zeros = {"x": torch.zeros(n)}
    add_gaussian_noise(zeros, std, torch_generator(5, "dp_local", 1, 2))
    x = zeros["x"].double()
    assert abs(float(x.mean())) < 4 * std / math.sqrt(n)
    # sample std of n normals: relative standard error 1 / sqrt(2 n)
    assert float(x.std()) == pytest.approx(std, rel=4 / math.sqrt(2 * n))
    again = {"x": torch.zeros(n)}
    add_gaussian_noise(again, std, torch_generator(5, "dp_local", 1, 2))
    assert torch.equal(again["x"], zeros["x"])


def test_central_noise_std_is_z_c_max_weight():
    z_c = {"privacy.noise_multiplier": 1.3, "privacy.clip_norm": 0.2}
    stage = PrivacyStage(_dp(**z_c))
    assert stage.noise_std([0.5, 0.3, 0.2]) == pytest.approx(1.3 * 0.2 * 0.5)
    replace = PrivacyStage(_dp(**z_c, **{"privacy.adjacency": "replace"}))
    assert replace.noise_std([0.5, 0.3, 0.2]) == pytest.approx(2 * 1.3 * 0.2 * 0.5)
    # a fixed denominator: the largest weight of all N clients, (N / K) max p_k, whoever arrived
    p = [0.05, 0.05, 0.1, 0.1, 0.1, 0.2, 0.2, 0.2]
    fixed = PrivacyStage(_dp(**z_c, **{"strategy.aggregation": "unbiased"}), p)
    assert fixed.noise_std([0.1, 0.1]) == pytest.approx(1.3 * 0.2 * (8 / 4) * 0.2)
    local = PrivacyStage(_dp("local"))
    assert local.noise_std([0.5, 0.5]) == 0.0  # the devices noised their own updates


@pytest.mark.parametrize(("adjacency", "s_b"), [("zero_out", 0.5), ("replace", 1.0)])
def test_adaptive_update_noise_keeps_the_total_multiplier(adjacency, s_b):
    z, sigma_b = 1.0, 2.0
    z_update = update_noise_multiplier(z, sigma_b, adjacency)
    assert (z_update**-2 + (sigma_b / s_b) ** -2) ** -0.5 == pytest.approx(z)
    assert update_noise_multiplier(z, None, adjacency) == z


def test_adaptive_clip_moves_by_the_unclipped_fraction_on_average():
    # Andrew et al.: log C' - log C = -eta (b_hat - gamma), E[b_hat] = unclipped / K
    sc = _dp(
        n_scheduled=4,
        **{
            "privacy.adaptive_clipping": True,
            "privacy.count_noise": 0.2,
            "privacy.clip_lr": 0.2,
            "privacy.target_quantile": 0.5,
        },
    )
    steps = []
    for seed in range(2000):
        stage = PrivacyStage(sc)
        stage.after_round({0: 0.01, 1: 0.02, 2: 0.04, 3: 9.0}, torch_generator(seed, "c", 0, 0))
        steps.append(math.log(stage.clip_norm / 0.05))
    # 3 of 4 unclipped: b_hat = 1/2 + (3 - 4/2 + 0.2 noise) / 4, 5 std inside [0, 1] (no clamp);
    # the noise averages out: std of the mean 0.2 * 0.2 / 4 / sqrt(2000)
    assert np.mean(steps) == pytest.approx(-0.2 * (3 / 4 - 0.5), abs=4 * 0.01 / math.sqrt(2000))
    assert np.std(steps) == pytest.approx(0.2 * 0.2 / 4, rel=0.1)


def test_the_count_is_centred_and_its_estimate_clamped_to_0_1():
    sc = _dp(n_scheduled=4, **{"privacy.adaptive_clipping": True, "privacy.count_noise": 0.2})
    stage = PrivacyStage(sc)
    # 1 of 2 arrived unclipped, K = 4: 1/2 + (1 - 2/2 + 0.2 * 1.5) / 4
    assert stage._b_hat(1, 2, 1.5) == pytest.approx(0.5 + 0.3 / 4)
    assert stage._b_hat(4, 4, 30.0) == 1.0  # 1/2 + (2 + 6) / 4 = 2.5, clamped
    assert stage._b_hat(0, 4, -30.0) == 0.0


# ---- the stage inside an algorithm ----------------------------------------------------------
def _client_message(sc, ratio=1.0):
    runtime = Runtime(sc)
    runtime.start(rank=4, seed=sc.seed)
    algorithm = make_algorithm(sc)
    algorithm.bind(runtime)
    glob = runtime.initial_state()
    plan = ClientPlan(1, 0, 4, ratio)
    download = algorithm.broadcast(plan, glob)
    (result,) = algorithm.train([plan], [download.shared], PrivateState())
    clean = algorithm.client_message(plan, download, result, {})
    sent = algorithm.sent_message(plan, download, result, {})
    return clean, sent


def test_local_message_is_the_clipped_update_plus_z_c_noise():
    z, c = 2.0, 0.05
    clean, sent = _client_message(
        _dp("local", **{"privacy.noise_multiplier": z, "privacy.clip_norm": c})
    )
    clipped = dict(clean.shared)
    clip_to_norm(clipped, c)
    residual = torch.cat([(sent.shared[n] - clipped[n]).flatten() for n in clipped]).double()
    n = residual.numel()
    assert n > 1000
    assert float(residual.std()) == pytest.approx(z * c, rel=5 / math.sqrt(2 * n))
    assert abs(float(residual.mean())) < 5 * z * c / math.sqrt(n)


def test_central_message_is_clipped_to_c_after_sparsifying():
    c = 0.05
    clean, sent = _client_message(
        _dp(
            "central",
            **{"privacy.clip_norm": c, "compression.sparsifier": "topk", "compression.ratio": 0.3},
        ),
        ratio=0.3,
    )
    norm = math.sqrt(sum(float(t.double().square().sum()) for t in sent.shared.values()))
    assert norm == pytest.approx(c, rel=1e-5)
    assert sent.diagnostics["sent_fraction"] == pytest.approx(0.3, abs=0.02)
    # the mask is the sparsifier's on the update: every sent LoRA value is a scaled update value
    for g in sent.lora:
        kept = sent.shared[g.b] != 0
        ratio = sent.shared[g.b][kept] / clean.shared[g.b][kept]
        assert torch.allclose(ratio, ratio[0].expand_as(ratio), rtol=1e-4)


# ---- refusals -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("overrides", "words"),
    [
        ({"algorithm.name": "floral"}, "does not aggregate one"),
        ({"learner.kind": "surrogate"}, "needs learner.kind: lora"),
        ({"privacy.mode": "local", "privacy.adaptive_clipping": True}, "central mode only"),
        ({"privacy.adaptive_clipping": True, "privacy.noise_multiplier": 1.0}, "2 sigma_b > z"),
        ({"privacy.mode": "none", "privacy.target_epsilon": 3.0}, "needs a DP mechanism"),
        ({"privacy.mode": "local", "compression.importance": "factors"}, "unnoised local"),
    ],
)
def test_refusals_are_one_line(overrides, words):
    if overrides.get("learner.kind") == "surrogate":
        make = lambda: small_scenario(**{"privacy.mode": "central"})  # noqa: E731
    else:
        make = lambda: _dp(**overrides)  # noqa: E731
    with pytest.raises(ConfigError) as err:
        make()
    assert words in str(err.value)
    assert "\n" not in str(err.value)


# ---- runs -----------------------------------------------------------------------------------
def test_a_run_reports_epsilon_and_stops_at_the_target(tmp_path):
    sc = _dp(
        rounds=12,
        eval_every=5,
        **{
            "privacy.delta": 1e-5,
            "privacy.target_epsilon": 20.0,
            "strategy.aggregation": "unbiased",
        },
    )
    result = Run(sc, tmp_path / "run").execute()
    rounds = result.rounds
    by_hand = RDPAccountant()
    expected = []
    for _ in range(12):
        by_hand.step(noise_multiplier=0.3, sample_rate=4 / 8)
        expected.append(by_hand.get_epsilon(1e-5))
    done = sum(e <= 20.0 for e in expected)
    assert 0 < done < 12
    assert len(rounds) == done
    assert np.allclose(rounds.dp_epsilon, expected[:done], rtol=1e-12)
    assert (rounds.dp_clip_norm == 0.05).all()
    meta = json.loads((tmp_path / "run" / "meta.json").read_text())
    assert meta["finished"] and "privacy.target_epsilon" in meta["stopped_early"]
    # the model the run stops with is evaluated, off the eval_every grid (rounds 4, 9)
    assert done - 1 not in (4, 9)
    evaluated = rounds.index[rounds.accuracy.notna()].tolist()
    assert evaluated == [t for t in (4, 9) if t < done - 1] + [done - 1]


def test_a_target_no_round_can_meet_is_refused_at_start_in_one_line(tmp_path):
    sc = _dp(**{"privacy.noise_multiplier": 0.5, "privacy.target_epsilon": 0.01})
    one_round = epsilon([(0.5, 1.0, 1)], delta=8**-1.1)
    with pytest.raises(ConfigError) as err:
        Run(sc, tmp_path / "run").execute()
    text = str(err.value)
    assert "\n" not in text and "privacy.target_epsilon" in text and "no round" in text
    assert f"{one_round:.4g}" in text
    assert not (tmp_path / "run" / "rounds.csv").exists()


def test_resume_draws_the_same_noise(tmp_path):
    sc = _dp(rounds=4, **{"privacy.adaptive_clipping": True, "privacy.count_noise": 0.5})
    full = Run(sc, tmp_path / "full")
    full_result = full.execute()
    interrupt_at(Run(sc, tmp_path / "cut"), 2)
    resumed = resume_run(tmp_path / "cut")
    wall = [c for c in full_result.rounds.columns if c.startswith("wall")]
    pd.testing.assert_frame_equal(
        full_result.rounds.drop(columns=wall), resumed.rounds.drop(columns=wall)
    )
    assert full_result.rounds.dp_clip_norm.nunique() > 1  # C moved: its state was restored


# ---- the clipped-count bit of adaptive clipping in the upload ----------------------------------
def test_adaptive_clipping_sends_one_more_bit_per_client(tmp_path):
    """b_k = 1[||Delta_k|| <= C] rides on each upload: the message, the cost model the
    controllers plan with, and ``rounds.csv``'s bits_up count one bit more per client."""
    adaptive = {"privacy.adaptive_clipping": True, "privacy.count_noise": 0.5}
    clean, sent = _client_message(_dp(**adaptive))
    values = sum(int(t.numel()) for t in clean.shared.values())  # dense: ratio 1, no stage
    payload = sent.payload(bits_per_value=32, count_index=False)
    assert payload.n_values == values
    assert payload.bits == 32 * values + 1 and payload.side_bits == 1

    plan = ClientPlan(0, 2, 4, 0.5)
    costs = {}
    for name, overrides in (("fixed", {}), ("adaptive", adaptive)):
        runtime = Runtime(_dp(**overrides))
        runtime.start(rank=4, seed=1)
        algorithm = make_algorithm(_dp(**overrides))
        algorithm.bind(runtime)
        costs[name] = algorithm.cost_or_fail()
    assert costs["adaptive"].upload_bits(plan) == costs["fixed"].upload_bits(plan) + 1
    assert costs["adaptive"].affine_upload(plan).side_bits == 1.0
    assert costs["fixed"].affine_upload(plan).side_bits == 0.0

    rounds = {
        name: Run(_dp(rounds=2, **overrides), tmp_path / name).execute().rounds
        for name, overrides in (("fixed", {}), ("adaptive", adaptive))
    }
    extra = rounds["adaptive"].bits_up - rounds["fixed"].bits_up
    assert (extra == rounds["adaptive"].n_arrived).all() and (extra > 0).all()
