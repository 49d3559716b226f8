"""The small networks of FLoRAL (Almansoori et al., arXiv 2410.03497): an MNIST MLP, the
synthetic-task regressors and the CIFAR-10 CNN.

None is pretrained: every weight is drawn from the seed (PyTorch's default init under
``seeded(seed)``), as in the paper, where these models are trained from scratch.

- ``mnist_mlp``: flatten, ``fc1`` 784 -> 200, ReLU, ``head`` 200 -> n (159,010 at n = 10)
- ``synthetic_linear``: ``linear`` 10 -> 3, regression, no head (33)
- ``synthetic_mlp``: ``fc1`` 10 -> 20, ReLU, ``fc2`` 20 -> 1, regression (241)
- ``small_cnn``: ``conv1`` 5x5, pool 2, ``conv2`` 3x3, pool 3, ``fc1`` -> 64, ``head``,
  ReLU after each conv and ``fc1`` (87,178 at 32x32x3, n = 10)
"""

from __future__ import annotations

from collections import OrderedDict

from torch import nn

from wirelessfl.errors import UserError
from wirelessfl.models.bundle import ModelBundle
from wirelessfl.models.losses import image_loss_and_logits, regression_loss_and_logits
from wirelessfl.models.rng import seeded
from wirelessfl.models.standalone import IMAGE_PREDICT, Standalone, build_base_source, sources

__all__ = [
    "build_mnist_mlp",
    "build_small_cnn",
    "build_synthetic_linear",
    "build_synthetic_mlp",
    "mnist_mlp",
    "small_cnn",
    "synthetic_linear",
    "synthetic_mlp",
]


def _positive(**sizes: int) -> None:
    for key, value in sizes.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise UserError(f"{key} must be an integer >= 1, got {value!r}")


def mnist_mlp(in_features: int, hidden: int, n_classes: int) -> nn.Sequential:
    """The ``mnist_mlp`` architecture (PyTorch's default init)."""
    return nn.Sequential(
        OrderedDict(
            flatten=nn.Flatten(),
            fc1=nn.Linear(in_features, hidden),
            act=nn.ReLU(),
            head=nn.Linear(hidden, n_classes),
        )
    )


def synthetic_linear(d_x: int, d_y: int) -> nn.Sequential:
    """The ``synthetic_linear`` architecture (PyTorch's default init)."""
    return nn.Sequential(OrderedDict(linear=nn.Linear(d_x, d_y)))


def synthetic_mlp(d_x: int, d_hidden: int, d_y: int) -> nn.Sequential:
    """The ``synthetic_mlp`` architecture (PyTorch's default init)."""
    return nn.Sequential(
        OrderedDict(fc1=nn.Linear(d_x, d_hidden), act=nn.ReLU(), fc2=nn.Linear(d_hidden, d_y))
    )


