"""Model bundles build offline, give (batch, n_classes) logits, wrap with peft, and report
LoRA layer shapes that match what peft actually creates."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
peft = pytest.importorskip("peft")

from wirelessfl.models import MODELS, build_model, check_rank  # noqa: E402

pytestmark = [
    pytest.mark.train,
    pytest.mark.usefixtures("one_torch_thread"),
    # peft 0.21 calls a transformers 5 API that warns about its own deprecation
    pytest.mark.filterwarnings("ignore:.*is_gradient_checkpointing.*:FutureWarning"),
]

R = 4


def lora_factor_shapes(peft_model):
    """(A weight shape, B weight shape) per LoRA layer, in module order."""
    out = []
    for _, mod in peft_model.named_modules():
        if hasattr(mod, "lora_A") and "default" in mod.lora_A:
            out.append(
                (
                    tuple(mod.lora_A["default"].weight.shape),
                    tuple(mod.lora_B["default"].weight.shape),
                )
            )
    return out


def wrap_and_check(bundle, batch, n_classes):
    """Forward, peft wrap, shape agreement, one backward step; returns the peft model."""
    bundle.model.eval()
    with torch.no_grad():
        loss, logits = bundle.loss_and_logits(bundle.model, batch)
    assert logits.shape == (len(batch["y"]), n_classes)
    assert loss.ndim == 0 and torch.isfinite(loss)

    shapes = bundle.layer_shapes(bundle.target_modules)
    model = peft.get_peft_model(
        bundle.model,
        peft.LoraConfig(
            r=R,
            lora_alpha=2 * R,
            target_modules=bundle.target_modules,
            modules_to_save=bundle.head_modules,
        ),
    )
    factors = lora_factor_shapes(model)
    assert len(factors) == len(shapes) > 0
    for (d_in, d_out), (a, b) in zip(shapes, factors, strict=True):
        assert a[0] == R and int(torch.Size(a[1:]).numel()) == d_in, (a, d_in)
        assert b[0] == d_out and b[1] == R, (b, d_out)
    # names still resolve on the wrapped model, same shapes
    assert bundle.layer_shapes() == shapes

    with torch.no_grad():
        _, wrapped_logits = bundle.loss_and_logits(model, batch)
    assert torch.allclose(wrapped_logits, logits, atol=1e-5)  # B = 0 at init
    model.train()
    loss, _ = bundle.loss_and_logits(model, batch)
    loss.backward()
    grads = [n for n, p in model.named_parameters() if p.requires_grad and p.grad is not None]
    assert any("lora_B" in n for n in grads)
    assert any("modules_to_save" in n for n in grads)
    frozen = [n for n, p in model.named_parameters() if not p.requires_grad]
    assert frozen, "base weights should be frozen by peft"
    return model


def test_registry_names():
    assert {"tiny_mlp", "efficientnet_lite0", "minilm", "smollm2", "vit_random"} <= set(MODELS)


def test_registered_builder_is_built_with_its_options_checked():
    from wirelessfl.models import ModelBundle, image_loss_and_logits

    def build_linear(*, n_classes, seed=0, width=4):
        model = torch.nn.Sequential(
            torch.nn.Linear(width, width), torch.nn.Linear(width, n_classes)
        )
        return ModelBundle(model, ["0"], ["1"], "image", image_loss_and_logits)

    MODELS.register("test_linear", build_linear)
    try:
        b = build_model("test_linear", n_classes=3, width=5)
        assert b.name == "test_linear" and b.layer_shapes() == [(5, 5)]
        with pytest.raises(ValueError, match="unknown option 'depth'.*width"):
            build_model("test_linear", n_classes=3, depth=2)
    finally:
        MODELS.unregister("test_linear")


def test_tiny_mlp_on_digits_batch():
    b = build_model("tiny_mlp", n_classes=10, seed=0)
    assert b.kind == "image" and b.target_modules == ["fc1", "fc2"] and b.head_modules == ["head"]
    batch = {"x": torch.rand(5, 1, 8, 8), "y": torch.tensor([0, 1, 2, 3, 9])}
    wrap_and_check(b, batch, 10)
    again = build_model("tiny_mlp", n_classes=10, seed=0).model
    other = build_model("tiny_mlp", n_classes=10, seed=1).model
    assert torch.equal(again.fc1.weight, build_model("tiny_mlp", n_classes=10).model.fc1.weight)
    assert not torch.equal(again.fc1.weight, other.fc1.weight)


def test_seeded_build_leaves_global_rng_alone():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    build_model("tiny_mlp", n_classes=3, seed=7)
    assert torch.equal(torch.rand(3), expected)


def test_efficientnet_swap_keeps_outputs_identical():
    from wirelessfl.models.efficientnet import load_backbone

    plain = load_backbone(swap=False)
    swapped = load_backbone(swap=True)
    x = torch.randn(2, 3, 64, 64)
    with torch.no_grad():
        assert torch.allclose(plain(x), swapped(x), atol=1e-6)
    pointwise = [
        m
        for m in swapped.modules()
        if isinstance(m, torch.nn.Conv2d) and m.kernel_size == (1, 1) and m.groups == 1
    ]
    assert pointwise and all(type(m) is torch.nn.Conv2d for m in pointwise)


def test_efficientnet_lite0_bundle():
    b = build_model("efficientnet_lite0", n_classes=10, seed=0)
    assert b.kind == "image" and b.head_modules == ["_fc"]
    assert b.target_modules[-1] == "_conv_head"
    assert all(int(n.split(".")[1]) >= 12 for n in b.target_modules if n.startswith("_blocks"))
    batch = {"x": torch.randn(3, 3, 32, 32), "y": torch.tensor([1, 2, 3])}
    wrap_and_check(b, batch, 10)
    full = build_model("efficientnet_lite0", n_classes=10, n_blocks=None)
    assert len(full.target_modules) > len(b.target_modules)
    with pytest.raises(ValueError, match="n_blocks=17"):
        build_model("efficientnet_lite0", n_classes=10, n_blocks=17)


def test_minilm_bundle_with_real_tokens():
    from wirelessfl.data import load_tokenizer

    b = build_model("minilm", n_classes=2, seed=0)
    assert b.kind == "text" and b.target_modules == ["query", "value"]
    assert b.layer_shapes() == [(384, 384)] * 12
    enc = load_tokenizer("minilm")(
        ["a moving, funny film", "dull"],
        padding="max_length",
        max_length=16,
        truncation=True,
        return_tensors="pt",
    )
    batch = {
        "x": enc["input_ids"],
        "attention_mask": enc["attention_mask"],
        "y": torch.tensor([1, 0]),
    }
    wrap_and_check(b, batch, 2)


def test_vit_random_tiny_config():
    b = build_model(
        "vit_random",
        n_classes=5,
        seed=0,
        hidden_size=32,
        num_layers=2,
        num_heads=4,
        image_size=16,
        patch_size=4,
    )
    assert b.kind == "image" and b.head_modules == ["classifier"]
    assert b.info["pretrained"] is False
    assert b.layer_shapes() == [(32, 32)] * 4
    wrap_and_check(b, {"x": torch.randn(2, 3, 16, 16), "y": torch.tensor([0, 4])}, 5)


def test_smollm2_from_an_existing_fp32_cache(tmp_path):
    """The cache-folder path of the smollm2 family, with a tiny Llama standing in for the
    517 MB de-quantised SmolLM2 (the real GGUF is exercised in test_models_smollm2.py)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(
        vocab_size=100,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        eos_token_id=2,
        pad_token_id=None,
    )
    LlamaForCausalLM(cfg).save_pretrained(str(tmp_path))
    b = build_model("smollm2", n_classes=3, seed=0, cache_dir=str(tmp_path))
    assert b.kind == "text" and b.head_modules == ["score"]
    assert b.model.config.pad_token_id == 2
    assert b.layer_shapes() == [(32, 32), (32, 16)] * 2  # q_proj, v_proj (2 KV heads)
    ids = torch.randint(3, 100, (2, 7))
    mask = torch.ones_like(ids)
    ids[1, 5:] = 2
    mask[1, 5:] = 0
    wrap_and_check(b, {"x": ids, "attention_mask": mask, "y": torch.tensor([0, 2])}, 3)


