"""``hub:`` models round-trip through a ``save_pretrained`` folder the test writes itself."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
peft = pytest.importorskip("peft")
transformers = pytest.importorskip("transformers")

from wirelessfl.models import build_model, check_rank  # noqa: E402

pytestmark = [
    pytest.mark.train,
    pytest.mark.usefixtures("one_torch_thread"),
    pytest.mark.filterwarnings("ignore:.*is_gradient_checkpointing.*:FutureWarning"),
]


def _lora_count(model):
    return sum(1 for _, m in model.named_modules() if hasattr(m, "lora_A") and m.lora_A)


def test_hub_image_model_round_trip(tmp_path):
    cfg = transformers.ViTConfig(
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        image_size=16,
        patch_size=4,
        num_labels=3,
    )
    transformers.ViTForImageClassification(cfg).save_pretrained(str(tmp_path))
    b = build_model("hub:" + str(tmp_path), n_classes=7, seed=0)
    assert b.kind == "image" and b.head_modules == ["classifier"]
    assert b.info["model_type"] == "vit"
    with torch.no_grad():
        loss, logits = b.loss_and_logits(
            b.model.eval(), {"x": torch.randn(2, 3, 16, 16), "y": torch.tensor([0, 6])}
        )
    assert logits.shape == (2, 7) and torch.isfinite(loss)
    shapes = b.layer_shapes()
    assert shapes == [(32, 32)] * 4
    m = peft.get_peft_model(
        b.model,
        peft.LoraConfig(r=4, target_modules=b.target_modules, modules_to_save=b.head_modules),
    )
    assert _lora_count(m) == len(shapes)
    assert check_rank(b, 4) == 32


def test_hub_text_model_round_trip(tmp_path):
    cfg = transformers.BertConfig(
        vocab_size=120,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        num_labels=2,
    )
    transformers.BertForSequenceClassification(cfg).save_pretrained(str(tmp_path))
    b = build_model("hub:" + str(tmp_path), n_classes=4, seed=1)
    assert b.kind == "text" and b.target_modules == ["query", "value"]
    head = b.model.classifier.weight.detach().clone()
    assert torch.equal(
        build_model("hub:" + str(tmp_path), n_classes=4, seed=1).model.classifier.weight, head
    )
    assert not torch.equal(
        build_model("hub:" + str(tmp_path), n_classes=4, seed=2).model.classifier.weight, head
    )
    ids = torch.randint(0, 120, (3, 9))
    with torch.no_grad():
        _, logits = b.loss_and_logits(
            b.model.eval(),
            {"x": ids, "attention_mask": torch.ones_like(ids), "y": torch.tensor([0, 1, 3])},
        )
    assert logits.shape == (3, 4)
    m = peft.get_peft_model(
        b.model,
        peft.LoraConfig(r=2, target_modules=b.target_modules, modules_to_save=b.head_modules),
    )
    assert _lora_count(m) == 4


def test_hub_target_override_and_errors(tmp_path):
    cfg = transformers.BertConfig(
        vocab_size=50,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
    )
    transformers.BertForSequenceClassification(cfg).save_pretrained(str(tmp_path))
    b = build_model("hub:" + str(tmp_path), n_classes=2, target_modules=["key", "dense"])
    # key + attention.output / intermediate / output / pooler dense
    assert len(b.layer_shapes()) == 1 + 4
    with pytest.raises(ValueError, match="target module 'wq'.*query"):
        build_model("hub:" + str(tmp_path), n_classes=2, target_modules=["wq"])
    with pytest.raises(ValueError, match="task='audio'"):
        build_model("hub:" + str(tmp_path), n_classes=2, task="audio")
    with pytest.raises(ValueError, match="needs a name or path"):
        build_model("hub:", n_classes=2)
