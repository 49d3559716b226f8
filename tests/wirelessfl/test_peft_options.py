"""peft's DoRA (``learner.use_dora``) and ``learner.layers_to_transform`` from a scenario: what
they adapt, what they send and plan, and the one-line refusals (the batched trainer cannot
group DoRA layers; FLoRAL's and H2Tune's own adapters ignore both)."""

from __future__ import annotations

import pytest
from scenario_helpers import digits_scenario

from wirelessfl.config import load_scenario
from wirelessfl.errors import ConfigError
from wirelessfl.models.layers import block_index, layers_in
from wirelessfl.sim import run_scenario

torch = pytest.importorskip("torch")

from wirelessfl.training.runtime import Runtime  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")

FEDIT = {"algorithm.name": "fedit", "learner.trainer": "sequential", "rounds": 2}


@pytest.mark.parametrize(
    ("name", "block"),
    [
        ("_blocks.12._expand_conv", 12),
        ("vit.encoder.layer.3.attention.attention.query", 3),
        ("model.layers.29.self_attn.q_proj", 29),
        ("blocks.3.0.conv", 0),  # the last number that a name follows, as peft reads it
        ("_conv_head", None),
        ("fc1", None),
        ("7.weight", None),  # a leading number is no block
    ],
)
def test_block_index_reads_the_number_in_a_module_path(name, block):
    assert block_index(name) == block


def test_layers_to_transform_keeps_the_targets_in_those_blocks():
    targets = ["_blocks.12._expand_conv", "_blocks.13._expand_conv", "_conv_head"]
    assert layers_in(targets, [13, 20]) == ["_blocks.13._expand_conv"]
    with pytest.raises(ConfigError) as err:
        layers_in(targets, [3])
    assert str(err.value) == (
        "learner.layers_to_transform: [3] selects none of the target modules; their block "
        "indices are [12, 13]"
    )


def test_layers_to_transform_adapts_only_those_blocks_and_plans_their_sizes():
    runtime = Runtime(load_scenario("default", ["learner.layers_to_transform=[13,15]"]))
    full = Runtime(load_scenario("default", []))
    assert runtime.targets == [
        "_blocks.13._expand_conv",
        "_blocks.13._project_conv",
        "_blocks.15._expand_conv",
        "_blocks.15._project_conv",
    ]
    shapes = dict(zip(full.targets, full.layer_shapes, strict=True))
    assert runtime.layer_shapes == [shapes[name] for name in runtime.targets]
    runtime.start(rank=4, seed=0)
    adapted = sorted({layer.name for layer in runtime.state.layers})
    assert [name.removeprefix("base_model.model.") for name in adapted] == runtime.targets


def test_dora_trains_and_sends_one_magnitude_per_output_feature(tmp_path):
    plain = run_scenario(digits_scenario(**FEDIT), tmp_path / "plain")
    dora = run_scenario(digits_scenario(**FEDIT, **{"learner.use_dora": True}), tmp_path / "d")
    runtime = Runtime(digits_scenario(**FEDIT, **{"learner.use_dora": True}))
    lora = Runtime(digits_scenario(**FEDIT))
    outputs = sum(d_out for _, d_out in runtime.layer_shapes)  # tiny_mlp: fc1 64->32, fc2
    assert runtime.head_values - lora.head_values == outputs  # planned as dense values
    runtime.start(rank=4, seed=1)
    magnitudes = [n for n in runtime.state.full_names if "lora_magnitude_vector" in n]
    assert sum(runtime.state.params[n].numel() for n in magnitudes) == outputs
    # every arrived upload carries the magnitudes in full, 32 bits each
    extra = dora.rounds["bits_up"] - plain.rounds["bits_up"]
    assert list(extra) == list(dora.rounds["n_arrived"] * outputs * 32)
    assert dora.rounds["loss"].notna().all() and dora.rounds["loss"].iloc[-1] > 0


def test_the_batched_trainer_refuses_dora_in_one_line():
    runtime = Runtime(
        digits_scenario(**{**FEDIT, "learner.use_dora": True, "learner.trainer": "batched"})
    )
    with pytest.raises(ConfigError) as err:
        runtime.start(rank=4, seed=1)
    text = str(err.value)
    assert "\n" not in text and text.startswith("learner.trainer: BatchedTrainer cannot batch")
    assert "LoRA variants (e.g. DoRA) are not grouped" in text


@pytest.mark.parametrize(
    ("scenario", "setting"),
    [
        ("floral/synthetic_linear", "learner.use_dora=true"),
        ("h2tune/hybrid", "learner.layers_to_transform=[0]"),
    ],
)
def test_algorithms_with_adapters_of_their_own_refuse_them(tmp_path, scenario, setting):
    key = setting.split("=")[0]
    with pytest.raises(ConfigError) as err:
        run_scenario(load_scenario(scenario, ["rounds=1", setting]), tmp_path / "run")
    assert str(err.value).startswith(f"{key}: algorithm ")
    assert "trains adapters of its own, not peft's, and ignores it" in str(err.value)
