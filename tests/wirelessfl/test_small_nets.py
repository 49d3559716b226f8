"""FLoRAL's small networks: shapes, parameter counts, LoRA layers, and the regression loss."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
peft = pytest.importorskip("peft")

from wirelessfl.errors import UserError  # noqa: E402
from wirelessfl.models import build_model  # noqa: E402
from wirelessfl.models.losses import regression_loss_and_logits  # noqa: E402

pytestmark = pytest.mark.train


def _n_params(bundle):
    return sum(p.numel() for p in bundle.model.parameters())


@pytest.mark.parametrize(
    "name,options,x_shape,out,n_params,kind,shapes",
    [
        ("mnist_mlp", {}, (2, 1, 28, 28), 10, 159_010, "image", [(784, 200)]),
        ("synthetic_linear", {}, (2, 10), 3, 33, "regression", [(10, 3)]),
        ("synthetic_mlp", {}, (2, 10), 1, 241, "regression", [(10, 20)]),
        (
            "small_cnn",
            {},
            (2, 3, 32, 32),
            10,
            87_178,
            "image",
            [(3 * 25, 32), (32 * 9, 64), (1024, 64)],
        ),
        (
            "small_cnn",
            {"in_channels": 1, "image_size": 28},
            (2, 1, 28, 28),
            10,
            None,
            "image",
            None,
        ),
    ],
)
def test_shapes_counts_and_lora_layers(name, options, x_shape, out, n_params, kind, shapes):
    b = build_model(name, n_classes=10, seed=0, **options)
    assert b.kind == kind and b.info["pretrained"] is False
    assert b.model(torch.randn(*x_shape)).shape == (2, out)
    if n_params is not None:
        assert _n_params(b) == n_params
    if shapes is not None:
        assert b.layer_shapes() == shapes


def test_targets_heads_and_seeds():
    assert build_model("mnist_mlp", n_classes=10).target_modules == ["fc1"]
    assert build_model("small_cnn", n_classes=10).target_modules == ["conv1", "conv2", "fc1"]
    mlp = build_model("synthetic_mlp", n_classes=1)
    assert mlp.target_modules == ["fc1"] and mlp.head_modules == ["fc2"]
    lin = build_model("synthetic_linear", n_classes=1)
    assert lin.head_modules == [] and lin.target_names() == ["linear"]
    a, b = build_model("small_cnn", n_classes=10, seed=4), build_model("small_cnn", n_classes=10)
    assert torch.equal(
        a.model.conv1.weight, build_model("small_cnn", n_classes=10, seed=4).model.conv1.weight
    )
    assert not torch.equal(a.model.conv1.weight, b.model.conv1.weight)
    with pytest.raises(UserError, match="image_size must be >= 14 for small_cnn, got 13"):
        build_model("small_cnn", n_classes=10, image_size=13)


def test_regression_loss_is_half_mean_squared_norm():
    b = build_model("synthetic_linear", n_classes=1, seed=1)
    x, y = torch.randn(7, 10), torch.randn(7, 3)
    loss, pred = regression_loss_and_logits(b.model, {"x": x, "y": y})
    w = b.model.linear.weight.detach().numpy().astype(np.float64)
    bias = b.model.linear.bias.detach().numpy().astype(np.float64)
    by_hand = x.numpy() @ w.T + bias
    expected = 0.5 * np.mean(np.sum((by_hand - y.numpy()) ** 2, axis=1))
    np.testing.assert_allclose(pred.detach().numpy(), by_hand, rtol=1e-5, atol=1e-6)
    assert loss.item() == pytest.approx(expected, rel=1e-5)
    # d_y = 1 with a 1-D y: no (B, B) broadcast
    one = build_model("synthetic_mlp", n_classes=1, seed=0)
    y1 = torch.randn(7)
    loss1, pred1 = regression_loss_and_logits(one.model, {"x": x, "y": y1})
    assert loss1.item() == pytest.approx(0.5 * ((pred1[:, 0] - y1) ** 2).mean().item(), rel=1e-6)


def test_headless_regressor_trains_lora_under_peft():
    b = build_model("synthetic_linear", n_classes=1, seed=0)
    model = peft.get_peft_model(
        b.model,
        peft.LoraConfig(r=2, target_modules=b.target_modules, modules_to_save=b.head_modules),
    )
    loss, _ = b.loss_and_logits(model, {"x": torch.randn(4, 10), "y": torch.randn(4, 3)})
    loss.backward()
    trained = {n for n, p in model.named_parameters() if p.requires_grad}
    assert trained and all("lora_" in n for n in trained)
    assert all(p.grad is not None for n, p in model.named_parameters() if "lora_B" in n)
