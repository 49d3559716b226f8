"""The metric names Flower clients report, read as the simulator's columns.

Flower requires no particular metric names: its examples and users write ``loss``,
``train_loss``, ``train_logloss``, ``accuracy``, ``test_accuracy``, ``eval_acc``... Each column
reads the first name of its list that a client reports (:func:`first_number`):

- :data:`TRAIN_LOSS` -> ``loss`` (a fit's training loss);
- :data:`TRAIN_ACCURACY` -> ``algo.train_accuracy`` (a fit's accuracy on its training data);
- :data:`EVAL_LOSS` -> ``test_loss`` (a Message API evaluate's loss; a ``NumPyClient``'s
  ``evaluate`` returns its loss itself);
- :data:`EVAL_ACCURACY` -> ``accuracy``.

A Message API reply also carries :data:`NUM_EXAMPLES` (Flower's ``FedAvg`` weighs by it), and
any reply may carry :data:`FLOPS` (its virtual compute).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from wirelessfl.errors import ConfigError

__all__ = [
    "EVAL_ACCURACY",
    "EVAL_LOSS",
    "FLOPS",
    "NUM_EXAMPLES",
    "TRAIN_ACCURACY",
    "TRAIN_LOSS",
    "first_number",
    "names",
    "weighted_mean",
]

TRAIN_LOSS = ("loss", "train_loss", "train_logloss", "logloss")
TRAIN_ACCURACY = ("train_accuracy", "train_acc", "accuracy", "acc")
EVAL_LOSS = ("loss", "test_loss", "eval_loss", "val_loss", "test_logloss", "eval_logloss")
EVAL_ACCURACY = (
    "accuracy",
    "test_accuracy",
    "eval_accuracy",
    "val_accuracy",
    "acc",
    "test_acc",
    "eval_acc",
    "val_acc",
)
#: The weight of a Message API reply (Flower's ``FedAvg(weighted_by_key="num-examples")``).
NUM_EXAMPLES = "num-examples"
#: FLOPs of the client's work, when it reports them (else ``learner.client_flops``).
FLOPS = "flops"


def names(keys: tuple[str, ...]) -> str:
    """``'a', 'b' or 'c'`` for a one-line message."""
    quoted = [repr(k) for k in keys]
    return ", ".join(quoted[:-1]) + f" or {quoted[-1]}" if len(quoted) > 1 else quoted[0]


def first_number(metrics: Mapping[str, Any], keys: tuple[str, ...], who: str) -> float | None:
    """The value of the first of ``keys`` in ``metrics`` (None when none is there); a
    one-line error naming ``who`` when it is not a real number."""
    for key in keys:
        if key in metrics:
            value = metrics[key]
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ConfigError(f"{who}'s metric {key!r} is {value!r}, not a number")
            return float(value)
    return None


def weighted_mean(values: list[float | None], weights: list[float]) -> float | None:
    """The ``weights``-weighted mean of the values that are not None (None when none is,
    NaN when their weights sum to 0)."""
    pairs = [(v, w) for v, w in zip(values, weights, strict=True) if v is not None]
    if not pairs:
        return None
    total = sum(w for _, w in pairs)
    return sum(v * w for v, w in pairs) / total if total > 0 else math.nan
