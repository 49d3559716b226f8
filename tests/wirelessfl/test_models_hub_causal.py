"""``hub:`` causal LMs read through a verbalizer, and the ``dtype`` model option.

The hub-format folder is written here: a tiny random ``LlamaForCausalLM`` saved with
``save_pretrained`` plus the packaged MiniLM tokenizer saved next to it. Independent
reference: the class logits taken by hand from the LM's own next-token logits.
"""

from __future__ import annotations

import math
import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import pytest  # noqa: E402

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from scenario_helpers import digits_scenario  # noqa: E402

from wirelessfl.data.assets import load_tokenizer  # noqa: E402
from wirelessfl.errors import ConfigError, UserError  # noqa: E402
from wirelessfl.models import build_model  # noqa: E402
from wirelessfl.sim import run_scenario  # noqa: E402
from wirelessfl.training.runtime import Runtime  # noqa: E402

pytestmark = [
    pytest.mark.train,
    pytest.mark.usefixtures("one_torch_thread"),
    pytest.mark.filterwarnings("ignore:.*is_gradient_checkpointing.*:FutureWarning"),
]

ANSWERS = ["bad", "good"]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """A locally saved hub-format causal LM (random weights) with a tokenizer."""
    path = tmp_path_factory.mktemp("tiny_llama")
    tok = load_tokenizer("minilm")
    cfg = transformers.LlamaConfig(
        vocab_size=len(tok),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=64,
        pad_token_id=tok.pad_token_id,
    )
    torch.manual_seed(0)
    transformers.LlamaForCausalLM(cfg).save_pretrained(str(path))
    tok.save_pretrained(str(path))
    return str(path)


def _scenario(folder, **overrides):
    learner = {
        "learner.model": "hub:" + folder,
        "learner.dataset": "rotten_tomatoes",
        "learner.dataset_options": {"tokenizer": folder, "max_length": 12},
        "learner.model_options": {"answers": ANSWERS},
        "learner.local_steps": 2,
        "learner.batch_size": 8,
        "learner.lr": 0.01,
    }
    return digits_scenario(rounds=2, eval_every=2, **{**learner, **overrides})


@torch.no_grad()
def test_verbalizer_logits_are_the_lm_head_scores_of_the_answer_words(folder):
    bundle = build_model("hub:" + folder, n_classes=2, answers=ANSWERS)
    assert bundle.kind == "text" and bundle.head_modules == []
    assert bundle.target_modules == ["q_proj", "v_proj"]
    assert isinstance(bundle.model, transformers.LlamaForCausalLM)
    tok = load_tokenizer(folder)
    ids = [tok(w, add_special_tokens=False)["input_ids"][0] for w in ANSWERS]
    assert bundle.info["answer_token_ids"] == ids
    x = torch.randint(1, len(tok), (3, 7))
    mask = torch.ones_like(x)
    mask[0, 4:] = 0  # right padding: sample 0 ends at position 3
    x[0, 4:] = tok.pad_token_id
    y = torch.tensor([1, 0, 1])
    model = bundle.model.eval()
    loss, logits = bundle.loss_and_logits(model, {"x": x, "attention_mask": mask, "y": y})
    lm = model(input_ids=x, attention_mask=mask).logits  # (3, 7, vocab)
    expected = torch.stack([lm[0, 3, ids], lm[1, 6, ids], lm[2, 6, ids]])
    torch.testing.assert_close(logits, expected)
    nll = -torch.log_softmax(expected, dim=-1)[torch.arange(3), y].mean()
    assert float(loss) == pytest.approx(float(nll), rel=1e-6)


def test_verbalizer_errors_are_one_line(folder):
    with pytest.raises(ValueError, match=r"^answers: need one answer word per class \(3\)"):
        build_model("hub:" + folder, n_classes=3, answers=ANSWERS)
    with pytest.raises(ValueError, match="share their first token"):
        build_model("hub:" + folder, n_classes=2, answers=["good", "good"])
    with pytest.raises(ValueError, match="answers= and task='causal' go together"):
        build_model("hub:" + folder, n_classes=2, task="causal")


