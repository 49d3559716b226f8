"""Per-client bandwidth shares b_k^t of one run: a clients × rounds heatmap or stacked areas."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from wirelessfl.errors import UserError
from wirelessfl.plots.axes import new_axes
from wirelessfl.results.runs import Results
from wirelessfl.results.tables import share_table


def bandwidth_shares(
    results: Results | pd.DataFrame, *, style: str = "heatmap", ax: Axes | None = None
) -> Figure:
    """Per-client bandwidth shares b_k^t: draws ``share_table`` (rounds × clients, built from
    the first run of ``results`` unless given). ``heatmap``: clients × rounds image (blank where
    a client is not scheduled); ``area``: the shares stacked per round, one band per client
    ever scheduled."""
    table = results if isinstance(results, pd.DataFrame) else share_table(results)
    fig, ax = new_axes(ax, figsize=(7.0, 4.2))
    rounds = table.index.to_numpy()
    if style == "heatmap":
        data = table.to_numpy().T  # clients × rounds
        image = ax.imshow(
            np.ma.masked_invalid(data),
            aspect="auto",
            origin="lower",
            interpolation="nearest",
            extent=(rounds[0] - 0.5, rounds[-1] + 0.5, -0.5, data.shape[0] - 0.5),
            cmap="viridis",
        )
        clients = table.columns.to_numpy()
        step = max(1, len(clients) // 10)
        ax.set_yticks(np.arange(0, len(clients), step), [str(c) for c in clients[::step]])
        ax.set_ylabel("client")
        fig.colorbar(image, ax=ax, label="bandwidth share $b_k^t$")
    elif style == "area":
        filled = table.fillna(0.0)
        ax.stackplot(rounds, filled.to_numpy().T, linewidth=0, step="mid")
        ax.set_ylabel("bandwidth share $b_k^t$ (stacked)")
        ax.set_ylim(0, max(1.0, float(filled.sum(axis=1).max())) * 1.02)
    else:
        raise UserError(f"plot shares: style must be 'heatmap' or 'area', got {style!r}")
    ax.set_xlabel("round $t$")
    return fig
