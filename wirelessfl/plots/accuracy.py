"""Test accuracy against round and against virtual time (the latency–accuracy curve)."""

from __future__ import annotations

import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from wirelessfl.plots.axes import draw_band, finish, new_axes, seed_spread, seeds_label
from wirelessfl.plots.inputs import FigureInput, tidy
from wirelessfl.results.tables import accuracy_table

#: the columns a given accuracy table must have
_NEEDS = ("group", "label", "runs", "round", "t_end_s", "accuracy", "acc_min", "acc_max")
ACCURACY_LABEL = "test accuracy (fraction correct)"


def _accuracy(table: pd.DataFrame, x: str, ax: Axes | None, title: str | None) -> Figure:
    made = ax is None
    fig, ax = new_axes(ax)
    for _, curve in table.groupby("group", sort=True):
        label, runs = str(curve["label"].iloc[0]), int(curve["runs"].iloc[0])
        seeds = int(curve["seeds"].iloc[0]) if "seeds" in curve else runs
        xs = _rounds_done(curve) if x == "round" else curve["t_end_s"]
        low, high = seed_spread(curve, "acc_min", "acc_max")
        draw_band(ax, xs, curve["accuracy"], low, high, label=seeds_label(label, seeds), marker=".")
    ax.set_xlabel("rounds completed" if x == "round" else "cumulative virtual time [s]")
    ax.set_ylabel(ACCURACY_LABEL)
    finish(ax, table, title, made=made)
    return fig


def _rounds_done(curve: pd.DataFrame) -> pd.Series:
    """x against rounds: the rounds trained before each evaluation (a table of an older
    version, without ``rounds_done``: ``round`` + 1)."""
    return curve["rounds_done"] if "rounds_done" in curve else curve["round"] + 1


def accuracy_vs_round(
    results: FigureInput, *, ax: Axes | None = None, title: str | None = None
) -> Figure:
    """Test accuracy vs rounds completed. Draws ``accuracy_table`` (built from ``results``
    unless given): one line per group (mean over seeds), min–max across seeds shaded. x is
    ``rounds_done``: the evaluation after round t at t + 1, the initial state's
    (``eval_initial``) at 0.

    Args:
        results: a run, a run or study folder (str or Path), a study, a list of these, or an
            ``accuracy_table``.
        ax: axes to draw on (default: a new figure).
        title: the title; None: the study or run drawn (on a new figure); "": none.
    """
    table = tidy(results, accuracy_table, figure="accuracy_vs_round", needs=_NEEDS)
    return _accuracy(table, "round", ax, title)


def accuracy_vs_time(
    results: FigureInput, *, ax: Axes | None = None, title: str | None = None
) -> Figure:
    """Latency–accuracy curve: test accuracy vs cumulative virtual time. Draws
    ``accuracy_table`` (built from ``results`` unless given): seeds are aligned by round, x is
    the mean ``t_end_s`` of the group's runs at that round (0 for the initial state, with
    ``eval_initial``), y the mean accuracy, min–max accuracy shaded.

    Args:
        results: a run, a run or study folder (str or Path), a study, a list of these, or an
            ``accuracy_table``.
        ax: axes to draw on (default: a new figure).
        title: the title; None: the study or run drawn (on a new figure); "": none.
    """
    table = tidy(results, accuracy_table, figure="accuracy_vs_time", needs=_NEEDS)
    return _accuracy(table, "time", ax, title)
