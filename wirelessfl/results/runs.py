"""What the tables and figures accept as results, and how it becomes a list of loaded runs."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from wirelessfl.errors import UserError
from wirelessfl.results.store import RunResult, load
from wirelessfl.results.study import INDEX_FILE, StudyResult, load_study

#: a run, a list of runs, a study, or a run or study folder
Results = RunResult | Sequence[RunResult] | StudyResult | str | Path


def as_runs(results: Results) -> list[RunResult]:
    """Loaded runs from a run, a list, a study or a run/study folder path.

    Args:
        results: a run, runs, a study, or a folder (a study if it holds ``index.csv``).

    Returns:
        The runs, in the given (or index) order; never empty.
    """
    if isinstance(results, RunResult):
        return [results]
    if isinstance(results, StudyResult):
        runs = results.runs()
    elif isinstance(results, str | Path):
        path = Path(results)
        runs = load_study(path).runs() if (path / INDEX_FILE).exists() else [load(path)]
    else:
        runs = list(results)
    if not runs:
        raise UserError("plot: no runs to plot (the study has no run with a rounds.csv yet)")
    return runs
