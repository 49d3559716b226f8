"""Study folders: ``study.json`` (the sweep's spec) and ``index.csv`` (one row per run).

A study folder::

    STUDY/study.json   scenario, fixed overrides, grid and seeds of the last sweep into it
    STUDY/index.csv    one row per run of that sweep (``index_columns``)
    STUDY/<run>/       a run folder (``wirelessfl.results.load``)

``wirelessfl.study`` writes them; this module defines their format and reads them. pandas is
imported inside the functions, so importing this module is cheap.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from wirelessfl.errors import UserError
from wirelessfl.results.summary import SUMMARY_COLUMNS

if TYPE_CHECKING:
    import pandas as pd

    from wirelessfl.results.store import RunResult

INDEX_FILE = "index.csv"
STUDY_FILE = "study.json"


def index_columns(grid_keys: Iterable[str]) -> list[str]:
    """Columns of ``index.csv``: run, the grid keys, seed, finished, status, summary, error.

    ``status`` is what the last sweep did: ``skipped`` (already finished), ``started``,
    ``resumed``, ``failed`` (``error`` holds the message) or ``pending`` (not reached yet).

    Args:
        grid_keys: the sweep's dotted grid keys, in grid order.

    Returns:
        The column names, in file order.
    """
    return ["run", *grid_keys, "seed", "finished", "status", *SUMMARY_COLUMNS, "error"]


@dataclass
class StudyResult:
    """A study folder: ``index`` (one row per run, see ``index.csv``) and the sweep's spec."""

    path: Path
    index: pd.DataFrame
    grid: dict[str, list] = field(default_factory=dict)
    seeds: list[int] = field(default_factory=list)
    scenario: str | None = None
    overrides: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)

    def run_paths(self, *, finished_only: bool = False) -> list[Path]:
        """Run folders in index order (those holding a ``rounds.csv``)."""
        rows = self.index
        if finished_only:
            rows = rows[rows["finished"].astype(bool)]
        paths = [self.path / str(name) for name in rows["run"]]
        return [p for p in paths if (p / "rounds.csv").exists()]

    def runs(self, *, finished_only: bool = False) -> list[RunResult]:
        """The runs loaded with ``wirelessfl.results.load``, in index order."""
        from wirelessfl.results.store import load

        return [load(p) for p in self.run_paths(finished_only=finished_only)]


def load_study(path: str | Path) -> StudyResult:
    """Load a study folder written by ``run_sweep`` / ``wirelessfl sweep``.

    Args:
        path: the study folder (holding ``index.csv``).

    Returns:
        The study; ``failed`` maps each run whose ``status`` is ``failed`` to its error.
    """
    import pandas as pd

    path = Path(path)
    if not (path / INDEX_FILE).exists():
        raise UserError(f"study: {path} is not a study folder (no {INDEX_FILE})")
    index = pd.read_csv(path / INDEX_FILE)
    spec = json.loads((path / STUDY_FILE).read_text()) if (path / STUDY_FILE).exists() else {}
    failed = {
        str(row["run"]): str(row["error"])
        for _, row in index.iterrows()
        if row.get("status") == "failed"
    }
    return StudyResult(
        path,
        index,
        grid=spec.get("grid", {}),
        seeds=spec.get("seeds", []),
        scenario=spec.get("scenario"),
        overrides=spec.get("overrides", []),
        failed=failed,
    )
