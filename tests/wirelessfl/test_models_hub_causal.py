"""``hub:`` causal LMs read through a verbalizer, and the ``dtype`` model option.

The hub-format folder is written here: a tiny random ``LlamaForCausalLM`` saved with
``save_pretrained`` plus the packaged MiniLM tokenizer saved next to it. Independent
reference: the class logits taken by hand from the LM's own next-token logits.
"""

from __future__ import annotations

import math

import pytest

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
    tok = load_tokenizer("minilm")  # a missing asset package skips (tests/conftest.py)
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


class _NoKeepLM(torch.nn.Module):
    """A causal LM whose forward takes no ``logits_to_keep`` (the verbalizer's fallback)."""

    def __init__(self, lm):
        super().__init__()
        self.lm = lm

    def forward(self, input_ids, attention_mask):
        return self.lm(input_ids=input_ids, attention_mask=attention_mask)


@torch.no_grad()
def test_verbalizer_drops_padding_columns_and_scores_only_last_positions(folder):
    """Every row padded (so columns are dropped), two rows sharing their last position, read
    through peft (``logits_to_keep`` passes the wrapper) and through a forward without it;
    reference: the full-width LM's own next-token logits."""
    import peft

    bundle = build_model("hub:" + folder, n_classes=2, answers=ANSWERS)
    tok = load_tokenizer(folder)
    ids = bundle.info["answer_token_ids"]
    lengths = [3, 6, 6, 2]
    x = torch.randint(1, len(tok), (4, 10))
    mask = (torch.arange(10)[None, :] < torch.tensor(lengths)[:, None]).long()
    x[mask == 0] = tok.pad_token_id
    batch = {"x": x, "attention_mask": mask, "y": torch.tensor([0, 1, 1, 0])}
    lm = bundle.model.eval()
    full = lm(input_ids=x, attention_mask=mask).logits  # (4, 10, vocab)
    expected = torch.stack([full[i, n - 1, ids] for i, n in enumerate(lengths)])
    wrapped = peft.get_peft_model(lm, peft.LoraConfig(r=2, target_modules=["q_proj"]))
    _, through_peft = bundle.loss_and_logits(wrapped.eval(), batch)
    _, without_keep = bundle.loss_and_logits(_NoKeepLM(lm).eval(), batch)
    torch.testing.assert_close(through_peft, expected, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(without_keep, expected, rtol=1e-5, atol=1e-6)


def test_autocast_option_keeps_float32_weights_and_gradients(folder):
    mixed = build_model("hub:" + folder, n_classes=2, answers=ANSWERS, autocast="bfloat16")
    plain = build_model("hub:" + folder, n_classes=2, answers=ANSWERS)
    assert {p.dtype for p in mixed.model.parameters()} == {torch.float32}
    x = torch.randint(1, 100, (3, 6))
    batch = {"x": x, "attention_mask": torch.ones_like(x), "y": torch.tensor([0, 1, 1])}
    loss, logits = mixed.loss_and_logits(mixed.model, batch)
    _, reference = plain.loss_and_logits(plain.model.eval(), batch)
    assert logits.dtype == torch.float32 and loss.dtype == torch.float32
    # bf16 keeps 8 bits of mantissa: the class logits agree to bf16 rounding, not exactly
    assert not torch.equal(logits, reference)
    torch.testing.assert_close(logits, reference, rtol=0.05, atol=0.05)
    loss.backward()
    grads = [p.grad for p in mixed.model.parameters() if p.grad is not None]
    assert grads and {g.dtype for g in grads} == {torch.float32}
    with pytest.raises(ValueError, match=r"^autocast='float16' is not supported; accepted: bf"):
        build_model("hub:" + folder, n_classes=2, answers=ANSWERS, autocast="float16")


def test_autocast_scenario_trains_federated(folder, tmp_path):
    options = {"answers": ANSWERS, "autocast": "bfloat16"}
    result = run_scenario(_scenario(folder, **{"learner.model_options": options}), tmp_path / "run")
    rounds = result.rounds
    assert len(rounds) == 2 and rounds["loss"].notna().all() and (rounds["bits_up"] > 0).all()
    assert math.isfinite(float(rounds["test_loss"].iloc[-1]))
