"""``load_dataset``: a data set by registry name or ``hub:<name-or-path>``, with its options
checked and optional seeded caps on the split sizes."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from wirelessfl.data.arrays import ArrayDataset, TaskData
from wirelessfl.data.hub import load_hub
from wirelessfl.data.splits import split_generator
from wirelessfl.errors import UserError
from wirelessfl.registries import DATASETS, HUB_PREFIX

__all__ = ["load_dataset"]

_COMMON_OPTIONS = ("max_train", "max_test")


def _loader(name: str) -> Callable[..., TaskData]:
    """The loader ``(*, seed, **options) -> TaskData`` of ``name``; ``UserError`` if unknown."""
    if name.startswith(HUB_PREFIX):
        spec = name[len(HUB_PREFIX) :]
        if not spec:
            raise UserError(f"dataset {HUB_PREFIX!r} needs a name or path after the colon")
        return functools.partial(load_hub, spec)
    if name not in DATASETS:
        raise UserError(f"{DATASETS.unknown(name)}, {HUB_PREFIX}<name-or-path>")
    return DATASETS.load(name)


def _check_options(name: str, loader: Callable[..., TaskData], options: dict[str, Any]) -> None:
    """One-line ``UserError`` for an option that ``loader`` does not take (``seed`` and
    ``n_clients`` come from the scenario, never from the options)."""
    params = inspect.signature(loader).parameters
    accepted = [p for p in params if p not in ("seed", "n_clients")] + list(_COMMON_OPTIONS)
    for key in options:
        if key not in accepted:
            raise UserError(
                f"unknown option {key!r} for dataset {name!r}; accepted: {', '.join(accepted)}"
            )


def _limit(
    ds: ArrayDataset, groups: np.ndarray | None, n_max: int | None, rng: np.random.Generator
) -> tuple[ArrayDataset, np.ndarray | None]:
    """A random subset of at most ``n_max`` rows (in stored order) and their group keys."""
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
    n_clients: int | None = None,
    max_train: int | None = None,
    max_test: int | None = None,
    **options: Any,
) -> TaskData:
    """Load the data set ``name``.

    Args:
        name: A ``wirelessfl.registries.DATASETS`` name, or ``hub:`` followed by a local
            ``save_to_disk`` folder or a hub name.
        seed: Seeds the train/test split (same seed, same split).
        n_clients: The scenario's number of clients; passed to loaders that build their
            data per client (their signature has ``n_clients``), ignored by the others.
        max_train: Keep a seeded random subset of at most this many training samples (for
            quick runs); ``None`` keeps everything.
        max_test: The same for the test split.
        **options: Loader options (see each loader's docstring).

    Returns:
        The task.

    Raises:
        UserError: One line for an unknown name or option, or a per-client loader called
            without ``n_clients``.
    """
    loader = _loader(name)
    _check_options(name, loader, options)
    if "n_clients" in inspect.signature(loader).parameters:
        if n_clients is None:
            raise UserError(f"dataset {name} needs n_clients")
        options = {**options, "n_clients": n_clients}
    data = loader(seed=seed, **options)
    if max_train is not None or max_test is not None:
        rng = split_generator(seed, name + "/limit")
        data.train, data.train_groups = _limit(data.train, data.train_groups, max_train, rng)
        data.test, data.test_groups = _limit(data.test, data.test_groups, max_test, rng)
    return data
