"""Writing a study folder: ``study.json``, ``index.csv`` and the state of each run folder.

The formats are defined in ``wirelessfl.results.study``, which reads them back.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wirelessfl.errors import RESOURCE_ERRNOS, UserError, folder_problem, held_names, short_path
from wirelessfl.results.study import INDEX_FILE, STUDY_FILE, index_columns
from wirelessfl.results.summary import summarize
from wirelessfl.study.grid import format_value

if TYPE_CHECKING:
    from wirelessfl.config.scenario import Scenario
    from wirelessfl.study.plan import SweepPoint


def make_folder(folder: Path, option: str) -> None:
    """Create ``folder`` (and its parents); a path the system refuses is a ``UserError`` naming
    ``option``, while a full disk or quota (``RESOURCE_ERRNOS``) propagates as the ``OSError``
    the command line reports as a resource that ran out."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        if err.errno in RESOURCE_ERRNOS:
            raise
        problem = folder_problem(folder) or f"{short_path(folder)}: {err.strerror or err}"
        raise UserError(f"{option}: cannot create the folder: {problem}") from None


def check_study_folder(out: Path) -> None:
    """``out`` must be new, empty, or a study folder (holding ``study.json``): a sweep never
    writes into a folder it did not make (``UserError`` naming what the folder holds)."""
    if not out.is_dir() or (out / STUDY_FILE).is_file():
        return
    shown = held_names(out)
    if shown:
        raise UserError(
            f"--out: {out} is not empty and is not a study folder (it holds {shown}); "
            "give a folder that is new, empty, or a study to continue"
        )


def write_spec(out: Path, spec: dict[str, Any]) -> None:
    """Write ``study.json`` (the sweep's scenario, overrides, grid and seeds) atomically."""
    from wirelessfl.results.store import atomic_write_text

    atomic_write_text(out / STUDY_FILE, json.dumps(spec, indent=2, default=str) + "\n")


def folder_summary(folder: Path) -> dict[str, float]:
    """``summarize`` of a run folder's ``rounds.csv`` (all NaN if it is missing or unreadable)."""
    import pandas as pd

    try:
        rounds = pd.read_csv(folder / "rounds.csv")
        return summarize(rounds)
    except (OSError, ValueError, KeyError, IndexError):
        return summarize(None)


def _finished(folder: Path) -> bool:
    try:
        meta = json.loads((folder / "meta.json").read_text())
    except (OSError, ValueError):
        return False
    return bool(meta.get("finished", False))


def _check_same_scenario(folder: Path, scenario: Scenario) -> None:
    """Refuse to reuse a run folder written for a different scenario."""
    import yaml

    from wirelessfl.config.loader import read_mapping
    from wirelessfl.config.schema import to_dict
    from wirelessfl.results.groups import flat_config

    want = flat_config(yaml.safe_load(yaml.safe_dump(to_dict(scenario), sort_keys=False)))
    have = flat_config(read_mapping(folder / "config.yaml"))
    for key in want.keys() & have.keys():
        if want[key] != have[key]:
            raise UserError(
                f"sweep: {folder} already holds a run with {key}={have[key]!r}, but this sweep "
                f"asks for {want[key]!r}; choose another --out for a changed scenario"
            )


def run_state(folder: Path, scenario: Scenario) -> str:
    """What a run folder holds: ``finished``, ``unfinished`` (resume it) or ``missing``.

    A folder killed before its ``config.yaml`` was written holds nothing to resume: the run
    starts again in it (and refuses it if it holds anything but a leftover temporary file). One
    written for another scenario is refused (``UserError``).
    """
    if folder.is_file():
        raise UserError(f"sweep: {folder} is a file where this sweep keeps a run folder")
    if (folder / "config.yaml").exists():
        _check_same_scenario(folder, scenario)
        return "finished" if _finished(folder) else "unfinished"
    return "missing"


class StudyIndex:
    """The rows of ``index.csv``, one per run in plan order, rewritten atomically by ``write``."""

    def __init__(self, out: Path, grid_keys: Sequence[str], points: Sequence[SweepPoint]):
        self.path = out / INDEX_FILE
        self.columns = index_columns(grid_keys)
        self.rows: dict[str, dict[str, Any]] = {}
        for p in points:
            row: dict[str, Any] = {"run": p.name, "seed": p.seed, "error": ""}
            for key, value in p.params.items():
                row[key] = format_value(value) if isinstance(value, list | tuple | dict) else value
            self.rows[p.name] = row

    def update(self, name: str, **values: Any) -> None:
        """Set columns of the run ``name``'s row (written on the next ``write``)."""
        self.rows[name].update(values)

    def write(self) -> None:
        """Rewrite ``index.csv`` atomically."""
        import pandas as pd

        from wirelessfl.results.store import atomic_write_text

        table = pd.DataFrame(list(self.rows.values()), columns=self.columns)
        atomic_write_text(self.path, table.to_csv(index=False))
