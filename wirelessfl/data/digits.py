"""``digits``: scikit-learn's 1,797 handwritten digits, 8x8 grey images in [0, 1]."""

from __future__ import annotations

import torch

from wirelessfl.data.arrays import ArrayDataset, TaskData
from wirelessfl.data.splits import split_generator, stratified_split

__all__ = ["load_digits"]


def load_digits(*, seed: int, test_fraction: float = 0.2) -> TaskData:
    """scikit-learn ``load_digits`` as float32 images ``(n, 1, 8, 8)`` in [0, 1].

    Args:
        seed: Seeds the split.
        test_fraction: Stratified share held out for test (default 0.2, i.e. 360 of 1,797).

    Returns:
        A 10-class ``"image"`` task.
    """
    from sklearn.datasets import load_digits as sklearn_digits

    d = sklearn_digits()
    x = torch.as_tensor(d.images, dtype=torch.float32).unsqueeze(1) / 16.0
    y = torch.as_tensor(d.target, dtype=torch.int64)
    tr, te = stratified_split(d.target, test_fraction, split_generator(seed, "digits"))
    full = ArrayDataset(x, y)
    return TaskData(
        train=full.subset(tr),
        test=full.subset(te),
        n_classes=10,
        kind="image",
        name="digits",
        class_names=[str(i) for i in range(10)],
        info={"image_size": 8, "channels": 1, "scale": "[0, 1]"},
    )
