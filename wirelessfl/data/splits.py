"""Seeded train/test splits: the data stream of a data set and the stratified split."""

from __future__ import annotations

import numpy as np

from channels.streams import stream_generator
from wirelessfl.errors import UserError

__all__ = ["split_generator", "stratified_split"]

#: Address word of the data streams: ``stream_generator(seed, <data set name>, 0xDA7A)``.
_DATA_ADDRESS = 0xDA7A


def split_generator(seed: int, name: str) -> np.random.Generator:
    """The data stream of ``(seed, name)`` (train/test split, subsets), independent of every
    other named stream.

    Args:
        seed: Run seed (>= 0).
        name: Stream name, e.g. the data set name or ``"<name>/limit"``.

    Returns:
        A PCG64 generator; the same arguments always give the same draws.
    """
    return stream_generator(seed, name, _DATA_ADDRESS)


def stratified_split(
    labels: np.ndarray, test_fraction: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Stratified split with ``round(test_fraction * n)`` test samples in all.

    The test samples are shared out over the classes in proportion to their sizes (largest
    remainder, ties broken at random). Every class keeps at least one training sample (a class
    with a single sample stays in train).

    Args:
        labels: Integer labels ``(n,)``.
        test_fraction: Share of the samples in the test split, in (0, 1).
        rng: Draws the tie-breaks and which samples of each class are held out.

    Returns:
        Sorted int64 index arrays ``(train_idx, test_idx)``.
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