def test_hub_causal_lm_trains_federated_offline(folder, tmp_path):
    result = run_scenario(_scenario(folder), tmp_path / "run")
    rounds = result.rounds
    assert len(rounds) == 2 and rounds["loss"].notna().all()
    accuracy = float(rounds["accuracy"].iloc[-1])
    assert 0.0 <= accuracy <= 1.0 and math.isfinite(float(rounds["test_loss"].iloc[-1]))
    assert (rounds["bits_up"] > 0).all()


def test_loader_kwargs_reach_from_pretrained(folder):
    plain = build_model("hub:" + folder, n_classes=2, answers=ANSWERS)
    assert plain.model.config.attention_dropout == 0.0
    loaded = build_model(
        "hub:" + folder,
        n_classes=2,
        answers=ANSWERS,
        loader_kwargs={"attention_dropout": 0.25, "use_safetensors": True},
    )
    assert loaded.model.config.attention_dropout == 0.25  # a config override, as given
    with pytest.raises(UserError, match=r"^learner\.model_options\.loader_kwargs: from_pretr"):
        build_model("hub:" + folder, n_classes=2, answers=ANSWERS, loader_kwargs={"bogus": 1})


def test_dtype_option(folder):
    bf16 = build_model("hub:" + folder, n_classes=2, answers=ANSWERS, dtype="bfloat16")
    assert {p.dtype for p in bf16.model.parameters()} == {torch.bfloat16}
    fp32 = build_model("hub:" + folder, n_classes=2, answers=ANSWERS)
    assert {p.dtype for p in fp32.model.parameters()} == {torch.float32}
    with pytest.raises(ValueError, match="^dtype='fp8' is not supported; accepted: float32, "):
        build_model("hub:" + folder, n_classes=2, answers=ANSWERS, dtype="fp8")
    with pytest.raises(ConfigError) as err:
        Runtime(_scenario(folder, **{"learner.model_options": {"dtype": "bfloat16"}}))
    assert str(err.value) == (
        "learner.model_options.dtype: 'bfloat16' trains on CUDA only (this run's device is "
        "cpu); use float32 on the CPU"
    )


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_bf16_hub_causal_lm_trains_on_cuda(folder, tmp_path):
    overrides = {
        "learner.model_options": {"answers": ANSWERS, "dtype": "bfloat16"},
        "learner.device": "cuda",
    }
    result = run_scenario(_scenario(folder, **overrides), tmp_path / "bf16")
    rounds = result.rounds
    assert rounds["loss"].notna().all() and math.isfinite(float(rounds["test_loss"].iloc[-1]))
    runtime = Runtime(_scenario(folder, **overrides))
    runtime.start(rank=4, seed=1)
    base = [p for n, p in runtime.model.named_parameters() if "q_proj.base_layer" in n]
    assert base and all(p.dtype == torch.bfloat16 and p.is_cuda for p in base)


@torch.no_grad()
def test_bf16_image_classifier_takes_float32_images(tmp_path):
    cfg = transformers.ViTConfig(
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        image_size=8,
        patch_size=4,
    )
    transformers.ViTForImageClassification(cfg).save_pretrained(str(tmp_path))
    bundle = build_model("hub:" + str(tmp_path), n_classes=3, dtype="bfloat16")
    x, y = torch.randn(2, 3, 8, 8), torch.tensor([0, 2])
    model = bundle.model.eval()
    loss, logits = bundle.loss_and_logits(model, {"x": x, "y": y})
    expected = model(x.to(torch.bfloat16)).logits.float()
    assert logits.dtype == torch.float32
    torch.testing.assert_close(logits, expected)
    nll = -torch.log_softmax(expected, dim=-1)[torch.arange(2), y].mean()
    assert float(loss) == pytest.approx(float(nll), rel=1e-6)
