"""Models for the federated LoRA runtime (needs the ``[train]`` extra).

``build_model(name, n_classes=..., seed=..., **options) -> ModelBundle``; ``MODELS`` (from
``wirelessfl.registries``) lists the names (``tiny_mlp``, ``efficientnet_lite0``, ``minilm``,
``smollm2``, ``smollm2_instruct``, ``vit_random``, ``bert_random``, and FLoRAL's small
networks ``mnist_mlp``, ``synthetic_linear``, ``synthetic_mlp``, ``small_cnn``) and
``hub:<name-or-path>`` loads a transformers classifier, or a causal LM read through a
verbalizer (``answers=``). ``model_option_names`` lists a model's options; ``check_rank``
validates a LoRA rank against the adapted layers. The loss functions are ``image_loss_and_logits``,
``text_loss_and_logits`` and ``regression_loss_and_logits`` (float targets:
``mean_i 1/2 ||y_hat_i - y_i||^2``).

Registry entries are lazy (``"module:function"``), so importing this package imports neither
transformers nor the EfficientNet package; a family is imported on its first build. A new
family is one module with a ``build_*(*, n_classes, seed, **options) -> ModelBundle``
function plus one line in ``MODELS`` (or ``MODELS.register(name, builder)`` from outside the
package).
"""

from wirelessfl.models.build import build_model, model_option_names
from wirelessfl.models.bundle import ModelBundle, check_rank
from wirelessfl.models.losses import (
    image_loss_and_logits,
    regression_loss_and_logits,
    text_loss_and_logits,
)
from wirelessfl.registries import MODELS

__all__ = [
    "ModelBundle",
    "MODELS",
    "build_model",
    "check_rank",
    "model_option_names",
    "image_loss_and_logits",
    "regression_loss_and_logits",
    "text_loss_and_logits",
]
