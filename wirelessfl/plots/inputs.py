"""What every figure accepts: its tidy table, or results to build it from.

A figure function calls :func:`tidy` with what it was given and the ``wirelessfl.results.tables``
builder of its table; what comes back carries ``attrs["source"]`` (the study or run it shows),
which :func:`wirelessfl.plots.axes.set_title` writes on the figure.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pandas as pd

from wirelessfl.errors import UserError
from wirelessfl.results.runs import Results, as_runs
from wirelessfl.results.store import RunResult

#: what a figure function takes: results, or the tidy table it draws
FigureInput = Results | pd.DataFrame

#: what a figure accepts, for messages
ACCEPTED = (
    "a run (wirelessfl.results.load), a run or study folder (str or Path), a study "
    "(wirelessfl.study.load_study), a list of these, or the figure's table (wirelessfl.results)"
)


def tidy(
    results: FigureInput,
    build: Callable[[list[RunResult]], pd.DataFrame],
    *,
    figure: str,
    needs: Sequence[str] = (),
    table: str = "",
) -> pd.DataFrame:
    """The table a figure draws: ``results`` itself when it is a DataFrame (it must hold the
    columns ``needs``), else ``build`` of the runs ``results`` names
    (``wirelessfl.results.as_runs``).

    Args:
        results: a run, a run or study folder (str or Path), a study, a list of these, or a
            DataFrame.
        build: makes the table from loaded runs.
        figure: the figure function's name, which starts the one-line errors.
        needs: columns a given DataFrame must have.
        table: how to build the table by hand, for the message about missing columns
            (``rounds_table(results, ["delay_s"])``).

    Returns:
        The table.

    Raises:
        TypeError: ``results`` is none of the accepted kinds (one line naming what was given).
        UserError: a given table lacks a column, or a folder is not a run or study folder.
    """
    if isinstance(results, pd.DataFrame):
        missing = [c for c in needs if c not in results.columns]
        if missing:
            names = ", ".join(repr(c) for c in missing)
            how = f" (build it with {table})" if table else ""
            raise UserError(f"{figure}: the table given has no column {names}{how}")
        return results
    return build(as_runs(results, where=figure, accepted=ACCEPTED))
