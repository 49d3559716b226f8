"""Columns, table and figures of the study of accuracy against virtual time and energy with the
fixed and the joint radio (reproductions ``energy-joint-accuracy-*``, docs/results.md, "Fixed
against joint radio control: accuracy, time and energy").

A run's variant is its radio, and for a positive energy price μ (``controller.energy_price``)
the radio and the price: "fixed", "joint", "joint, μ = 0.01" (:func:`variant_label`); the
table and the figure have one group per variant and budget.

The energy of a run is every device's compute + transmit energy summed over its rounds
(``compute_energy_j + transmit_energy_j`` of ``rounds.csv``) [J]; its energy to a target
accuracy is that sum up to and including the first evaluated round at or above the target, the
round :func:`~wirelessfl.results.summary.time_to_target` takes. Importing this module imports
neither pandas nor matplotlib.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from wirelessfl.study.figures import save_figure

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "PRICE_KEY",
    "RADIO_KEY",
    "accuracy_curve",
    "accuracy_energy_columns",
    "draw_joint_accuracy",
    "radio_table",
    "radio_tables",
    "variant_label",
]

#: the config key that names the method of these reproductions
RADIO_KEY = "controller.radio"
#: the config key of the joint radio's energy price μ [per J] (a variant of its own when > 0)
PRICE_KEY = "controller.energy_price"
#: ``summary.csv`` columns of :func:`radio_table`, meaned per radio
_TABLE_METRICS = (
    "final_accuracy",
    "virtual_time_s",
    "total_energy_j",
    "time_to_target_s",
    "energy_to_target_j",
)


def accuracy_energy_columns(run, target_accuracy: float | None = None) -> dict[str, float]:
    """``STUDY_ACCURACY_ENERGY_COLUMNS`` (``wirelessfl.results.columns``) of one loaded run: the
    energy all devices spent over the run [J] and up to the first evaluation at or above
    ``target_accuracy`` [J] (0 when the evaluation before round 0 reaches it; NaN when no
    evaluation does, or without a target)."""
    rounds = run.rounds
    energy_j = (rounds["compute_energy_j"] + rounds["transmit_energy_j"]).astype(float)
    to_target_j = math.nan
    if target_accuracy is not None:
        reached = (rounds["accuracy"] >= target_accuracy).to_numpy()  # NaN is False
        if run.initial_accuracy >= target_accuracy:
            to_target_j = 0.0
        elif reached.any():
            to_target_j = float(energy_j.iloc[: int(reached.argmax()) + 1].sum())
    return {"total_energy_j": float(energy_j.sum()), "energy_to_target_j": to_target_j}


def accuracy_curve(run) -> pd.DataFrame:
    """``run``'s evaluations (:func:`~wirelessfl.study.figures.evaluations`, led by the one
    before round 0 where there is one) with ``energy_j``: every device's energy summed up to
    and including that round [J] (0 before round 0). Columns ``round``, ``t_end_s``,
    ``energy_j``, ``accuracy``."""
    from wirelessfl.study.figures import evaluations

    rounds = run.rounds
    spent_j = (rounds["compute_energy_j"] + rounds["transmit_energy_j"]).astype(float).cumsum()
    by_round = dict(zip(rounds["round"].astype(int), spent_j, strict=True))
    rows = evaluations(run)
    rows["energy_j"] = [by_round.get(int(r), 0.0) for r in rows["round"]]
    return rows[["round", "t_end_s", "energy_j", "accuracy"]].reset_index(drop=True)


def variant_label(radio: str, energy_price: float | None) -> str:
    """A run's variant: ``radio``, followed by ", μ = <price>" when ``energy_price`` [per J] is
    positive (None or NaN: not set, as 0)."""
    if energy_price is None or math.isnan(energy_price) or energy_price == 0.0:
        return radio
    return f"{radio}, μ = {energy_price:g}"


def radio_table(summary: pd.DataFrame) -> pd.DataFrame:
    """Per variant (:func:`variant_label`) and budget (``energy_budget_j`` [J per device per
    round]; NaN: none): the finished runs, and the mean and the min–max over seeds of final
    accuracy, virtual time [s], total energy [J] and time [s] and energy [J] to the target
    accuracy (the seeds that reach it in ``reached``). ``summary``: a reproduction's
    ``summary.csv``."""
    import pandas as pd

    finished = summary[summary["finished"].astype(bool)] if "finished" in summary else summary
    prices = finished[PRICE_KEY] if PRICE_KEY in finished else pd.Series(math.nan, finished.index)
    keys = [finished[RADIO_KEY].astype(str), prices.astype(float).fillna(0.0)]
    rows = []
    groups = finished.groupby([*keys, "energy_budget_j"], sort=True, dropna=False)
    for (radio, price, budget_j), part in groups:  # radio, then price by size, then budget
        row = {
            "variant": variant_label(radio, price),
            "energy_budget_j": budget_j,
            "runs": len(part),
        }
        for metric in _TABLE_METRICS:
            values = part[metric].astype(float) if metric in part else pd.Series(dtype=float)
            row[metric] = float(values.mean())
            row[f"{metric}_min"] = float(values.min())
            row[f"{metric}_max"] = float(values.max())
        reached = part.get("time_to_target_s", pd.Series(dtype=float))
        row["reached"] = int(reached.notna().sum())
        rows.append(row)
    return pd.DataFrame(rows)


def radio_tables(summary: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The reproductions' ``tables``: ``radio_means`` (:func:`radio_table`, one row per variant
    and budget)."""
    return {"radio_means": radio_table(summary)}


