"""Network dynamics over the rounds: delay and virtual queue, sparsification, Cov norm.

Each figure draws a ``rounds_table`` built from ``results`` unless one is given: one curve per
group of runs (runs differing only in seed), the mean over its runs aligned by round, their
min–max shaded (``band_table``). ``x`` picks the ``round`` or the (mean) ``t_end_s`` column.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from wirelessfl.plots.axes import (
    draw_band,
    draw_bands,
    finish,
    legend,
    new_axes,
    round_or_time,
    seed_spread,
    set_title,
    x_label,
)
from wirelessfl.plots.inputs import FigureInput, tidy
from wirelessfl.results.tables import band_table, rounds_table

_D_TH, _O_MIN = "controller.d_th_s", "controller.o_min"
#: the columns every given ``rounds_table`` needs
_HEADS = ("run", "group", "group_label", "seeds", "round", "t_end_s")
_RUNNING = "delay_running_mean_s"


def _finite(values: pd.Series) -> list[float]:
    """The distinct finite numbers of a column, sorted."""
    numbers = pd.to_numeric(values, errors="coerce").to_numpy(dtype=float)
    return sorted({float(v) for v in numbers[np.isfinite(numbers)]})


def _how(columns: list[str], keys: list[str]) -> str:
    """How to build a figure's table by hand, for the message about a missing column."""
    return (
        f"rounds_table(results, {columns!r}, {keys!r})"
        if keys
        else (f"rounds_table(results, {columns!r})")
    )


def queue_delay(results: FigureInput, *, x: str = "round", title: str | None = None) -> Figure:
    """Top: the round delay D^t (rounds.delay_s, thin), its running mean (thick, min–max across
    seeds shaded) and D_th (config controller.d_th_s, dashed); bottom: the virtual queue Q^t
    (rounds.queue, seconds like D^t) with its min–max across seeds shaded. One colour per group
    of runs (the mean over its seeds); x is rounds.round, or the mean rounds.t_end_s with
    ``x="time"``. On the top axes each group adds two lines in that order (mean D^t, mean
    running mean), then one line per D_th; the bottom axes hold one Q^t line per group.

    Args:
        results: a run, a run or study folder (str or Path), a study, a list of these, or the
            table ``rounds_table(results, ["delay_s", "queue"], ["controller.d_th_s"])``.
        x: ``round`` or ``time``.
        title: the title; None: the study or run drawn; "": none.
    """
    column = round_or_time(x)
    columns, keys = ["delay_s", "queue"], [_D_TH]
    table = tidy(
        results,
        lambda runs: rounds_table(runs, columns, keys),
        figure="queue_delay",
        needs=[*_HEADS, *columns, *keys],
        table=_how(columns, keys),
    )
    table = table.assign(
        **{_RUNNING: table.groupby("run")["delay_s"].transform(lambda d: d.expanding().mean())}
    )
    fig = Figure(figsize=(7.6, 5.6), layout="constrained")
    top, bottom = fig.subplots(2, 1, sharex=True)
    delays = band_table(table, "delay_s")
    running = band_table(table, _RUNNING)
    for (_, delay), (_, mean) in zip(
        delays.groupby("group", sort=True), running.groupby("group", sort=True), strict=True
    ):
        (thin,) = top.plot(delay[column], delay["mean"], lw=0.7, alpha=0.6, label="_delay")
        low, high = seed_spread(mean)
        draw_band(
            top,
            mean[column],
            mean["mean"],
            low,
            high,
            label="_running mean",
            lw=1.8,
            color=thin.get_color(),
        )
    draw_bands(bottom, band_table(table, "queue"), column)
    styles = ["--", "-.", ":"]
    handles = [
        Line2D([], [], color="0.4", lw=0.7, label="$D^t$ (mean over seeds)"),
        Line2D([], [], color="0.4", lw=1.8, label="running mean of $D^t$"),
    ]
    for i, d_th in enumerate(_finite(table[_D_TH])):
        handles.append(
            top.axhline(d_th, color="k", ls=styles[i % 3], lw=1, label=f"$D_{{th}}$ = {d_th:.3g} s")
        )
    top.set_ylabel("round delay $D^t$ [s]")
    bottom.set_ylabel("virtual queue $Q^t$ [s]")
    bottom.set_xlabel(x_label(x))
    for ax in (top, bottom):
        ax.grid(alpha=0.3)
    legend(top, handles, always=True)
    legend(bottom)
    set_title(top, table, title, made=True)
    return fig


