"""Summary numbers of one run's ``rounds`` table (the study index and the frontier table)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

#: The summary columns of ``index.csv``, in order, with what each holds.
SUMMARY_COLUMNS: dict[str, str] = {
    "rounds_done": "rows in rounds.csv",
    "final_accuracy": "last non-NaN accuracy",
    "mean_delay_s": "mean of delay_s (D^t)",
    "mean_sparsification": "mean of sparsification (O^t)",
    "total_bits_up": "sum of bits_up",
    "virtual_time_s": "t_end_s of the last round",
    "final_queue": "queue_after of the last round (Q^T)",
    "rank": "rank of the last round",
}


def final_accuracy(rounds: pd.DataFrame) -> float:
    """The last evaluated accuracy (``accuracy`` column), NaN if no round was evaluated."""
    evaluated = rounds["accuracy"].dropna()
    return float(evaluated.iloc[-1]) if len(evaluated) else math.nan


def time_to_target(
    rounds: pd.DataFrame | None, target_accuracy: float, *, initial_accuracy: float = math.nan
) -> dict[str, float]:
    """Virtual time and uplink traffic to reach ``target_accuracy``.

    The first evaluation whose ``accuracy`` is at least the target. ``initial_accuracy`` is the
    run's evaluation before round 0 (``RunResult.initial_accuracy``; NaN: none): when it
    reaches the target, the untrained model already does, and both numbers are 0 (it was
    measured at virtual time 0, before anything was sent). Otherwise the first evaluated round
    at or above the target: ``time_to_target_s`` is its ``t_end_s`` [s] and ``bits_to_target``
    the sum of ``bits_up`` [bit] over the rounds up to and including it. Both NaN if no
    evaluation reaches the target.
    """
    if initial_accuracy >= target_accuracy:  # NaN (no initial evaluation) is False
        return {"time_to_target_s": 0.0, "bits_to_target": 0.0}
    missing = {"time_to_target_s": math.nan, "bits_to_target": math.nan}
    if rounds is None or len(rounds) == 0:
        return missing
    reached = (rounds["accuracy"] >= target_accuracy).to_numpy()  # NaN (not evaluated) is False
    if not reached.any():
        return missing
    first = int(reached.argmax())
    return {
        "time_to_target_s": float(rounds["t_end_s"].iloc[first]),
        "bits_to_target": float(rounds["bits_up"].iloc[: first + 1].sum()),
    }


def summarize(rounds: pd.DataFrame | None) -> dict[str, float]:
    """``SUMMARY_COLUMNS`` for one run; reads accuracy, delay_s, sparsification, bits_up,
    t_end_s, queue_after and rank. All NaN (``rounds_done`` 0) for a missing or empty table."""
    if rounds is None or len(rounds) == 0:
        return {key: (0 if key == "rounds_done" else math.nan) for key in SUMMARY_COLUMNS}
    last = rounds.iloc[-1]
    return {
        "rounds_done": len(rounds),
        "final_accuracy": final_accuracy(rounds),
        "mean_delay_s": float(rounds["delay_s"].mean()),
        "mean_sparsification": float(rounds["sparsification"].mean()),
        "total_bits_up": float(rounds["bits_up"].sum()),
        "virtual_time_s": float(last["t_end_s"]),
        "final_queue": float(last["queue_after"]),
        "rank": int(last["rank"]),
    }
