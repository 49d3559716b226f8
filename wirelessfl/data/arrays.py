"""The in-memory containers every loader returns: :class:`ArrayDataset` and :class:`TaskData`."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from wirelessfl.errors import UserError

__all__ = ["KINDS", "ArrayDataset", "TaskData"]

#: Data kinds; a model bundle's ``kind`` must equal the data's.
KINDS = ("image", "text", "lm", "regression")


@dataclass
class ArrayDataset:
    """A data set held as tensors.

    Attributes:
        x: Images: float32 ``(n, C, H, W)``, already normalised. Text: token ids int64
            ``(n, L)``. Regression: float32 features ``(n, d_x)``.
        y: Labels, int64 ``(n,)``; or regression targets, float32 ``(n, d_y)`` (a floating
            ``y`` is kept float, a 1-D one becomes ``(n, 1)``).
        attention_mask: Text only: int64 ``(n, L)``, 1 on real tokens, 0 on padding; ``None``
            for images.
    """

    x: torch.Tensor
    y: torch.Tensor
    attention_mask: torch.Tensor | None = None

    def __post_init__(self) -> None:
        if self.y.is_floating_point():
            self.y = self.y.to(torch.float32)
            if self.y.ndim == 1:
                self.y = self.y.unsqueeze(1)
            if self.y.ndim != 2:
                raise UserError(f"float y must be (n,) or (n, d_y), got {tuple(self.y.shape)}")
        else:
            self.y = self.y.to(torch.int64)
            if self.y.ndim != 1:
                raise UserError(f"y must be 1-D (n,), got shape {tuple(self.y.shape)}")
        if self.x.shape[0] != self.y.shape[0]:
            raise UserError(f"x has {self.x.shape[0]} rows but y has {self.y.shape[0]}")
        if self.attention_mask is not None and self.attention_mask.shape != self.x.shape:
            raise UserError(
                f"attention_mask shape {tuple(self.attention_mask.shape)} != x shape "
                f"{tuple(self.x.shape)}"
            )

    def __len__(self) -> int:
        return int(self.y.shape[0])

    @property
    def labels(self) -> np.ndarray:
        """Labels as a numpy int64 array ``(n,)`` (for partitioners); all zeros (one
        "class") for regression targets."""
        if self.y.is_floating_point():
            return np.zeros(len(self), dtype=np.int64)
        return self.y.numpy()

    def subset(self, indices: Sequence[int] | np.ndarray | torch.Tensor) -> ArrayDataset:
        """The rows ``indices`` (in that order) as a new data set (tensors are copied)."""
        idx = torch.as_tensor(np.asarray(indices, dtype=np.int64))
        mask = None if self.attention_mask is None else self.attention_mask[idx]
        return ArrayDataset(self.x[idx], self.y[idx], mask)

    def to(self, device: str | torch.device) -> ArrayDataset:
        """A copy on ``device``."""
        mask = None if self.attention_mask is None else self.attention_mask.to(device)
        return ArrayDataset(self.x.to(device), self.y.to(device), mask)

    def batch(self, indices: torch.Tensor | np.ndarray | Sequence[int]) -> dict[str, torch.Tensor]:
        """One batch dict for ``indices``: keys ``x``, ``y`` and, for text, ``attention_mask``."""
        if isinstance(indices, torch.Tensor):
            idx = indices.to(device=self.y.device, dtype=torch.int64)
        else:
            idx = torch.as_tensor(np.asarray(indices, dtype=np.int64)).to(self.y.device)
        out = {"x": self.x[idx], "y": self.y[idx]}
        if self.attention_mask is not None:
            out["attention_mask"] = self.attention_mask[idx]
        return out

    def batches(
        self,
        batch_size: int,
        generator: np.random.Generator | torch.Generator | None = None,
        shuffle: bool = True,
        *,
        drop_last: bool = False,
    ) -> Iterator[dict[str, torch.Tensor]]:
        """Iterate over dict batches (see :meth:`batch`).

        Args:
            batch_size: Samples per batch (>= 1); the last batch may be smaller.
            generator: Shuffles the order; required with ``shuffle=True`` (numpy
                ``Generator`` or ``torch.Generator``), so every order is reproducible.
            shuffle: ``False`` keeps the stored order.
            drop_last: Skip a last batch smaller than ``batch_size``.
        """
        if batch_size < 1:
            raise UserError(f"batch_size must be >= 1, got {batch_size}")
        n = len(self)
        if shuffle:
            if isinstance(generator, np.random.Generator):
                order = torch.as_tensor(generator.permutation(n))
            elif isinstance(generator, torch.Generator):
                order = torch.randperm(n, generator=generator)
            else:
                raise UserError(
                    "batches(shuffle=True) needs generator= a numpy Generator or torch.Generator"
                )
        else:
            order = torch.arange(n)
        stop = n - n % batch_size if drop_last else n
        for start in range(0, stop, batch_size):
            yield self.batch(order[start : start + batch_size])


@dataclass
class TaskData:
    """A learning task: train and test sets plus what a model needs to know about them.

    Attributes:
        train: The training split.
        test: The test split.
        n_classes: Number of classes (labels are ``0 .. n_classes-1``); 1 (unused) for
            regression.
        kind: ``"image"``, ``"text"``, ``"lm"`` or ``"regression"``; must equal the model
            bundle's ``kind``.
        name: The registry name the data came from.
        train_groups: For data with a natural split key (e.g. the movie of a review): one
            int64 key per training sample ``(n_train,)``, for the ``by_key`` partitioner;
            for data built per client (the FLoRAL tasks) the client id of every sample, for
            the ``by_client`` partitioner; ``None`` otherwise.
        test_groups: The same for the test split ``(n_test,)``.
        class_names: Label names when known.
        info: Loader settings worth recording (image size, tokenizer, max length, ...).
        client_clusters: Data built per client only: the true cluster of every client,
            int64 ``(n_clients,)``; ``None`` otherwise.
    """

    train: ArrayDataset
    test: ArrayDataset
    n_classes: int
    kind: str
    name: str
    train_groups: np.ndarray | None = None
    test_groups: np.ndarray | None = None
    class_names: list[str] | None = None
    info: dict[str, Any] = field(default_factory=dict)
    client_clusters: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise UserError(f"kind must be one of {KINDS}, got {self.kind!r}")
        for split, groups in (("train", self.train_groups), ("test", self.test_groups)):
            ds = getattr(self, split)
            if groups is not None and len(groups) != len(ds):
                raise UserError(f"{split}_groups has {len(groups)} keys for {len(ds)} samples")
        if self.client_clusters is not None:
            self.client_clusters = np.asarray(self.client_clusters, dtype=np.int64)
