"""Models for the federated LoRA runtime (needs the ``[train]`` extra).

``build_model(name, n_classes=..., seed=..., **options) -> ModelBundle``; ``MODELS`` lists the
names (``tiny_mlp``, ``efficientnet_lite0``, ``minilm``, ``smollm2``, ``vit_random``) and
``hub:<name-or-path>`` loads a transformers classifier. ``check_rank`` validates a LoRA rank
against the adapted layers. Families are imported lazily, on first build.
"""

from wirelessfl.models.base import (
    MODELS,
    ModelBundle,
    build_model,
    check_rank,
    image_loss_and_logits,
    register_model,
    text_loss_and_logits,
)

__all__ = [
    "ModelBundle",
    "MODELS",
    "build_model",
    "check_rank",
    "register_model",
    "image_loss_and_logits",
    "text_loss_and_logits",
]
