"""``vit_random``: a ViT built from a ``ViTConfig`` with **random weights**.

No PyPI package ships ViT weights and no machine here reaches a hub, so this exists for
throughput and scaling work (the SOFT paper's ViT-Base shapes: 768 hidden, 12 layers,
12 heads, 224 px, 16 px patches). **Never report runs of this model as pretrained ViT-Base
results**: its accuracy says nothing about fine-tuning a pretrained ViT. With network access,
use ``hub:google/vit-base-patch16-224-in21k`` instead.
"""

from __future__ import annotations

from wirelessfl.data.assets import offline_env
from wirelessfl.errors import UserError
from wirelessfl.models.bundle import ModelBundle
from wirelessfl.models.layers import detect_attention_targets
from wirelessfl.models.losses import image_loss_and_logits
from wirelessfl.models.rng import seeded
from wirelessfl.models.standalone import IMAGE_PREDICT, from_config_standalone

__all__ = ["build_vit_random"]


def build_vit_random(
    *,
    n_classes: int,
    seed: int = 0,
    hidden_size: int = 768,
    num_layers: int = 12,
    num_heads: int = 12,
    intermediate_size: int | None = None,
    image_size: int = 224,
    patch_size: int = 16,
    num_channels: int = 3,
) -> ModelBundle:
    """``ViTForImageClassification`` with random init from ``seed`` (NOT pretrained).

    Defaults are ViT-Base shapes (86 M parameters); tests use a tiny config.
    ``intermediate_size`` defaults to ``4 * hidden_size``. Input ``(B, num_channels,
    image_size, image_size)``. LoRA targets: the attention query / value projections
    (``q_proj``, ``v_proj`` in transformers 5; ``query``, ``value`` in 4.x); head
    ``classifier``.
    """
    if hidden_size % num_heads:
        raise UserError(f"hidden_size={hidden_size} must be a multiple of num_heads={num_heads}")
    if image_size % patch_size:
        raise UserError(f"image_size={image_size} must be a multiple of patch_size={patch_size}")
    if min(hidden_size, num_layers, num_heads, image_size, patch_size, num_channels) < 1:
        raise UserError(
            "hidden_size, num_layers, num_heads, image_size, patch_size and "
            "num_channels must all be >= 1"
        )
    offline_env()
    from transformers import ViTConfig, ViTForImageClassification

    config = ViTConfig(
        hidden_size=hidden_size,
        num_hidden_layers=num_layers,
        num_attention_heads=num_heads,
        intermediate_size=intermediate_size or 4 * hidden_size,
        image_size=image_size,
        patch_size=patch_size,
        num_channels=num_channels,
        num_labels=n_classes,
    )
    with seeded(seed):
        model = ViTForImageClassification(config)
    model.train()
    return ModelBundle(
        model=model,
        target_modules=detect_attention_targets(model) or ["query", "value"],
        head_modules=["classifier"],
        kind="image",
        loss_and_logits=image_loss_and_logits,
        info={
            "pretrained": False,
            "warning": "random init: never report as pretrained ViT",
            "hidden_size": hidden_size,
            "num_layers": num_layers,
            "image_size": image_size,
            "patch_size": patch_size,
        },
        standalone=from_config_standalone(model, "AutoModelForImageClassification", IMAGE_PREDICT),
    )
