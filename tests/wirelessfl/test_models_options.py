"""``learner.model_options`` and peft's LoRA settings in the learner section.

Independent references: parameter counts summed here from the base model's own modules, the
rsLoRA output of a lower-rank client computed by hand from the layer's factors, and peft's
``LoraConfig`` read back from the wrapped model.
"""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")
peft = pytest.importorskip("peft")
transformers = pytest.importorskip("transformers")

import pandas as pd  # noqa: E402
import yaml  # noqa: E402
from scenario_helpers import digits_scenario  # noqa: E402

from wirelessfl.config import scenario_from_dict  # noqa: E402
from wirelessfl.config.loader import SCENARIO_DIR  # noqa: E402
from wirelessfl.config.scenario import PEFT_SETTINGS  # noqa: E402
from wirelessfl.errors import ConfigError  # noqa: E402
from wirelessfl.models import build_model, model_option_names  # noqa: E402
from wirelessfl.sim import Run, run_scenario  # noqa: E402
from wirelessfl.training.runtime import Runtime  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _runtime(rank=4, **learner):
    runtime = Runtime(digits_scenario(**{f"learner.{k}": v for k, v in learner.items()}))
    runtime.start(rank=rank, seed=1)
    return runtime


def _error(**learner) -> str:
    with pytest.raises(ConfigError) as err:
        Runtime(digits_scenario(**{f"learner.{k}": v for k, v in learner.items()}))
    assert "\n" not in str(err.value)
    return str(err.value)


def test_model_options_reach_the_builder_and_bad_keys_are_one_line():
    runtime = _runtime(model_options={"hidden": 24})
    assert runtime.bundle.model.fc1.out_features == 24
    assert model_option_names("tiny_mlp") == ["in_features", "hidden"]
    message = _error(model_options={"dtype": "bfloat16"})
    assert message == (
        "learner.model_options.dtype: not an option of model 'tiny_mlp'; it accepts: "
        "in_features, hidden"
    )
    assert "learner.model_options: option names are Python names" in _error(
        model_options={"a-b": 1}
    )


def test_lora_settings_reach_peft():
    runtime = _runtime(
        lora_dropout=0.2, use_rslora=True, lora_bias="lora_only", init_lora_weights="gaussian"
    )
    config = runtime.model.peft_config["default"]
    assert (config.lora_dropout, config.use_rslora, config.bias) == (0.2, True, "lora_only")
    assert config.init_lora_weights == "gaussian"
    lora_b = [p for n, p in runtime.state.params.items() if "lora_B" in n]
    assert lora_b and all(not p.detach().any() for p in lora_b)
    defaults = _runtime().model.peft_config["default"]
    assert (defaults.lora_dropout, defaults.use_rslora, defaults.bias) == (0.0, False, "none")
    assert defaults.init_lora_weights is True


@pytest.mark.parametrize(
    ("settings", "dense"),
    [
        ({}, ["head"]),
        ({"lora_bias": "all"}, ["head", "fc1.bias", "fc2.bias"]),
        ({"lora_bias": "lora_only", "head": "frozen"}, ["fc1.bias", "fc2.bias"]),
        ({"modules_to_save": ["fc2"], "target_modules": ["fc1"]}, ["head", "fc2"]),
    ],
)
def test_dense_values_count_what_trains_in_full(settings, dense):
    runtime = _runtime(**settings)
    fresh = dict(build_model("tiny_mlp", n_classes=runtime.data.n_classes).model.named_modules())
    expected = 0
    for name in dense:
        owner, _, attr = name.partition(".")
        params = [getattr(fresh[owner], attr)] if attr else fresh[owner].parameters()
        expected += sum(p.numel() for p in params)
    trained = sum(runtime.state.params[n].numel() for n in runtime.state.full_names)
    assert runtime.head_values == expected == trained


def test_bad_lora_settings_are_one_line():
    assert _error(init_lora_weights="pissa").startswith(
        "learner.init_lora_weights: must be true, false or 'gaussian', got 'pissa'"
    )
    assert _error(modules_to_save=["fc9"]).startswith(
        "learner.modules_to_save: 'fc9' names no module of 'tiny_mlp'"
    )
    assert "is also a LoRA target" in _error(modules_to_save=["fc1"])
    assert "learner.lora_bias: must be one of" in _error(lora_bias="some")
    assert "learner.lora_dropout: must be" in _error(lora_dropout=1.0)


