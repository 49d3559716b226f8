"""Device energy: per device per round against round, cumulative against virtual time, and
accuracy against energy (definitions: ``wirelessfl.results.energy``).

Each figure draws ``energy_table`` (built from ``results`` unless one is given): one colour per
group, the mean over its seeds with the min–max across seeds shaded, as the accuracy figures do.
"""

from __future__ import annotations

import math

import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from wirelessfl.plots.axes import (
    draw_band,
    finish,
    new_axes,
    seed_spread,
    seeds_label,
    set_title,
)
from wirelessfl.plots.inputs import FigureInput, tidy
from wirelessfl.results.tables import ENERGY_COLUMNS, energy_table

_PER_ROUND = "energy per device per round [J]"
_CUMULATIVE = "cumulative energy per device [J]"
_ACCURACY = "test accuracy (fraction correct)"


def _table(results: FigureInput, figure: str) -> pd.DataFrame:
    return tidy(
        results, energy_table, figure=figure, needs=ENERGY_COLUMNS, table="energy_table(results)"
    )


def _curves(table: pd.DataFrame):
    """(label, curve) per group, the label with its seed count when it has several."""
    for _, curve in table.groupby("group", sort=True):
        yield seeds_label(str(curve["label"].iloc[0]), int(curve["seeds"].iloc[0])), curve


def energy_vs_round(
    results: FigureInput, *, ax: Axes | None = None, title: str | None = None
) -> Figure:
    """Energy per device per round (``energy_j``: compute + transmit over the N devices) vs
    round: a thin line per group with its min–max across seeds shaded, its time average so far
    (``average_energy_j``, what ``controller.energy_budget_j`` bounds) thick, and each budget
    dashed in its colour. On the axes each group adds two lines in that order, then its budget's
    line if it has one. ``results``: a run, a run or study folder, a study, a list of these, or
    an ``energy_table``; ``title``: None names the study or run drawn (on a new figure), ""
    none."""
    full = _table(results, "energy_vs_round")
    table = full[full["round"] >= 0]
    made = ax is None
    fig, ax = new_axes(ax)
    labelled: set[float] = set()  # each budget named once in the legend
    for label, curve in _curves(table):
        (line,) = ax.plot(curve["round"], curve["energy_j"], lw=0.8, alpha=0.7, label="_round")
        low, high = seed_spread(curve, "energy_min", "energy_max")
        if low is not None:
            ax.fill_between(curve["round"], low, high, color=line.get_color(), alpha=0.15)
        color = line.get_color()
        ax.plot(curve["round"], curve["average_energy_j"], lw=2.0, color=color, label=label)
        budget = float(curve["energy_budget_j"].iloc[0])
        if not math.isnan(budget):
            name = "_budget" if budget in labelled else f"budget {budget:.3g} J"
            ax.axhline(budget, color=color, ls="--", lw=1, label=name)
            labelled.add(budget)
    ax.set_xlabel("round $t$")
    ax.set_ylabel(_PER_ROUND)
    finish(ax, full, title, made=made)
    return fig


def energy_vs_time(
    results: FigureInput, *, ax: Axes | None = None, title: str | None = None
) -> Figure:
    """Cumulative energy per device (``cumulative_energy_j``) vs cumulative virtual time
    (``t_end_s``, mean over seeds): one line per group, min–max across seeds shaded. Inputs
    as :func:`energy_vs_round`."""
    full = _table(results, "energy_vs_time")
    table = full[full["round"] >= 0]
    made = ax is None
    fig, ax = new_axes(ax)
    for label, curve in _curves(table):
        low, high = seed_spread(curve, "cumulative_min", "cumulative_max")
        draw_band(ax, curve["t_end_s"], curve["cumulative_energy_j"], low, high, label=label)
    ax.set_xlabel("cumulative virtual time [s]")
    ax.set_ylabel(_CUMULATIVE)
    finish(ax, full, title, made=made)
    return fig


def accuracy_vs_energy(
    results: FigureInput, *, ax: Axes | None = None, title: str | None = None
) -> Figure:
    """Test accuracy vs cumulative energy per device at each evaluation (the initial one at 0
    J when the runs have it): one line per group, min–max accuracy across seeds shaded.
    Inputs as :func:`energy_vs_round`."""
    full = _table(results, "accuracy_vs_energy")
    table = full[full["accuracy"].notna()]
    made = ax is None
    fig, ax = new_axes(ax)
    for label, curve in _curves(table):
        low, high = seed_spread(curve, "acc_min", "acc_max")
        x = curve["cumulative_energy_j"]
        draw_band(ax, x, curve["accuracy"], low, high, label=label, marker=".")
    ax.set_xlabel(_CUMULATIVE)
    ax.set_ylabel(_ACCURACY)
    finish(ax, full, title, made=made)
    return fig


def energy_overview(results: FigureInput, *, title: str | None = None) -> Figure:
    """The three energy figures side by side (``wirelessfl plot --kind energy``):
    :func:`energy_vs_round`, :func:`energy_vs_time` and :func:`accuracy_vs_energy` of one
    ``energy_table``, with one legend for the three, outside the axes, and the title (None:
    the study or run drawn; "": none) over the first panel. Inputs as
    :func:`energy_vs_round`."""
    table = _table(results, "energy_overview")
    fig = Figure(figsize=(14.0, 4.2), layout="constrained")
    axes = fig.subplots(1, 3)
    energy_vs_round(table, ax=axes[0], title="")
    energy_vs_time(table, ax=axes[1], title="")
    accuracy_vs_energy(table, ax=axes[2], title="")
    set_title(axes[0], table, title, made=True)
    handles, labels = axes[0].get_legend_handles_labels()
    for ax in axes:
        if ax.get_legend() is not None:
            ax.get_legend().remove()
    if labels:
        fig.legend(handles, labels, loc="outside right upper", fontsize="small")
    return fig
