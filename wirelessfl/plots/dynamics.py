"""Network dynamics over the rounds: delay and virtual queue, sparsification, Cov norm.

Each figure draws a ``rounds_table`` (one colour per run) built from ``results`` unless one is
given; ``x`` picks its ``round`` or ``t_end_s`` column.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from wirelessfl.plots.axes import legend, new_axes, round_or_time
from wirelessfl.results.runs import Results
from wirelessfl.results.tables import rounds_table

_D_TH, _O_MIN = "controller.d_th_s", "controller.o_min"


def _xlabel(x: str) -> str:
    return "round $t$" if x == "round" else "virtual time [s]"


def _finite(values: pd.Series) -> list[float]:
    """The distinct finite numbers of a column, sorted."""
    numbers = pd.to_numeric(values, errors="coerce").to_numpy(dtype=float)
    return sorted({float(v) for v in numbers[np.isfinite(numbers)]})


def queue_delay(results: Results | pd.DataFrame, *, x: str = "round") -> Figure:
    """Top: D^t (rounds.delay_s, thin), its running mean (thick) and D_th (config
    controller.d_th_s, dashed); bottom: the virtual queue Q^t (rounds.queue). One colour per
    run; x is rounds.round, or rounds.t_end_s with ``x="time"``. On the top axes each run adds
    two lines in that order (D^t, running mean); the bottom axes hold one Q^t line per run.
    A given table needs the columns ``rounds_table(results, ["delay_s", "queue"],
    ["controller.d_th_s"])`` has."""
    column = round_or_time(x)
    if not isinstance(results, pd.DataFrame):
        results = rounds_table(results, ["delay_s", "queue"], [_D_TH])
    fig = Figure(figsize=(7.0, 5.6), layout="constrained")
    top, bottom = fig.subplots(2, 1, sharex=True)
    n_runs = 0
    for _, run in results.groupby("run", sort=True):
        xs, delay, label = run[column], run["delay_s"], run["label"].iloc[0]
        (line,) = top.plot(xs, delay, lw=0.7, alpha=0.6, label="_delay")
        running = delay.cumsum() / np.arange(1, len(delay) + 1)
        top.plot(xs, running, lw=1.8, color=line.get_color(), label="_running mean")
        bottom.plot(xs, run["queue"], color=line.get_color(), label=label or "$Q^t$")
        n_runs += 1
    styles = ["--", "-.", ":"]
    handles = [
        Line2D([], [], color="0.4", lw=0.7, label="$D^t$"),
        Line2D([], [], color="0.4", lw=1.8, label="running mean of $D^t$"),
    ]
    for i, d_th in enumerate(_finite(results[_D_TH])):
        handles.append(
            top.axhline(d_th, color="k", ls=styles[i % 3], lw=1, label=f"$D_{{th}}$ = {d_th:.3g} s")
        )
    top.set_ylabel("round delay $D^t$ [s]")
    bottom.set_ylabel("virtual queue $Q^t$")
    bottom.set_xlabel(_xlabel(x))
    for ax in (top, bottom):
        ax.grid(alpha=0.3)
    top.legend(handles=handles, fontsize="small")
    if n_runs > 1:
        bottom.legend(fontsize="x-small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return fig


def sparsification(
    results: Results | pd.DataFrame, *, x: str = "round", ax: Axes | None = None
) -> Figure:
    """O^t over rounds (rounds.sparsification vs rounds.round, or t_end_s with ``x="time"``),
    one line per run, with O_min (config controller.o_min) dashed. A given table needs the
    columns ``rounds_table(results, ["sparsification"], ["controller.o_min"])`` has."""
    column = round_or_time(x)
    if not isinstance(results, pd.DataFrame):
        results = rounds_table(results, ["sparsification"], [_O_MIN])
    fig, ax = new_axes(ax)
    for _, run in results.groupby("run", sort=True):
        label = run["label"].iloc[0]
        ax.plot(run[column], run["sparsification"], lw=0.9, label=label or "$O^t$")
    for o_min in _finite(results[_O_MIN]):
        ax.axhline(o_min, color="k", ls="--", lw=1, label=f"$O_{{min}}$ = {o_min:.3g}")
    ax.set_ylabel("sparsification ratio $O^t$")
    ax.set_xlabel(_xlabel(x))
    ax.set_ylim(0, 1.05)
    ax.grid(alpha=0.3)
    legend(ax)
    return fig


def cov_norm(
    results: Results | pd.DataFrame, *, x: str = "round", ax: Axes | None = None
) -> Figure:
    """||Cov(θ_B, θ_A)||_F over rounds (rounds.cov_norm vs rounds.round or t_end_s), NaN rows
    left out, one line per run; log scale when every value is positive. Runs without the
    column's data (the surrogate learner writes NaN) get a note instead of a line. A given
    table needs the columns ``rounds_table(results, ["cov_norm"])`` has."""
    column = round_or_time(x)
    if not isinstance(results, pd.DataFrame):
        results = rounds_table(results, ["cov_norm"])
    fig, ax = new_axes(ax)
    measured = results[results["cov_norm"].notna()]
    for _, run in measured.groupby("run", sort=True):
        label = run["label"].iloc[0]
        ax.plot(run[column], run["cov_norm"], marker=".", lw=0.9, label=label or "Cov norm")
    if measured.empty:
        ax.text(
            0.5, 0.5, "no Cov data (cov_norm is NaN in every round)",
            ha="center", va="center", transform=ax.transAxes,
        )  # fmt: skip
    elif bool((measured["cov_norm"] > 0).all()):
        ax.set_yscale("log")
    ax.set_ylabel(r"$\|\mathrm{Cov}(\theta_B, \theta_A)\|_F$")
    ax.set_xlabel(_xlabel(x))
    ax.grid(alpha=0.3)
    legend(ax)
    return fig
