"""Loading run folders: the tables straight into pandas, with the scenario and the meta data.

A run folder holds ``config.yaml`` (the resolved scenario), ``meta.json`` (versions, seed, git
revision, device, times), ``rounds.csv`` (one row per round), optionally ``events.csv`` and
``clients.csv``, and what ``--resume`` needs (``state.json``, ``checkpoints/``): see
``wirelessfl.results.run_folder`` for how they are written and checked.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from wirelessfl.errors import UserError
from wirelessfl.results.files import atomic_write_text

__all__ = ["RunResult", "atomic_write_text", "load"]


@dataclass
class RunResult:
    """A loaded run: ``rounds`` (DataFrame), ``config`` and ``meta`` (dicts), ``events``."""

    path: Path
    rounds: pd.DataFrame
    config: dict[str, Any]
    meta: dict[str, Any]
    events: pd.DataFrame | None = None
    clients: pd.DataFrame | None = None

    @property
    def finished(self) -> bool:
        return bool(self.meta.get("finished", False))


def load(path: str | Path) -> RunResult:
    """Load a run folder written by ``wirelessfl run``."""
    path = Path(path)
    if not (path / "rounds.csv").exists():
        raise UserError(f"results: {path} is not a run folder (no rounds.csv)")
    config_path, meta_path = path / "config.yaml", path / "meta.json"
    config = yaml.safe_load(config_path.read_text()) if config_path.exists() else {}
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
    return RunResult(
        path,
        _read_table(path / "rounds.csv"),
        config or {},
        meta,
        _read_table(path / "events.csv"),
        _read_table(path / "clients.csv"),
    )


def _read_table(path: Path) -> pd.DataFrame | None:
    if not path.exists():
        return None
    return pd.read_csv(path)