def small_cnn(in_channels: int, image_size: int, n_classes: int) -> nn.Sequential:
    """The ``small_cnn`` architecture (PyTorch's default init)."""
    side = ((image_size - 4) // 2 - 2) // 3  # side of conv2's pooled map
    return nn.Sequential(
        OrderedDict(
            conv1=nn.Conv2d(in_channels, 32, 5),
            act1=nn.ReLU(),
            pool1=nn.MaxPool2d(2),
            conv2=nn.Conv2d(32, 64, 3),
            act2=nn.ReLU(),
            pool2=nn.MaxPool2d(3),
            flatten=nn.Flatten(),
            fc1=nn.Linear(64 * side * side, 64),
            act3=nn.ReLU(),
            head=nn.Linear(64, n_classes),
        )
    )


def _standalone(architecture, *args: int) -> Standalone:
    """The rebuild of the network ``architecture(*args)`` without wirelessfl."""
    call = f"{architecture.__name__}({', '.join(str(a) for a in args)})"
    return Standalone(
        imports=("from collections import OrderedDict", "from torch import nn"),
        definitions=sources(architecture) + "\n\n" + build_base_source(f"return {call}"),
        predict=IMAGE_PREDICT,
    )


def build_mnist_mlp(
    *, n_classes: int, seed: int = 0, in_features: int = 784, hidden: int = 200
) -> ModelBundle:
    """Flatten ``(B, 1, 28, 28)`` -> ``fc1`` ``in_features x hidden`` -> ReLU -> ``head``
    ``hidden x n_classes``; logits ``(B, n_classes)``. LoRA target ``fc1``, head ``head``."""
    _positive(in_features=in_features, hidden=hidden)
    with seeded(seed):
        model = mnist_mlp(in_features, hidden, n_classes)
    return ModelBundle(
        model=model,
        target_modules=["fc1"],
        head_modules=["head"],
        kind="image",
        loss_and_logits=image_loss_and_logits,
        info={"pretrained": False, "in_features": in_features, "hidden": hidden},
        standalone=_standalone(mnist_mlp, in_features, hidden, n_classes),
    )


def build_synthetic_linear(
    *, n_classes: int, seed: int = 0, d_x: int = 10, d_y: int = 3
) -> ModelBundle:
    """One ``linear`` layer ``d_x x d_y``: predictions ``(B, d_y)`` from ``(B, d_x)``.

    Regression: ``n_classes`` is ignored. LoRA target ``linear``; no head (the whole layer
    is the shared model plus the adaptors).
    """
    _positive(d_x=d_x, d_y=d_y)
    with seeded(seed):
        model = synthetic_linear(d_x, d_y)
    return ModelBundle(
        model=model,
        target_modules=["linear"],
        head_modules=[],
        kind="regression",
        loss_and_logits=regression_loss_and_logits,
        info={"pretrained": False, "d_x": d_x, "d_y": d_y},
        standalone=_standalone(synthetic_linear, d_x, d_y),
    )


def build_synthetic_mlp(
    *, n_classes: int, seed: int = 0, d_x: int = 10, d_hidden: int = 20, d_y: int = 1
) -> ModelBundle:
    """``fc1`` ``d_x x d_hidden`` -> ReLU -> ``fc2`` ``d_hidden x d_y``: predictions
    ``(B, d_y)``. Regression: ``n_classes`` is ignored. LoRA target ``fc1``, head ``fc2``."""
    _positive(d_x=d_x, d_hidden=d_hidden, d_y=d_y)
    with seeded(seed):
        model = synthetic_mlp(d_x, d_hidden, d_y)
    return ModelBundle(
        model=model,
        target_modules=["fc1"],
        head_modules=["fc2"],
        kind="regression",
        loss_and_logits=regression_loss_and_logits,
        info={"pretrained": False, "d_x": d_x, "d_hidden": d_hidden, "d_y": d_y},
        standalone=_standalone(synthetic_mlp, d_x, d_hidden, d_y),
    )


def build_small_cnn(
    *, n_classes: int, seed: int = 0, in_channels: int = 3, image_size: int = 32
) -> ModelBundle:
    """FLoRAL's CIFAR-10 CNN on ``(B, in_channels, image_size, image_size)``:
    ``conv1`` 5x5 -> 32, ReLU, max-pool 2, ``conv2`` 3x3 -> 64, ReLU, max-pool 3, ``fc1``
    -> 64, ReLU, ``head`` -> ``n_classes``. No padding: the side goes
    ``s -> s - 4 -> (s - 4) // 2 -> ... - 2 -> ... // 3`` (32 -> 28 -> 14 -> 12 -> 4, so
    ``fc1`` takes 64 * 4 * 4 = 1024). LoRA targets ``conv1``, ``conv2``, ``fc1``; head
    ``head``."""
    _positive(in_channels=in_channels, image_size=image_size)
    if image_size < 14:
        raise UserError(f"image_size must be >= 14 for small_cnn, got {image_size}")
    with seeded(seed):
        model = small_cnn(in_channels, image_size, n_classes)
    return ModelBundle(
        model=model,
        target_modules=["conv1", "conv2", "fc1"],
        head_modules=["head"],
        kind="image",
        loss_and_logits=image_loss_and_logits,
        info={"pretrained": False, "in_channels": in_channels, "image_size": image_size},
        standalone=_standalone(small_cnn, in_channels, image_size, n_classes),
    )
