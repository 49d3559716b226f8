"""``chatterbot_topic``: chatterbot-corpus Q/A pairs labelled by their topic file."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from wirelessfl.data.arrays import ArrayDataset, TaskData
from wirelessfl.data.assets import pkg_dir
from wirelessfl.data.preprocess import tokenize
from wirelessfl.data.splits import split_generator, stratified_split
from wirelessfl.errors import UserError

__all__ = ["load_chatterbot_topic"]


def load_chatterbot_topic(
    *,
    seed: int,
    language: str = "english",
    max_length: int = 64,
    test_fraction: float = 0.2,
    tokenizer: str | Any = "minilm",
) -> TaskData:
    """chatterbot-corpus Q/A pairs, label = topic file (21 English topics, very imbalanced).

    Text = the first two utterances of each conversation (question and answer) joined by a
    space. Files are read with ``yaml.safe_load``. A topic with a single conversation
    (English ``health``) keeps it in train.

    Args:
        seed: Seeds the stratified split.
        language: A folder of the corpus (``english``, ``french``, ...).
        max_length: Tokens per text, padded / truncated.
        test_fraction: Stratified share held out for test.
        tokenizer: A ``load_tokenizer`` name or a tokenizer object.

    Returns:
        A ``"text"`` task with one class per topic file, x int64 ``(n, max_length)``.
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
    ids, mask, tok_name = tokenize(texts, tokenizer, max_length)
    tr, te = stratified_split(y, test_fraction, split_generator(seed, "chatterbot_topic"))
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