def _budget_label(budget_j: float) -> str:
    return "no budget" if math.isnan(budget_j) else f"budget {budget_j:g} J"


def draw_joint_accuracy(stem: str, task: str) -> Callable[[Path, list], list[Path]]:
    """The drawing of one reproduction: ``<stem>.png``, accuracy against virtual time and against
    every device's cumulative energy, one colour per variant and one line style per energy
    budget: each seed a thin line, the mean over seeds (of time, energy and accuracy at each
    evaluation) a thick one. ``task`` names the scenario in the title."""

    def draw(out: Path, runs: list) -> list[Path]:
        import pandas as pd
        from matplotlib.figure import Figure

        from wirelessfl.results.energy import budget_of
        from wirelessfl.results.groups import config_value

        fig = Figure(figsize=(10, 3.6))
        axes = fig.subplots(1, 2, sharey=True)
        # (radio, price [per J], budget label) -> the runs' curves; sorted, the prices by size
        curves: dict[tuple[str, float, str], list[pd.DataFrame]] = {}
        for run in runs:
            price = config_value(run, PRICE_KEY)
            price = 0.0 if price is None or math.isnan(price) else float(price)
            key = (str(config_value(run, RADIO_KEY)), price, _budget_label(budget_of(run.config)))
            curves.setdefault(key, []).append(accuracy_curve(run))
        variants = sorted({(radio, price) for radio, price, _ in curves})
        budgets = sorted({budget for *_, budget in curves})
        for (radio, price, budget), frames in sorted(curves.items()):
            variant = variant_label(radio, price)
            color = f"C{variants.index((radio, price)) % 10}"
            style = ("-", "--", ":", "-.")[budgets.index(budget) % 4]
            for frame in frames:
                axes[0].plot(frame.t_end_s, frame.accuracy, color=color, lw=0.6, alpha=0.35)
                axes[1].plot(frame.energy_j, frame.accuracy, color=color, lw=0.6, alpha=0.35)
            mean = pd.concat(frames).groupby("round")[["t_end_s", "energy_j", "accuracy"]].mean()
            label = f"{variant}, {budget} ({len(frames)} seeds)"
            for ax, x in zip(axes, (mean.t_end_s, mean.energy_j), strict=True):
                ax.plot(x, mean.accuracy, "o", ls=style, color=color, ms=3, label=label)
        axes[0].set_xscale("symlog", linthresh=1.0)
        axes[0].set_xlabel("virtual time [s] (log above 1 s)")
        axes[1].set_xlabel("cumulative energy, all devices [J]")
        axes[0].set_ylabel("test accuracy")
        axes[1].legend(fontsize=7)
        fig.suptitle(f"Fixed against joint radio control: {task}")
        fig.tight_layout()
        return [save_figure(fig, out / f"{stem}.png")]

    return draw
