"""The offline stage: the bound γ^0(r) over the ranks, the chosen rank and O*(r)."""

from __future__ import annotations

import pandas as pd
from matplotlib.figure import Figure

from wirelessfl.errors import UserError
from wirelessfl.results.runs import Results
from wirelessfl.results.tables import offline_table


def offline_bound(results: Results | pd.DataFrame) -> Figure:
    """The offline stage: top, γ^0(r) for r = 1..r_max (meta controller.offline_bounds) with the
    chosen rank (meta controller.rank) marked; bottom, the offline O*(r) (controller.
    offline_sparsifications). Draws ``offline_table`` (built from ``results`` unless given):
    identical curves of several runs are drawn once."""
    table = results if isinstance(results, pd.DataFrame) else offline_table(results)
    if table.empty:
        raise UserError(
            "plot offline: no run has an offline stage (meta.json controller.offline_bounds; "
            "the tsfa controller writes it)"
        )
    curves = list(table.groupby("curve", sort=True))
    fig = Figure(figsize=(6.4, 5.6), layout="constrained")
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
    top.set_ylabel(r"offline bound $\gamma^0(r)$")
    bottom.set_ylabel("offline $O^*(r)$")
    bottom.set_xlabel("LoRA rank $r$")
    for ax in (top, bottom):
        ax.grid(alpha=0.3)
    top.legend(fontsize="small")
    return fig
