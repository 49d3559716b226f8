"""What the tables and figures accept as results, and how it becomes a list of loaded runs."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from wirelessfl.errors import UserError, short_path
from wirelessfl.results.store import RunResult, load
from wirelessfl.results.study import INDEX_FILE, StudyResult, load_study

#: one source of runs: a loaded run, a loaded study, or a run or study folder
Source = RunResult | StudyResult | str | os.PathLike
#: a source, or a list (tuple, any iterable) of sources
Results = Source | Iterable[Source]

#: what ``as_runs`` accepts, for messages
ACCEPTED = (
    "a run (wirelessfl.results.load), a run or study folder (str or Path), a study "
    "(wirelessfl.study.load_study) or a list of these"
)


def as_runs(
    results: Results, *, where: str = "results", accepted: str = ACCEPTED
) -> list[RunResult]:
    """Loaded runs from a run, a study, a run or study folder, or a list of any of these.

    A folder is a study when it holds ``index.csv``. A run folder reached twice (the same
    folder given twice, or a study and one of its runs) counts once; loaded runs are kept as
    given.

    Args:
        results: a source of runs or a list of them (nested lists are not flattened).
        where: what the one-line errors start with (the function that was given ``results``).
        accepted: what the ``TypeError`` says is accepted.

    Returns:
        The runs, in the given order (a study's in index order); never empty.

    Raises:
        TypeError: ``results`` (or an item of the list) is none of the accepted kinds; one line.
        UserError: a folder is not a run or study folder, or there are no runs.
    """
    items = [results] if _is_source(results) else _items(results, where, accepted)
    for item in items:
        if not _is_source(item):
            raise TypeError(f"{where}: a list holds {_kind(item)}; each item must be {accepted}")
    runs: list[RunResult] = []
    seen: set[Path] = set()
    for item in items:
        for run, loaded in _runs_of(item, where):
            folder = Path(run.path).resolve()
            if loaded and folder in seen:
                continue
            seen.add(folder)
            runs.append(run)
    if not runs:
        raise UserError(f"{where}: no runs to plot (the study has no run with a rounds.csv yet)")
    return runs


def _is_source(item: Any) -> bool:
    return isinstance(item, RunResult | StudyResult | str | os.PathLike)


def _items(results: Any, where: str, accepted: str) -> list[Any]:
    import pandas as pd

    if isinstance(results, pd.DataFrame):
        raise TypeError(
            f"{where}: got a DataFrame; the figures of wirelessfl.plots draw tables, the tables "
            f"of wirelessfl.results are built from {accepted}"
        )
    if isinstance(results, dict | bytes) or not isinstance(results, Iterable):
        raise TypeError(f"{where}: got {_kind(results)}; give {accepted}")
    return list(results)


def _kind(item: Any) -> str:
    """What ``item`` is, for a one-line message: its type and a short repr."""
    text = repr(item)
    text = text if len(text) <= 40 else text[:37] + "..."
    return f"{type(item).__name__} {text}"


def _runs_of(source: Source, where: str) -> list[tuple[RunResult, bool]]:
    """The runs of one source, each with whether it was loaded here (from a folder)."""
    if isinstance(source, RunResult):
        return [(source, False)]
    if isinstance(source, StudyResult):
        return [(run, True) for run in source.runs()]
    path = Path(source)
    if not path.exists():
        raise UserError(f"{where}: {short_path(path)} does not exist (give a run or study folder)")
    if (path / INDEX_FILE).exists():
        return [(run, True) for run in load_study(path).runs()]
    return [(load(path), True)]


def study_of(run: RunResult) -> Path | None:
    """The study folder holding ``run``'s folder (its parent holds ``index.csv``), or None."""
    parent = Path(run.path).parent
    return parent if (parent / INDEX_FILE).is_file() else None


def source_name(runs: list[RunResult], *, most: int = 3) -> str:
    """What ``runs`` are, for a figure's title: ``run r1``, ``run r1 of study cmp``,
    ``study cmp (8 runs)``, ``studies a, b (12 runs)``, ``study a and run r9 (5 runs)``; at
    most ``most`` names of each kind, then ``+N more``."""
    if len(runs) == 1:
        study = study_of(runs[0])
        name = f"run {Path(runs[0].path).name}"
        return f"{name} of study {study.name}" if study is not None else name
    studies: dict[str, None] = {}
    lone: dict[str, None] = {}
    for run in runs:
        study = study_of(run)
        if study is not None:
            studies[study.name] = None
        else:
            lone[Path(run.path).name] = None
    parts = []
    for kind, names in (("study", list(studies)), ("run", list(lone))):
        if names:
            more = f" +{len(names) - most} more" if len(names) > most else ""
            plural = {"study": "studies", "run": "runs"}[kind] if len(names) > 1 else kind
            parts.append(f"{plural} {', '.join(names[:most])}{more}")
    return f"{' and '.join(parts)} ({len(runs)} runs)"
