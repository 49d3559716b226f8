"""``tiny_mlp``: a small random-init MLP, the test fixture for fast runs on ``digits``.

Not a pretrained model: its weights are drawn from the seed. Use it for CI-sized federated
runs and unit tests, never as a stand-in for a real backbone in reported results.
"""

from __future__ import annotations

import torch
from torch import nn

from wirelessfl.errors import UserError
from wirelessfl.models.bundle import ModelBundle
from wirelessfl.models.losses import image_loss_and_logits
from wirelessfl.models.rng import seeded
from wirelessfl.models.standalone import IMAGE_PREDICT, Standalone, build_base_source, sources

__all__ = ["TinyMLP", "build_tiny_mlp"]


class TinyMLP(nn.Module):
    """``flatten -> fc1 -> ReLU -> fc2 -> ReLU -> head``.

    Input: any ``(B, ...)`` tensor with ``in_features`` values per sample (digits:
    ``(B, 1, 8, 8)``). Output: logits ``(B, n_classes)``.
    """

    def __init__(self, in_features: int, hidden: int, n_classes: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.head = nn.Linear(hidden, n_classes)
        self.act = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.flatten(1)
        return self.head(self.act(self.fc2(self.act(self.fc1(x)))))


def build_tiny_mlp(
    *, n_classes: int, seed: int = 0, in_features: int = 64, hidden: int = 64
) -> ModelBundle:
    """``in_features`` (default 64 = digits 8x8) -> ``hidden`` -> ``hidden`` -> ``n_classes``,
    random init from ``seed``. LoRA targets ``fc1``, ``fc2``; head ``head``."""
    if in_features < 1 or hidden < 1:
        raise UserError(f"in_features and hidden must be >= 1, got {in_features}, {hidden}")
    with seeded(seed):
        model = TinyMLP(in_features, hidden, n_classes)
    return ModelBundle(
        model=model,
        target_modules=["fc1", "fc2"],
        head_modules=["head"],
        kind="image",
        loss_and_logits=image_loss_and_logits,
        info={"pretrained": False, "in_features": in_features, "hidden": hidden},
        standalone=Standalone(
            imports=("from torch import nn",),
            definitions=sources(TinyMLP)
            + "\n\n"
            + build_base_source(f"return TinyMLP({in_features}, {hidden}, {n_classes})"),
            predict=IMAGE_PREDICT,
        ),
    )
