"""Trade-off frontier: final accuracy against bits, time, delay or a config key."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from wirelessfl.errors import UserError
from wirelessfl.plots.axes import finish, key_label, new_axes
from wirelessfl.plots.inputs import FigureInput, tidy
from wirelessfl.results.groups import format_label
from wirelessfl.results.tables import FRONTIER_COLUMNS, frontier_table, frontier_x, pareto_front

_X_LABELS = {
    "controller.d_th_s": "delay threshold $D_{th}$ [s]",
    "total_bits_up": "total uplink [bits]",
    "virtual_time_s": "virtual time [s]",
    "mean_delay_s": "mean round delay $D^t$ [s]",
    "final_queue": "final virtual queue $Q^t$ [s]",
    "mean_sparsification": "mean sparsification ratio $O^t$ (fraction sent)",
    "rounds_done": "rounds completed",
    "rank": "LoRA rank $r$",
}


def _annotate(ax: Axes, part: pd.DataFrame) -> None:
    """Each point's group label beside it, on the side facing the middle of the x range (a
    label stays inside the axes)."""
    middle = (part["x"].min() + part["x"].max()) / 2
    for _, row in part.iterrows():
        right = row["x"] > middle
        ax.annotate(
            row["label"],
            (row["x"], row["accuracy"]),
            xytext=(-4 if right else 4, 4),
            textcoords="offset points",
            ha="right" if right else "left",
            fontsize="x-small",
            alpha=0.7,
        )


def _missing(value: object) -> bool:
    """A group's value of a key that does not apply to it (None; NaN in a table)."""
    return value is None or (isinstance(value, float) and math.isnan(value))


def frontier(
    results: FigureInput,
    *,
    x: str = "bits",
    by: str | None = None,
    ax: Axes | None = None,
    title: str | None = None,
) -> Figure:
    """Final accuracy vs ``x`` across a study: one point per group (mean over seeds, min–max
    error bar). Draws ``frontier_table(results, x=x)`` (pass ``x`` with a prebuilt table).

    ``x``: ``bits`` (sum of rounds.bits_up), ``time`` (last rounds.t_end_s), ``delay`` (mean
    rounds.delay_s), ``d_th`` (config controller.d_th_s) or any dotted config key; y: the last
    non-NaN rounds.accuracy. For a config ``x`` the points are joined in order of x, one line
    per combination of the other varying keys; for an outcome ``x`` they are drawn as markers
    with the Pareto front (less x, more accuracy) dashed. ``by`` (a varying config key) draws
    one joined line per value of it instead. ``ax.lines[0]`` holds the first series' points.

    Args:
        results: a run, a run or study folder (str or Path), a study, a list of these, or the
            table ``frontier_table(results, x=x)`` (pass the same ``x``).
        x: what the x axis shows (above).
        by: a varying config key: one line per value.
        ax: axes to draw on (default: a new figure).
        title: the title; None: the study or run drawn (on a new figure); "": none.
    """
    table = tidy(
        results,
        lambda runs: frontier_table(runs, x=x),
        figure="frontier",
        needs=FRONTIER_COLUMNS,
        table=f"frontier_table(results, x={x!r})",
    )
    source, column = frontier_x(x)
    params = [c for c in table.columns if c not in FRONTIER_COLUMNS]
    if by is not None and by not in params:
        raise UserError(
            f"plot frontier: by={by!r} is not a key that varies between the runs "
            f"(varying: {', '.join(params) or 'none'})"
        )
    if by is not None:
        keys = [by]
    elif source == "config":
        keys = [k for k in params if k != column]
    else:
        keys = []
    short = {k: k.rsplit(".", 1)[-1] for k in keys}
    # a key that does not apply to a group is None there: that group is a series of its own
    series = list(table.groupby(keys, sort=True, dropna=False)) if keys else [((), table)]
    joined = bool(keys) or source == "config"
    made = ax is None
    fig, ax = new_axes(ax)
    for values, part in series:
        part = part.sort_values("x")
        values = values if isinstance(values, tuple) else (values,)
        label = ", ".join(
            f"{short[k]}={format_label(v)}"
            for k, v in zip(keys, values, strict=True)
            if not _missing(v)
        )
        (line,) = ax.plot(
            part["x"],
            part["accuracy"],
            marker="o",
            ls="-" if joined else "none",
            label=label or "mean over seeds (bar: min–max)",
        )
        if (part["n"] > 1).any():
            yerr = np.vstack(
                [part["accuracy"] - part["acc_min"], part["acc_max"] - part["accuracy"]]
            )
            ax.errorbar(part["x"], part["accuracy"], yerr=yerr, fmt="none", color=line.get_color())
        if not joined:
            front = pareto_front(part["x"].to_numpy(), part["accuracy"].to_numpy())
            ax.plot(
                part["x"].to_numpy()[front],
                part["accuracy"].to_numpy()[front],
                ls="--",
                color="k",
                lw=1,
                label="Pareto front",
            )
            if 1 < len(part) <= 12:
                _annotate(ax, part)
    ax.set_xlabel(_X_LABELS.get(column) or key_label(column))
    ax.set_ylabel("final test accuracy (fraction correct)")
    finish(ax, table, title, made=made)
    return fig
