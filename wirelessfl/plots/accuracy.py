"""Test accuracy against round and against virtual time (the latency–accuracy curve)."""

from __future__ import annotations

import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from wirelessfl.plots.axes import legend, new_axes
from wirelessfl.results.runs import Results
from wirelessfl.results.tables import accuracy_table


def _accuracy(table: pd.DataFrame, x: str, ax: Axes | None) -> Figure:
    fig, ax = new_axes(ax)
    for _, curve in table.groupby("group", sort=True):
        label, runs = curve["label"].iloc[0], int(curve["runs"].iloc[0])
        seeds = int(curve["seeds"].iloc[0]) if "seeds" in curve else runs
        xs = _rounds_done(curve) if x == "round" else curve["t_end_s"]
        (line,) = ax.plot(
            xs,
            curve["accuracy"],
            marker=".",
            label=f"{label} ({seeds} seeds)" if seeds > 1 else label,
        )
        if runs > 1:
            ax.fill_between(
                xs, curve["acc_min"], curve["acc_max"], color=line.get_color(), alpha=0.2
            )
    ax.set_xlabel("rounds completed" if x == "round" else "cumulative virtual time [s]")
    ax.set_ylabel("test accuracy")
    ax.grid(alpha=0.3)
    legend(ax)
    return fig


def _rounds_done(curve: pd.DataFrame) -> pd.Series:
    """x against rounds: the rounds trained before each evaluation (a table of an older
    version, without ``rounds_done``: ``round`` + 1)."""
    return curve["rounds_done"] if "rounds_done" in curve else curve["round"] + 1


def accuracy_vs_round(results: Results | pd.DataFrame, *, ax: Axes | None = None) -> Figure:
    """Test accuracy vs rounds completed. Draws ``accuracy_table`` (built from ``results``
    unless given): one line per group (mean over seeds), min–max across seeds shaded. x is
    ``rounds_done``: the evaluation after round t at t + 1, the initial state's
    (``eval_initial``) at 0."""
    table = results if isinstance(results, pd.DataFrame) else accuracy_table(results)
    return _accuracy(table, "round", ax)


def accuracy_vs_time(results: Results | pd.DataFrame, *, ax: Axes | None = None) -> Figure:
    """Latency–accuracy curve: test accuracy vs cumulative virtual time. Draws
    ``accuracy_table`` (built from ``results`` unless given): seeds are aligned by round, x is
    the mean ``t_end_s`` of the group's runs at that round (0 for the initial state, with
    ``eval_initial``), y the mean accuracy, min–max accuracy shaded."""
    table = results if isinstance(results, pd.DataFrame) else accuracy_table(results)
    return _accuracy(table, "time", ax)
