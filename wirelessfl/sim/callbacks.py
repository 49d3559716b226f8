"""Per-round callbacks: code of the user's own that watches a run as it goes.

A callback is any object with the three methods of :class:`RoundCallback` (subclass it and
override the ones you need). :class:`~wirelessfl.sim.runner.Run` calls them in the order given:

- ``on_run_start(info)`` once, before the first round this process runs (:class:`RunInfo`);
- ``on_round_end(round_index, row)`` after each round, with the round's row exactly as it is
  (or, before the next checkpoint, will be) written to ``rounds.csv``: the same columns in the
  same order, Python ints and floats that equal the values read back from the file (``NaN``
  where the round was not evaluated);
- ``on_run_end(result)`` once, after the last round, with the loaded
  :class:`~wirelessfl.results.store.RunResult`;
- ``close()`` once the rounds stop, whether the run ended or stopped (an error, an interrupt):
  release files or connections there.

A resumed run calls them for the rounds it runs itself (from its checkpoint on), not for the
rounds of the process it continues. A callback that raises stops the run as a
:class:`CallbackError` (one line naming the callback, a ``SimulationError``): the round's row
is written first, with a checkpoint, so the tables and the checkpoint hold every round done and
``--resume`` continues after it; the original exception is the error's ``__cause__``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wirelessfl.config.scenario import Scenario
from wirelessfl.errors import SimulationError


@dataclass(frozen=True)
class RunInfo:
    """What a callback learns when a run starts."""

    out: Path  #: the run folder
    scenario: Scenario  #: the resolved scenario
    columns: tuple[str, ...]  #: the ``rounds.csv`` columns, in order
    start_round: int  #: the first round this process runs (0 unless resumed)
    resumed: bool  #: whether this process continues an earlier one
    #: ``accuracy`` and ``test_loss`` of the global state before round 0 (``eval_initial``;
    #: ``meta.json``'s ``initial_evaluation``), None without one
    initial_evaluation: dict[str, float] | None = None


class RoundCallback:
    """The callback interface; each method does nothing unless overridden."""

    def on_run_start(self, info: RunInfo) -> None:
        """Before the first round this process runs."""

    def on_round_end(self, round_index: int, row: dict[str, Any]) -> None:
        """After each round, with its ``rounds.csv`` row (column -> value)."""

    def on_run_end(self, result: Any) -> None:
        """After the last round, with the run's ``RunResult``."""

    def close(self) -> None:
        """When the rounds stop, ended or not (before ``on_run_end``)."""


class CallbackError(SimulationError):
    """A callback raised; the run stopped with its tables and checkpoint intact."""


def callback_name(callback: object) -> str:
    """The class name a message shows for ``callback``."""
    return type(callback).__name__


def call_each(callbacks: Sequence[object], method: str, *args: Any, where: str = "") -> None:
    """Call ``method`` of every callback; the first that raises becomes a ``CallbackError``.

    ``where`` ends the message (what is kept, what to do). ``KeyboardInterrupt`` passes as is.
    """
    for callback in callbacks:
        bound: Callable[..., None] = getattr(callback, method, None)
        try:
            if bound is None:
                raise AttributeError(f"it has no {method} method")
            bound(*args)
        except Exception as err:
            first = str(err).splitlines()[0] if str(err) else ""
            cause = f"{type(err).__name__}: {first}" if first else type(err).__name__
            raise CallbackError(
                f"callback {callback_name(callback)}.{method} raised {cause}{where}"
            ) from err


def numeric_cells(row: dict[str, Any]) -> dict[str, float]:
    """The cells of a :func:`plain_row` that hold a number (empty and ``NaN`` cells left out)."""
    return {
        column: float(value)
        for column, value in row.items()
        if isinstance(value, int | float) and not isinstance(value, bool) and not math.isnan(value)
    }


def plain_row(columns: Sequence[str], record: dict[str, Any]) -> dict[str, Any]:
    """A round's record as its ``rounds.csv`` row: every column in order, numpy scalars as
    Python numbers (a bool as 0 or 1), ``None`` for a column the record lacks (an empty cell)."""
    row = {}
    for column in columns:
        value = record.get(column)
        value = value.item() if hasattr(value, "item") else value
        row[column] = int(value) if isinstance(value, bool) else value
    return row
