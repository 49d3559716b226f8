"""Loading run folders: the tables straight into pandas, with the scenario and the meta data.

A run folder holds ``config.yaml`` (the resolved scenario), ``meta.json`` (versions, seed, git
revision, device, times, and with ``eval_initial`` the ``initial_evaluation`` of the global
state before round 0), ``rounds.csv`` (one row per round), optionally ``events.csv`` and
``clients.csv``, ``devices.csv`` (each device's energy, ``wirelessfl.results.energy``), and
what ``--resume`` needs (``state.json``, ``checkpoints/``): see
``wirelessfl.results.run_folder`` for how they are written and checked.
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from wirelessfl.errors import UserError
from wirelessfl.results.columns import CORE_ROUND_COLUMNS
from wirelessfl.results.energy import DEVICES_FILE
from wirelessfl.results.files import atomic_write_text
from wirelessfl.results.run_folder import INITIAL_EVALUATION, read_evaluation

if TYPE_CHECKING:  # pandas loads with the first table read: a run itself never needs it
    import pandas as pd

__all__ = ["RunResult", "atomic_write_text", "load"]


@dataclass
class RunResult:
    """A loaded run: ``rounds`` (DataFrame), ``config`` and ``meta`` (dicts), ``events``,
    ``clients``, ``devices``, ``cells`` (the tables the run wrote, else None)."""

    path: Path
    rounds: pd.DataFrame
    config: dict[str, Any]
    meta: dict[str, Any]
    events: pd.DataFrame | None = None
    clients: pd.DataFrame | None = None
    devices: pd.DataFrame | None = None
    #: a network of cells' ``cells.csv`` (one row per cell and edge round), else None
    cells: pd.DataFrame | None = None

    @property
    def finished(self) -> bool:
        return bool(self.meta.get("finished", False))

    @property
    def initial_evaluation(self) -> dict[str, float] | None:
        """``meta.json``'s ``initial_evaluation``: ``accuracy`` (NaN: not measured) and
        ``test_loss`` of the global state before round 0, at virtual time 0; None when the run
        has none (``eval_initial``)."""
        return read_evaluation(self.meta.get(INITIAL_EVALUATION))

    @property
    def initial_accuracy(self) -> float:
        """The initial evaluation's accuracy; NaN when the run has none or did not measure it."""
        initial = self.initial_evaluation
        return math.nan if initial is None else initial.get("accuracy", math.nan)


def load(path: str | Path) -> RunResult:
    """Load a run folder written by ``wirelessfl run`` (``UserError`` naming a damaged file).

    A partial last row, which a run killed mid-write leaves, is not loaded.
    """
    path = Path(path)
    if not (path / "rounds.csv").is_file():
        raise UserError(f"results: {path} is not a run folder (no rounds.csv)")
    config = read_config(path)
    meta = _read_mapping(path / "meta.json", json.loads)
    return RunResult(
        path,
        read_rounds(path),
        config,
        meta,
        read_table(path / "events.csv"),
        read_table(path / "clients.csv"),
        read_table(path / DEVICES_FILE),
        read_table(path / "cells.csv"),
    )


def read_config(path: Path) -> dict[str, Any]:
    """A run folder's ``config.yaml`` ({} when missing; ``UserError`` when damaged)."""
    return _read_mapping(path / "config.yaml", _safe_load)


def _safe_load(text: str) -> Any:
    """``yaml.safe_load`` through libyaml when PyYAML has it (the same safe constructors, about
    ten times faster on a run's config)."""
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def _read_mapping(path: Path, parse) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        data = parse(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, yaml.YAMLError) as err:
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise UserError(f"results: {path} cannot be read ({first})") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise UserError(f"results: {path} does not hold a table of settings")
    return data


def read_rounds(folder: Path) -> pd.DataFrame | None:
    """A run folder's ``rounds.csv`` (:func:`read_table`), refused in one line when it lacks a
    column of ``CORE_ROUND_COLUMNS``."""
    return read_table(folder / "rounds.csv", CORE_ROUND_COLUMNS)


def read_table(path: Path, required: Sequence[str] = ()) -> pd.DataFrame | None:
    """A run folder's CSV table without a partial last row (None when missing; ``UserError``
    when it cannot be read or lacks a ``required`` column)."""
    import pandas as pd

    if not path.exists():
        return None
    try:
        raw = path.read_bytes()
        complete = raw[: raw.rfind(b"\n") + 1]
        table = pd.read_csv(io.BytesIO(complete))
    except (OSError, UnicodeDecodeError, ValueError) as err:  # pandas' parser errors too
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise UserError(f"results: {path} cannot be read as a table ({first})") from None
    missing = [name for name in required if name not in table.columns]
    if missing:
        noun, them = ("column", "it") if len(missing) == 1 else ("columns", "them")
        raise UserError(
            f"results: {path} has no {noun} {', '.join(missing)} (every {path.name} wirelessfl "
            f"writes has {them}: the file was cut or edited, or another program wrote it)"
        )
    return table
