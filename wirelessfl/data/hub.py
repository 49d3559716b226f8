"""``hub:<name-or-path>``: a Hugging Face ``datasets`` data set, from a folder or a hub."""

from __future__ import annotations

import pathlib
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from wirelessfl.data.arrays import ArrayDataset, TaskData
from wirelessfl.data.assets import load_tokenizer, offline_env
from wirelessfl.data.preprocess import normalise_pixels, tokenize
from wirelessfl.data.splits import split_generator, stratified_split
from wirelessfl.errors import UserError
from wirelessfl.registries import HUB_PREFIX

__all__ = ["load_hub"]

_LABEL_COLUMNS = ("label", "labels", "fine_label", "coarse_label", "target")
_IMAGE_COLUMNS = ("img", "image", "pixel_values")
_TEXT_COLUMNS = ("text", "sentence", "content", "review", "document")


def _pick_column(
    columns: Sequence[str], wanted: str | None, candidates: Sequence[str], what: str
) -> str | None:
    """``wanted`` if it is a column (else ``UserError``), or the first candidate present."""
    if wanted is not None:
        if wanted not in columns:
            raise UserError(f"{what}={wanted!r} is not a column; accepted: {', '.join(columns)}")
        return wanted
    return next((c for c in candidates if c in columns), None)


def _image_to_tensor(value: Any, channels: int | None) -> torch.Tensor:
    """One PIL image or array (H, W[, C]) / (C, H, W) -> float32 ``(C, H, W)`` in 0..255."""
    if hasattr(value, "convert"):  # PIL image
        if channels == 3 and value.mode != "RGB":
            value = value.convert("RGB")
        elif channels == 1 and value.mode != "L":
            value = value.convert("L")
        elif value.mode not in ("RGB", "L"):
            value = value.convert("RGB")
    a = np.asarray(value)
    scale = 255.0 if a.dtype.kind == "f" and a.size and float(np.nanmax(a)) <= 1.0 else 1.0
    t = torch.as_tensor(np.array(a, dtype=np.float32)) * scale
    if t.ndim == 2:
        t = t.unsqueeze(0)
    elif t.ndim == 3 and t.shape[-1] in (1, 3, 4) and t.shape[0] not in (1, 3, 4):
        t = t.permute(2, 0, 1)
    if t.ndim != 3:
        raise UserError(f"cannot read an image of shape {tuple(a.shape)}")
    if t.shape[0] == 4:
        t = t[:3]
    if channels == 3 and t.shape[0] == 1:
        t = t.repeat(3, 1, 1)
    elif channels == 1 and t.shape[0] == 3:
        t = t.mean(0, keepdim=True)
    return t


def _images_to_tensor(
    values: Sequence[Any], size: tuple[int, int] | None, channels: int | None
) -> torch.Tensor:
    """Images with 0..255 (or 0..1 float) pixels -> normalised float32 ``(n, C, H, W)``.

    Args:
        values: ``n`` PIL images or arrays (H, W[, C]) / (C, H, W).
        size: ``(H, W)`` every image is resized to (bilinear); ``None``: the first image's.
        channels: 3 (RGB), 1 (grey) or ``None`` (as stored, alpha dropped).

    Returns:
        ``(x - 127) / 128`` of the pixels, like ``mnist5k``.
    """
    out = []
    target = size
    for v in values:
        t = _image_to_tensor(v, channels)
        if target is None:
            target = (int(t.shape[1]), int(t.shape[2]))
        if tuple(t.shape[1:]) != target:
            t = torch.nn.functional.interpolate(
                t.unsqueeze(0), size=target, mode="bilinear", align_corners=False
            )[0]
        out.append(t)
    if not out:
        raise UserError("the data set split has no images")
    return normalise_pixels(torch.stack(out)).contiguous()


def _open(spec: str, config: str | None, train_split: str, test_split: str) -> tuple[Any, Any]:
    """The ``(train, test)`` ``datasets.Dataset`` of ``spec``; test is ``None`` when absent."""
    offline_env()
    import datasets as hfds

    path = pathlib.Path(spec).expanduser()
    saved = path.is_dir() and any((path / f).exists() for f in ("dataset_dict.json", "state.json"))
    # a save_to_disk folder; anything else (hub id, raw local files) goes to load_dataset
    ds = hfds.load_from_disk(str(path)) if saved else hfds.load_dataset(spec, config)
    if not isinstance(ds, hfds.DatasetDict):
        return ds, None
    if train_split not in ds:
        raise UserError(
            f"train_split={train_split!r} not in the data set; accepted: {', '.join(ds)}"
        )
    return ds[train_split], ds.get(test_split)


