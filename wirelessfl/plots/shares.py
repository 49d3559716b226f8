"""Per-client bandwidth shares b_k^t of one run: a clients × rounds heatmap or stacked areas."""

from __future__ import annotations

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from wirelessfl.errors import UserError
from wirelessfl.plots.axes import new_axes, set_title
from wirelessfl.plots.inputs import FigureInput, tidy
from wirelessfl.results.tables import share_table


def bandwidth_shares(
    results: FigureInput,
    *,
    style: str = "heatmap",
    ax: Axes | None = None,
    title: str | None = None,
) -> Figure:
    """Per-client bandwidth shares b_k^t: draws ``share_table`` (rounds × clients, built from
    the first run of ``results`` unless given; the title names that run). ``heatmap``:
    clients × rounds image (blank where a client is not scheduled); ``area``: the shares
    stacked per round, one band per client ever scheduled.

    Args:
        results: a run, a run or study folder (str or Path), a study, a list of these (the
            first run is drawn), or a ``share_table``.
        style: ``heatmap`` or ``area``.
        ax: axes to draw on (default: a new figure).
        title: the title; None: the run drawn (on a new figure); "": none.
    """
    if style not in ("heatmap", "area"):
        raise UserError(f"plot shares: style must be 'heatmap' or 'area', got {style!r}")
    table = tidy(results, share_table, figure="bandwidth_shares")
    made = ax is None
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
        fig.colorbar(image, ax=ax, label="bandwidth share $b_k^t$ (fraction of $B$)")
    else:
        filled = table.fillna(0.0)
        ax.stackplot(rounds, filled.to_numpy().T, linewidth=0, step="mid")
        ax.set_ylabel("bandwidth share $b_k^t$, stacked (fraction of $B$)")
        ax.set_ylim(0, max(1.0, float(filled.sum(axis=1).max())) * 1.02)
    ax.set_xlabel("round $t$")
    set_title(ax, table, title, made=made)
    return fig