def test_unknown_model_option_and_target_are_one_line():
    with pytest.raises(ValueError, match="unknown model 'resnet'.*tiny_mlp") as err:
        build_model("resnet", n_classes=2)
    assert "\n" not in str(err.value) and str(err.value).endswith(", hub:<name-or-path>")
    with pytest.raises(ValueError, match="unknown option 'hiden'.*hidden"):
        build_model("tiny_mlp", n_classes=2, hiden=3)
    with pytest.raises(ValueError, match="target module 'qkv'.*accepted: fc1, fc2") as err:
        build_model("tiny_mlp", n_classes=2, target_modules=["fc1", "qkv"])
    assert "\n" not in str(err.value)
    b = build_model("tiny_mlp", n_classes=2, target_modules=["fc2"])
    assert b.target_modules == ["fc2"] and b.layer_shapes() == [(64, 64)]
    with pytest.raises(ValueError, match="head"):
        b.layer_shapes(["head"])  # the head is trained in full, never a LoRA target


def test_check_rank():
    b = build_model("tiny_mlp", n_classes=2, hidden=16)
    assert check_rank(b, 16) == 16
    with pytest.raises(ValueError, match=r"rank=17 .*1\.\.16") as err:
        check_rank(b, 17)
    assert "\n" not in str(err.value)
    with pytest.raises(ValueError, match="rank=0"):
        check_rank(b, 0)
    assert b.lora_param_count(4) == 4 * (64 + 16) + 4 * (16 + 16)


def test_digits_tiny_mlp_lora_pipeline_learns():
    """Data, partition and model fit together: LoRA + head on one client's digits shard."""
    import numpy as np

    from wirelessfl.data import load_dataset, partition

    data = load_dataset("digits", seed=0)
    b = build_model("tiny_mlp", n_classes=data.n_classes, seed=0)
    assert b.kind == data.kind
    part = partition("dirichlet", data.train.labels, 4, seed=0, alpha=1.0)
    client = data.train.subset(part.indices[0])
    model = peft.get_peft_model(
        b.model,
        peft.LoraConfig(
            r=8, lora_alpha=16, target_modules=b.target_modules, modules_to_save=b.head_modules
        ),
    )
    opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    rng = np.random.default_rng(0)

    def mean_loss():
        with torch.no_grad():
            return float(b.loss_and_logits(model, client.batch(np.arange(len(client))))[0])

    before = mean_loss()
    for _ in range(5):
        for batch in client.batches(32, rng):
            loss, _ = b.loss_and_logits(model, batch)
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert mean_loss() < 0.5 * before
