"""Summary numbers of one run (the study index, the frontier table, ``summary.csv``)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

    from wirelessfl.results.store import RunResult

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
    "device_energy_j": "energy per device per round [J]: sum of compute_energy_j + "
    "transmit_energy_j / (rounds_done x n_clients)",
    "device_compute_energy_j": "its compute part [J]",
    "device_transmit_energy_j": "its transmit part [J]",
    "max_device_energy_j": "the largest time-average energy per round of one device [J] "
    "(NaN without devices.csv or clients.csv)",
    "energy_budget_j": "controller.energy_budget_j [J per device per round, time average] "
    "(NaN: no budget)",
    "budget_met_share": "share of the devices whose time-average energy per round is within "
    "the budget (NaN without a budget, or without devices.csv or clients.csv)",
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


def summarize(
    rounds: pd.DataFrame | None,
    *,
    n_clients: int = 0,
    energy_budget_j: float = math.nan,
    per_device: pd.DataFrame | None = None,
) -> dict[str, float]:
    """``SUMMARY_COLUMNS`` for one run; reads accuracy, delay_s, sparsification, bits_up,
    t_end_s, queue_after, rank, compute_energy_j and transmit_energy_j. All NaN
    (``rounds_done`` 0) for a missing or empty table.

    The energy columns (``wirelessfl.results.energy``) need ``n_clients`` (0: NaN), the
    budget and ``per_device`` (``energy.device_energy``); :func:`summarize_run` passes a
    run's."""
    from wirelessfl.results.energy import energy_summary

    energy = energy_summary(rounds, n_clients, energy_budget_j, per_device)
    if rounds is None or len(rounds) == 0:
        empty = {key: (0 if key == "rounds_done" else math.nan) for key in SUMMARY_COLUMNS}
        return {**empty, "energy_budget_j": energy_budget_j}
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
        **energy,
    }


def summarize_run(run: RunResult) -> dict[str, float]:
    """``summarize`` of a loaded run, with its devices, budget and per-device energy."""
    return _summarize(run.rounds, run.config, run.devices, run.clients)


def summarize_folder(folder: Path) -> dict[str, float]:
    """``summarize`` of a run folder, reading only what it needs (``rounds.csv``,
    ``config.yaml``, ``devices.csv``, and ``clients.csv`` when ``devices.csv`` does not cover
    the rounds); all NaN when ``rounds.csv`` is missing or unreadable."""
    import pandas as pd

    from wirelessfl.errors import UserError
    from wirelessfl.results.energy import DEVICES_FILE
    from wirelessfl.results.store import read_config, read_rounds, read_table

    try:
        rounds = read_rounds(folder)
        config = read_config(folder)
        devices = read_table(folder / DEVICES_FILE)
        current = devices is not None and rounds is not None
        if current and len(devices) and (devices["rounds"] == len(rounds)).all():
            clients = None
        else:
            clients = read_table(folder / "clients.csv")
        return _summarize(rounds, config, devices, clients)
    except (UserError, OSError, ValueError, KeyError, IndexError, pd.errors.ParserError):
        return summarize(None)


def _summarize(rounds, config, devices, clients) -> dict[str, float]:
    from wirelessfl.results.energy import budget_of, device_energy

    n_clients = int(config.get("n_clients") or 0)
    done = 0 if rounds is None else len(rounds)
    per_device = device_energy(done, n_clients, devices, clients)
    return summarize(
        rounds, n_clients=n_clients, energy_budget_j=budget_of(config), per_device=per_device
    )