def sparsification(
    results: FigureInput,
    *,
    x: str = "round",
    ax: Axes | None = None,
    title: str | None = None,
) -> Figure:
    """O^t over rounds (rounds.sparsification vs rounds.round, or the mean t_end_s with
    ``x="time"``): one line per group of runs (the mean over its seeds, min–max shaded), with
    O_min (config controller.o_min) dashed.

    Args:
        results: a run, a run or study folder (str or Path), a study, a list of these, or the
            table ``rounds_table(results, ["sparsification"], ["controller.o_min"])``.
        x: ``round`` or ``time``.
        ax: axes to draw on (default: a new figure).
        title: the title; None: the study or run drawn (on a new figure); "": none.
    """
    column = round_or_time(x)
    columns, keys = ["sparsification"], [_O_MIN]
    table = tidy(
        results,
        lambda runs: rounds_table(runs, columns, keys),
        figure="sparsification",
        needs=[*_HEADS, *columns, *keys],
        table=_how(columns, keys),
    )
    made = ax is None
    fig, ax = new_axes(ax)
    draw_bands(ax, band_table(table, "sparsification"), column, lw=0.9)
    for o_min in _finite(table[_O_MIN]):
        ax.axhline(o_min, color="k", ls="--", lw=1, label=f"$O_{{min}}$ = {o_min:.3g}")
    ax.set_ylabel("sparsification ratio $O^t$ (fraction sent)")
    ax.set_xlabel(x_label(x))
    ax.set_ylim(0, 1.05)
    finish(ax, table, title, made=made)
    return fig


def cov_norm(
    results: FigureInput,
    *,
    x: str = "round",
    ax: Axes | None = None,
    title: str | None = None,
) -> Figure:
    """||Cov(θ_B, θ_A)||_F over rounds (rounds.cov_norm vs rounds.round or the mean t_end_s),
    NaN rows left out: one line per group of runs (the mean over its seeds, min–max shaded);
    log scale when every value is positive. Runs without the column's data (the surrogate
    learner writes NaN) get a note instead of a line.

    Args:
        results: a run, a run or study folder (str or Path), a study, a list of these, or the
            table ``rounds_table(results, ["cov_norm"])``.
        x: ``round`` or ``time``.
        ax: axes to draw on (default: a new figure).
        title: the title; None: the study or run drawn (on a new figure); "": none.
    """
    column = round_or_time(x)
    table = tidy(
        results,
        lambda runs: rounds_table(runs, ["cov_norm"]),
        figure="cov_norm",
        needs=[*_HEADS, "cov_norm"],
        table=_how(["cov_norm"], []),
    )
    made = ax is None
    fig, ax = new_axes(ax)
    band = band_table(table, "cov_norm")
    draw_bands(ax, band, column, marker=".", lw=0.9)
    if band.empty:
        ax.text(
            0.5, 0.5, "no Cov data (cov_norm is NaN in every round)",
            ha="center", va="center", transform=ax.transAxes,
        )  # fmt: skip
    elif bool((band["min"] > 0).all()):
        ax.set_yscale("log")
    ax.set_ylabel(r"$\|\mathrm{Cov}(\theta_B, \theta_A)\|_F$ (unitless)")
    ax.set_xlabel(x_label(x))
    finish(ax, table, title, made=made)
    return fig
