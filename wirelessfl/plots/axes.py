"""What every figure shares: a new figure, a group's mean with its seeds' band, a legend off
the data, a title naming the study or run, and the x axis of a per-round figure.

A figure of a ``rounds.csv`` column ``C`` (per device and round, say) reads::

    def my_figure(results, *, x="round", ax=None, title=None):
        table = tidy(results, lambda runs: rounds_table(runs, ["C"]), figure="my_figure",
                     needs=["run", "group", "group_label", "seeds", "round", "t_end_s", "C"])
        made = ax is None
        fig, ax = new_axes(ax)
        draw_bands(ax, band_table(table, "C"), round_or_time(x))  # mean over seeds, min–max
        ax.set_ylabel("C per device and round [J]")                # a unit on every axis
        ax.set_xlabel(x_label(x))
        finish(ax, table, title, made=made)                        # grid, legend, title
        return fig

(``tidy``: ``wirelessfl.plots.inputs``; ``rounds_table``, ``band_table``:
``wirelessfl.results.tables``.)
"""

from __future__ import annotations

import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from wirelessfl.errors import UserError
from wirelessfl.results.tables import SOURCE

#: the shading of a group's min–max across seeds
BAND_ALPHA = 0.2


def new_axes(ax: Axes | None, figsize: tuple[float, float] = (7.2, 4.2)) -> tuple[Figure, Axes]:
    """``ax`` and its figure, or a new figure (``figsize`` in inches) with one axes."""
    if ax is not None:
        fig = ax.figure
        assert isinstance(fig, Figure)
        return fig, ax
    fig = Figure(figsize=figsize, layout="constrained")
    return fig, fig.add_subplot()


def seeds_label(label: str, seeds: int) -> str:
    """A group's legend entry: its label, and how many seeds its curve averages when more
    than one (``V=0.01 (3 seeds)``)."""
    return f"{label} ({seeds} seeds)" if seeds > 1 else label


def draw_band(
    ax: Axes,
    x: pd.Series,
    mean: pd.Series,
    low: pd.Series | None = None,
    high: pd.Series | None = None,
    *,
    label: str,
    **line: object,
) -> Line2D:
    """One curve: ``mean`` against ``x`` (``line``: keyword arguments of ``ax.plot``), with the
    band from ``low`` to ``high`` shaded in its colour when both are given. Returns the line."""
    (drawn,) = ax.plot(x, mean, label=label, **line)
    if low is not None and high is not None:
        ax.fill_between(x, low, high, color=drawn.get_color(), alpha=BAND_ALPHA, lw=0)
    return drawn


def seed_spread(
    curve: pd.DataFrame, low: str = "min", high: str = "max"
) -> tuple[pd.Series | None, pd.Series | None]:
    """A group's min–max columns ``low`` and ``high`` across its runs, or (None, None) when it
    has one run (column ``runs``): there is no band to shade."""
    if int(curve["runs"].iloc[0]) > 1:
        return curve[low], curve[high]
    return None, None


def draw_bands(ax: Axes, band: pd.DataFrame, x: str, **line: object) -> list[Line2D]:
    """Every group of a ``band_table`` (``wirelessfl.results.tables``): its mean against column
    ``x`` (``round`` or ``t_end_s``), its min–max across runs shaded where it has more than one
    run, labelled by :func:`seeds_label`. One line per group, in group order."""
    lines = []
    for _, curve in band.groupby("group", sort=True):
        label = seeds_label(str(curve["label"].iloc[0]), int(curve["seeds"].iloc[0]))
        low, high = seed_spread(curve)
        lines.append(draw_band(ax, curve[x], curve["mean"], low, high, label=label, **line))
    return lines


def legend(ax: Axes, handles: list | None = None, *, always: bool = False) -> None:
    """A legend to the right of the axes, off the data, when the axes hold more than one
    labelled artist (or ``always``); ``handles``: its entries instead of the axes' own."""
    entries = handles if handles is not None else ax.get_legend_handles_labels()[0]
    if len(entries) > 1 or (always and entries):
        ax.legend(
            handles=entries,
            fontsize="small",
            loc="upper left",
            bbox_to_anchor=(1.02, 1.0),
            borderaxespad=0.0,
            frameon=False,
        )


def figure_title(table: pd.DataFrame, title: str | None) -> str:
    """``title``, or when None the runs the table was built from (its ``attrs["source"]``,
    ``study cmp (8 runs)``; empty for a table built by hand)."""
    return str(table.attrs.get(SOURCE, "")) if title is None else title


def finish(
    ax: Axes, table: pd.DataFrame, title: str | None, *, made: bool, legends: bool = True
) -> None:
    """The last touches of a figure on ``ax``: a grid, the legend off the data (``legends``),
    and the title naming what it shows (``figure_title``) on a figure the function ``made``
    (given axes keep their title unless ``title`` is given)."""
    ax.grid(alpha=0.3)
    if legends:
        legend(ax)
    set_title(ax, table, title, made=made)


def set_title(ax: Axes, table: pd.DataFrame, title: str | None, *, made: bool) -> None:
    """The axes' title: ``figure_title`` on a figure the function made, or on given axes when
    ``title`` is given."""
    text = figure_title(table, title)
    if text and (made or title is not None):
        ax.set_title(text, fontsize="medium", loc="left")


def round_or_time(x: str) -> str:
    """The ``rounds`` column for ``x="round"`` or ``x="time"`` (``round``, ``t_end_s``)."""
    if x not in ("round", "time"):
        raise UserError(f"plot: x must be 'round' or 'time', got {x!r}")
    return "round" if x == "round" else "t_end_s"


def x_label(x: str) -> str:
    """The x axis of a per-round figure: the round index, or the virtual time [s]."""
    return "round $t$" if x == "round" else "virtual time [s]"


#: units of the suffixes the project's names carry (``d_th_s``, ``energy_budget_j``)
_SUFFIX_UNITS = {
    "_s": "s",
    "_j": "J",
    "_w": "W",
    "_hz": "Hz",
    "_bps": "bit/s",
    "_db": "dB",
    "_dbm": "dBm",
    "_m": "m",
    "_mps": "m/s",
    "_bits": "bits",
}


def key_label(key: str) -> str:
    """An axis label for a dotted config key or a summary column: the key, with the unit its
    name's suffix gives (``controller.d_th_s [s]``)."""
    for suffix, unit in sorted(_SUFFIX_UNITS.items(), key=lambda item: -len(item[0])):
        if key.endswith(suffix):
            return f"{key} [{unit}]"
    return key