@torch.no_grad()
def test_rslora_lower_rank_client_matches_the_hand_computed_layer():
    """A rank-r_k client trains at alpha / sqrt(r_k) on its first r_k factors (zero-padded)."""
    runtime = _runtime(rank=4, use_rslora=True, lora_alpha=8.0, init_lora_weights=False)
    layer = runtime.model.base_model.model.fc1
    a, b = layer.lora_A["default"].weight, layer.lora_B["default"].weight  # (4, d), (h, 4)
    x = torch.randn(3, a.shape[1])
    base = layer.base_layer(x)
    runtime.model.eval()
    torch.testing.assert_close(layer(x), base + 8.0 / math.sqrt(4) * x @ a.T @ b.T)
    a[2:] = 0.0  # a rank-2 client's factors, zero-padded to the model rank
    b[:, 2:] = 0.0
    with runtime.client_rank(2):
        inside = layer(x)
    torch.testing.assert_close(inside, base + 8.0 / math.sqrt(2) * x @ a[:2].T @ b[:, :2].T)
    assert not torch.allclose(inside, layer(x))  # outside: alpha / sqrt(4) again


def test_plain_lora_lower_rank_client_scales_by_alpha_over_rank():
    runtime = _runtime(rank=4, lora_alpha=8.0, init_lora_weights=False)
    layer = runtime.model.base_model.model.fc1
    with runtime.client_rank(2):
        assert layer.scaling["default"] == 8.0 / 2
    assert layer.scaling["default"] == 8.0 / 4


def test_batched_trainer_reproduces_rslora_lower_ranks_and_saved_modules(tmp_path):
    """Lower-rank HetLoRA clients with rsLoRA and an extra saved module: the batched trainer
    (alpha / sqrt(r_k) through its r / r_k factor) gives the sequential peft reference."""
    kw = {
        "algorithm.name": "hetlora",
        "strategy": {"ratio_choices": [0.25, 0.5, 1.0]},
        "learner.use_rslora": True,
        "learner.modules_to_save": ["fc2"],
        "learner.target_modules": ["fc1"],
    }
    seq = run_scenario(digits_scenario(rounds=3, eval_every=3, **kw), tmp_path / "seq")
    bat = run_scenario(
        digits_scenario(rounds=3, eval_every=3, **kw, **{"learner.trainer": "batched"}),
        tmp_path / "bat",
    )
    cols = ["loss", "accuracy", "test_loss"]
    pd.testing.assert_frame_equal(seq.rounds[cols], bat.rounds[cols], rtol=1e-4, atol=1e-6)
    plain = run_scenario(
        digits_scenario(rounds=3, eval_every=3, **{**kw, "learner.use_rslora": False}),
        tmp_path / "plain",
    )
    assert float(plain.rounds["loss"].iloc[-1]) != float(seq.rounds["loss"].iloc[-1])


def test_trained_biases_need_the_sequential_trainer():
    runtime = Runtime(digits_scenario(**{"learner.lora_bias": "all", "learner.trainer": "batched"}))
    with pytest.raises(ConfigError, match="^learner.trainer: BatchedTrainer cannot batch layer"):
        runtime.start(rank=4, seed=1)


@pytest.mark.parametrize(("key", "value"), [("use_rslora", True), ("lora_bias", "all")])
def test_algorithms_with_their_own_adapters_refuse_peft_settings(tmp_path, key, value):
    data = yaml.safe_load((SCENARIO_DIR / "floral" / "synthetic_linear.yaml").read_text())
    data["learner"][key] = value
    with pytest.raises(ConfigError) as err:
        Run(scenario_from_dict(data), tmp_path / "run")
    assert str(err.value) == (
        f"learner.{key}: algorithm 'floral' trains adapters of its own, not peft's, and ignores "
        f"it; leave it at its default ({PEFT_SETTINGS[key]!r})"
    )


def test_lora_dropout_runs_repeat_and_differ_from_none(tmp_path):
    kw = {"learner.lora_dropout": 0.3}
    runs = [
        run_scenario(digits_scenario(rounds=2, eval_every=2, **kw), tmp_path / f"d{i}")
        for i in range(2)
    ]
    plain = run_scenario(digits_scenario(rounds=2, eval_every=2), tmp_path / "plain")
    cols = ["loss", "accuracy", "test_loss"]
    pd.testing.assert_frame_equal(runs[0].rounds[cols], runs[1].rounds[cols], rtol=0, atol=0)
    assert float(runs[0].rounds["loss"].iloc[-1]) != float(plain.rounds["loss"].iloc[-1])
