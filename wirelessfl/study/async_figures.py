"""Columns and figures of the server-mode reproductions (``wirelessfl reproduce async-*``).

:func:`update_columns` counts a run's client updates (to the target, in all) and their
staleness from ``rounds.csv``; :func:`draw_modes` draws accuracy against aggregated updates
and against virtual time per mode, and the staleness of the updates each mode aggregated.
Importing this module imports neither pandas nor matplotlib.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from wirelessfl.study.figures import evaluations, save_figure

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "draw_modes",
    "mode_curves",
    "mode_label",
    "staleness_counts",
    "update_columns",
    "updates_to_target",
]


def update_columns(run, target_accuracy: float | None) -> dict[str, float]:
    """``STUDY_UPDATE_COLUMNS`` (``wirelessfl.results.columns``) of one loaded run.
    Synchronous rounds have no staleness columns: every update there starts from the model it
    is added to (tau = 0)."""
    rounds = run.rounds
    arrived = rounds["n_arrived"].astype(float)
    taken = float(arrived.sum())
    if "mean_staleness" in rounds:
        tau_sum = float((rounds["mean_staleness"].fillna(0.0) * arrived).sum())
        mean_tau = tau_sum / taken if taken else math.nan
        max_tau = float(rounds["max_staleness"].max()) if taken else math.nan
    else:
        mean_tau, max_tau = 0.0, 0.0
    return {
        "updates_taken": taken,
        "updates_to_target": updates_to_target(rounds, target_accuracy, run.initial_accuracy),
        "mean_staleness": mean_tau,
        "max_staleness": max_tau,
    }


def updates_to_target(
    rounds: pd.DataFrame, target_accuracy: float | None, initial_accuracy: float = math.nan
) -> float:
    """Client updates (``n_arrived``) aggregated up to and including the first round whose
    ``accuracy`` is at least ``target_accuracy``; 0 when ``initial_accuracy`` meets it; NaN when
    no evaluation does or there is no target (as ``results.summary.time_to_target``)."""
    if target_accuracy is None:
        return math.nan
    if initial_accuracy >= target_accuracy:  # NaN is False
        return 0.0
    reached = (rounds["accuracy"] >= target_accuracy).to_numpy()
    if not reached.any():
        return math.nan
    return float(rounds["n_arrived"].iloc[: int(reached.argmax()) + 1].sum())


def mode_label(run) -> str:
    """The run's ``server.mode`` with its settings: ``sync``, ``semi_sync (every 2 s)``,
    ``buffered (C = 10, M = 5)``, ``async (C = 10)``."""
    from wirelessfl.results.groups import config_value

    mode = str(config_value(run, "server.mode") or "sync")
    concurrency = config_value(run, "server.concurrency")
    if mode == "semi_sync":
        return f"semi_sync (every {float(config_value(run, 'server.deadline_s')):g} s)"
    if mode == "buffered":
        return f"buffered (C = {concurrency}, M = {config_value(run, 'server.buffer_size')})"
    if mode == "async":
        return f"async (C = {concurrency})"
    return mode


def staleness_counts(runs: list) -> pd.DataFrame:
    """Share of each mode's aggregated updates at each staleness tau, pooled over its runs
    (``clients.csv``; synchronous rounds: every update at tau = 0): columns ``mode``,
    ``staleness``, ``updates``, ``share``."""
    import pandas as pd

    rows = []
    for run in runs:
        label = mode_label(run)
        if "mean_staleness" not in run.rounds:
            rows.append({"mode": label, "staleness": 0, "updates": int(run.rounds.n_arrived.sum())})
            continue
        counts = run.clients["staleness"].astype(int).value_counts()
        rows += [{"mode": label, "staleness": int(t), "updates": int(n)} for t, n in counts.items()]
    table = pd.DataFrame(rows).groupby(["mode", "staleness"], as_index=False)["updates"].sum()
    return table.assign(share=table.updates / table.groupby("mode").updates.transform("sum"))


def mode_curves(runs: list) -> pd.DataFrame:
    """Each mode's evaluations, aligned over its seeds by aggregation: ``mode``, ``round``
    (-1: before round 0), ``updates`` (client updates aggregated by then, mean over seeds),
    ``t_end_s`` (mean [s]), ``accuracy`` (mean), ``acc_min``, ``acc_max`` and ``n`` (seeds)."""
    import pandas as pd

    frames = []
    for run in runs:
        done = run.rounds.set_index("round")["n_arrived"].cumsum()
        rows = evaluations(run)
        updates = [0.0 if r < 0 else float(done.loc[r]) for r in rows["round"]]
        frames.append(rows.assign(mode=mode_label(run), updates=updates))
    both = pd.concat(frames, ignore_index=True)
    return both.groupby(["mode", "round"], sort=False, as_index=False).agg(
        updates=("updates", "mean"),
        t_end_s=("t_end_s", "mean"),
        accuracy=("accuracy", "mean"),
        acc_min=("accuracy", "min"),
        acc_max=("accuracy", "max"),
        n=("accuracy", "size"),
    )


def _draw_accuracy(out: Path, runs: list, stem: str, title: str, target: float | None):
    """Accuracy against aggregated updates (``stem.png``) and virtual time (``stem_time.png``):
    mean over seeds, min–max shaded, the target dotted."""
    from matplotlib.figure import Figure

    curves = mode_curves(runs)
    paths = []
    for x, suffix, xlabel in (
        ("updates", "", "client updates aggregated"),
        ("t_end_s", "_time", "virtual time [s]"),
    ):
        fig = Figure(figsize=(6.4, 4.0))
        ax = fig.subplots()
        for mode, curve in curves.groupby("mode", sort=False):
            (line,) = ax.plot(curve[x], curve.accuracy, ".-", label=mode)
            ax.fill_between(
                curve[x], curve.acc_min, curve.acc_max, color=line.get_color(), alpha=0.2
            )
        if target is not None:
            ax.axhline(target, color="grey", ls=":", label=f"target {target:g}")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("test accuracy")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
        n_seeds = int(curves.n.max())
        ax.set_title(f"{title}: mean over {n_seeds} seeds, min–max shaded", fontsize=9)
        fig.tight_layout()
        paths.append(save_figure(fig, out / f"{stem}{suffix}.png"))
    return paths


def _draw_staleness(out: Path, runs: list, stem: str, title: str) -> Path:
    from matplotlib.figure import Figure

    table = staleness_counts(runs)
    modes = list(dict.fromkeys(mode_label(r) for r in runs))
    fig = Figure(figsize=(6.4, 3.4))
    ax = fig.subplots()
    width = 0.8 / len(modes)
    for i, mode in enumerate(modes):
        part = table[table["mode"] == mode]
        ax.bar(part.staleness + (i - (len(modes) - 1) / 2) * width, part.share, width, label=mode)
    ax.set_xlabel("staleness tau (aggregations an update missed)")
    ax.set_ylabel("share of aggregated updates")
    ax.legend(fontsize=7)
    ax.set_title(f"{title}: staleness of the aggregated updates (all seeds)", fontsize=9)
    fig.tight_layout()
    return save_figure(fig, out / f"{stem}_staleness.png")


def draw_modes(
    stem: str, title: str, target: float | None = None
) -> Callable[[Path, list], list[Path]]:
    """A reproduction's drawing: accuracy against client updates aggregated (``stem.png``) and
    against virtual time (``stem_time.png``) per mode, mean over seeds with min–max shaded,
    and the staleness distribution (``stem_staleness.png``)."""

    def draw(out: Path, runs: list) -> list[Path]:
        return [
            *_draw_accuracy(out, runs, stem, title, target),
            _draw_staleness(out, runs, stem, title),
        ]

    return draw
