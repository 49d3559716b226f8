"""Study folders: ``study.json`` (the sweep's spec) and ``index.csv`` (one row per run).

A study folder::

    STUDY/study.json   scenario, fixed overrides, grid and seeds of the last sweep into it, and
                       ``sweeps``: every distinct sweep into the folder, in order
    STUDY/index.csv    one row per run of every sweep into the folder (``index_columns``)
    STUDY/<run>/       a run folder (``wirelessfl.results.load``)

``wirelessfl.study`` writes them; this module defines their format and reads them. pandas is
imported inside the functions, so importing this module is cheap.
"""

from __future__ import annotations

import json
import logging
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
#: ``status`` of a run that was never started (its folder is not made yet)
PENDING = "pending"
#: ``status`` of a listed run whose folder is gone (deleted by hand)
MISSING = "missing"

_log = logging.getLogger(__name__)


def index_columns(param_keys: Iterable[str]) -> list[str]:
    """Columns of ``index.csv``: run, the parameter keys, seed, finished, status, summary, error.

    The parameter keys are every grid key of the sweeps into the study, then every other
    dotted config key with two resolved values or more among the runs that have it (not a key
    only one algorithm's runs have, with one value); each run's row holds its
    own resolved value of each (empty where its config has no such key). ``status`` is what
    the last sweep did: ``skipped`` (already finished), ``started``, ``resumed``, ``failed``
    (``error`` holds the message), ``pending`` (not reached yet), ``kept`` (a run of an
    earlier sweep that the last one did not ask for) or ``missing`` (its folder is gone).

    Args:
        param_keys: dotted config keys, in file order.

    Returns:
        The column names, in file order.
    """
    return ["run", *param_keys, "seed", "finished", "status", *SUMMARY_COLUMNS, "error"]


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
    sweeps: list[dict] = field(default_factory=list)

    def run_paths(self, *, finished_only: bool = False) -> list[Path]:
        """Run folders in index order (those holding a ``rounds.csv``).

        A listed run that was started but whose folder or ``rounds.csv`` is gone (deleted by
        hand) is left out with a one-line warning naming it; a ``pending`` run (never
        started) is left out silently."""
        rows = self.index
        if finished_only:
            rows = rows[rows["finished"].astype(bool)]
        paths = []
        for name, status in zip(rows["run"], rows["status"], strict=True):
            path = self.path / str(name)
            if (path / "rounds.csv").exists():
                paths.append(path)
            elif status != PENDING:
                _log.warning("wirelessfl: warning: %s", missing_run_text(path))
        return paths

    def runs(self, *, finished_only: bool = False) -> list[RunResult]:
        """The runs loaded with ``wirelessfl.results.load``, in index order."""
        from wirelessfl.results.store import load

        return [load(p) for p in self.run_paths(finished_only=finished_only)]


def missing_run_text(path: Path) -> str:
    """The warning for a run listed in ``index.csv`` whose folder (or its rounds.csv) is gone."""
    what = "its folder is gone" if not path.exists() else "it has no rounds.csv"
    return (
        f"study: {path} is listed in {INDEX_FILE} but {what} (deleted by hand?); it is left "
        "out (run its sweep again to redo it)"
    )


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
        sweeps=spec.get("sweeps", [spec] if spec else []),
    )