def load_hub(
    spec: str,
    *,
    seed: int,
    config: str | None = None,
    train_split: str = "train",
    test_split: str = "test",
    test_fraction: float = 0.2,
    kind: str | None = None,
    image_column: str | None = None,
    label_column: str | None = None,
    text_column: str | None = None,
    image_size: int | None = None,
    channels: int | None = 3,
    max_length: int = 64,
    tokenizer: str | Any = "minilm",
) -> TaskData:
    """A ``datasets`` data set as an image or text task.

    ``spec`` is a local folder written by ``save_to_disk`` (read with ``load_from_disk``), or
    anything else ``datasets.load_dataset(spec, config)`` reads (raw local files, or a hub
    name: that needs network access and ``HF_HUB_OFFLINE=0``; offline is the default, see
    ``assets.offline_env``). Everything is held in memory as float32: 50,000 images at 224 px
    take about 30 GB, so pick a smaller ``image_size`` or ``max_train`` on small hosts.
    Example: ``load_dataset("hub:cifar100", image_size=224, label_column="fine_label")``.

    Args:
        spec: Folder, files or hub name.
        seed: Seeds the split when the data set has no ``test_split``.
        config: The ``datasets`` configuration name.
        train_split: Split used for training.
        test_split: Split used for test; when missing, a stratified ``test_fraction`` of the
            train split is held out.
        test_fraction: See ``test_split``.
        kind: ``"image"`` or ``"text"``; default ``"image"`` when an image column exists.
        image_column: Default: the first of ``img``, ``image``, ``pixel_values``.
        label_column: Default: the first of ``label``, ``labels``, ``fine_label``, ...
        text_column: Default: the first of ``text``, ``sentence``, ``content``, ...
        image_size: Side in pixels every image is resized to (default: the first image's).
        channels: Image channels (default 3; 1 for grey; ``None`` as stored).
        max_length: Tokens per text, padded / truncated.
        tokenizer: A ``load_tokenizer`` name or a tokenizer object.

    Returns:
        The task, named ``"hub:" + spec``; images ``(n, C, H, W)`` normalised like
        ``mnist5k``, texts int64 ``(n, max_length)``.
    """
    train_ds, test_ds = _open(spec, config, train_split, test_split)
    columns = list(train_ds.column_names)
    label_col = _pick_column(columns, label_column, _LABEL_COLUMNS, "label_column")
    if label_col is None:
        raise UserError(
            f"no label column found; name one with label_column= from: {', '.join(columns)}"
        )
    image_col = _pick_column(columns, image_column, _IMAGE_COLUMNS, "image_column")
    text_col = _pick_column(columns, text_column, _TEXT_COLUMNS, "text_column")
    if kind is None:
        kind = "image" if image_col is not None else "text" if text_col is not None else None
    if kind not in ("image", "text"):
        raise UserError(
            f"cannot tell the data kind (columns: {', '.join(columns)}); pass "
            f"kind='image' or 'text' with image_column= or text_column="
        )
    feature_col = image_col if kind == "image" else text_col
    if feature_col is None:
        raise UserError(
            f"no {kind} column found; name one with {kind}_column= from: {', '.join(columns)}"
        )

    train_labels = np.asarray(train_ds[label_col], dtype=np.int64)
    if test_ds is None:
        rng = split_generator(seed, HUB_PREFIX + spec)
        tr, te = stratified_split(train_labels, test_fraction, rng)
        test_ds = train_ds.select(te)
        train_ds = train_ds.select(tr)
        train_labels = train_labels[tr]
    test_labels = np.asarray(test_ds[label_col], dtype=np.int64)

    feat = train_ds.features.get(label_col)
    class_names = list(feat.names) if hasattr(feat, "names") else None
    n_classes = (
        len(class_names)
        if class_names
        else int(max(train_labels.max(initial=0), test_labels.max(initial=0))) + 1
    )

    info: dict[str, Any] = {
        "source": spec,
        "label_column": label_col,
        "feature_column": feature_col,
    }
    if kind == "image":
        if image_size is not None and image_size < 1:
            raise UserError(f"image_size must be >= 1, got {image_size}")
        size = (image_size, image_size) if image_size else None
        x_tr = _images_to_tensor(train_ds[feature_col], size, channels)
        x_te = _images_to_tensor(test_ds[feature_col], tuple(x_tr.shape[-2:]), channels)
        m_tr = m_te = None
        info.update(image_size=image_size or int(x_tr.shape[-1]), channels=int(x_tr.shape[1]))
    else:
        tok_name = tokenizer if isinstance(tokenizer, str) else "custom"
        if isinstance(tokenizer, str):
            tokenizer = load_tokenizer(tokenizer)
        x_tr, m_tr, _ = tokenize([str(t) for t in train_ds[feature_col]], tokenizer, max_length)
        x_te, m_te, _ = tokenize([str(t) for t in test_ds[feature_col]], tokenizer, max_length)
        info.update(max_length=max_length, tokenizer=tok_name)
    return TaskData(
        train=ArrayDataset(x_tr, torch.as_tensor(train_labels), m_tr),
        test=ArrayDataset(x_te, torch.as_tensor(test_labels), m_te),
        n_classes=n_classes,
        kind=kind,
        name=HUB_PREFIX + spec,
        class_names=class_names,
        info=info,
    )
