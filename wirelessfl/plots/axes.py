"""Axes helpers shared by the figures: a new constrained-layout figure, a legend when useful."""

from __future__ import annotations

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from wirelessfl.errors import UserError


def new_axes(ax: Axes | None, figsize: tuple[float, float] = (6.4, 4.2)) -> tuple[Figure, Axes]:
    """``ax`` and its figure, or a new figure (``figsize`` in inches) with one axes."""
    if ax is not None:
        fig = ax.figure
        assert isinstance(fig, Figure)
        return fig, ax
    fig = Figure(figsize=figsize, layout="constrained")
    return fig, fig.add_subplot()


def legend(ax: Axes) -> None:
    """A legend when the axes hold more than one labelled artist."""
    if len(ax.get_legend_handles_labels()[0]) > 1:
        ax.legend(fontsize="small")


def round_or_time(x: str) -> str:
    """The ``rounds`` column for ``x="round"`` or ``x="time"`` (``round``, ``t_end_s``)."""
    if x not in ("round", "time"):
        raise UserError(f"plot: x must be 'round' or 'time', got {x!r}")
    return "round" if x == "round" else "t_end_s"
