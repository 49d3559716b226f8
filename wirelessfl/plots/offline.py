"""The offline stage: the bound γ^0(r) over the ranks, the chosen rank and O*(r)."""

from __future__ import annotations

import pandas as pd
from matplotlib.figure import Figure

from wirelessfl.errors import UserError
from wirelessfl.plots.axes import legend, set_title
from wirelessfl.plots.inputs import FigureInput, tidy
from wirelessfl.results.tables import offline_table

_NEEDS = ("curve", "label", "r", "bound", "sparsification", "chosen_rank")


def offline_bound(results: FigureInput, *, title: str | None = None) -> Figure:
    """The offline stage: top, γ^0(r) for r = 1..r_max (meta controller.offline_bounds) with the
    chosen rank (meta controller.rank) marked; bottom, the offline O*(r) (controller.
    offline_sparsifications). Draws ``offline_table`` (built from ``results`` unless given):
    identical curves of several runs are drawn once.

    Args:
        results: a run, a run or study folder (str or Path), a study, a list of these, or an
            ``offline_table``.
        title: the title; None: the study or run drawn; "": none.
    """
    table = tidy(
        results, offline_table, figure="offline_bound", needs=_NEEDS, table="offline_table"
    )
    if table.empty:
        raise UserError(
            "plot offline: no run has an offline stage (meta.json controller.offline_bounds; "
            "the tsfa controller writes it)"
        )
    curves = list(table.groupby("curve", sort=True))
    fig = Figure(figsize=(7.2, 5.6), layout="constrained")
    top, bottom = fig.subplots(2, 1, sharex=True)
    for _, curve in curves:
        ranks, bounds = curve["r"].to_numpy(), curve["bound"].to_numpy()
        label = curve["label"].iloc[0] if len(curves) > 1 else r"$\gamma^0(r)$"
        (line,) = top.plot(ranks, bounds, label=label)
        rank = curve["chosen_rank"].iloc[0]
        if pd.notna(rank) and 1 <= int(rank) <= len(bounds):
            r = int(rank)
            top.plot([r], [bounds[r - 1]], "*", ms=12, color=line.get_color(), label=f"r* = {r}")
            top.axvline(r, color=line.get_color(), ls=":", lw=1)
        if curve["sparsification"].notna().any():
            bottom.plot(ranks, curve["sparsification"].to_numpy(), color=line.get_color())
            if pd.notna(rank):
                bottom.axvline(int(rank), color=line.get_color(), ls=":", lw=1)
    top.set_yscale("log")
    top.set_ylabel(r"offline bound $\gamma^0(r)$ (on mean $\|\nabla F\|^2$)")
    bottom.set_ylabel("offline $O^*(r)$ (fraction sent)")
    bottom.set_xlabel("LoRA rank $r$")
    for ax in (top, bottom):
        ax.grid(alpha=0.3)
    legend(top, always=True)
    set_title(top, table, title, made=True)
    return fig
