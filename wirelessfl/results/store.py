"""Run folders: append-only, per-round-atomic tables that load straight into pandas.

A run folder holds ``config.yaml`` (the resolved scenario), ``meta.json`` (versions, seed, git
revision, device, times), ``rounds.csv`` (one row per round), optionally ``events.csv`` and
``clients.csv``, and ``state/`` (what ``--resume`` needs). Each round's rows are written with one
``write`` call per table and flushed before the round's state is saved, and a resume first cuts
every table back to the rounds its state covers, so a killed run loses at most the round in
flight and resumes to the same final tables. Floats are written with 17 significant digits, so
they read back bit for bit.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from wirelessfl.errors import UserError


def _cell(value: Any) -> str:
    kind = type(value)
    if kind is int:
        return str(value)
    if kind is float and value == value and value not in (math.inf, -math.inf):
        return repr(value)
    if isinstance(value, float):
        value = float(value)  # numpy scalars repr as "np.float64(...)"
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, bool):
        return str(int(value))
    if hasattr(value, "item"):  # numpy scalar
        return _cell(value.item())
    text = str(value)
    if any(c in text for c in ',"\n'):
        return '"' + text.replace('"', '""') + '"'
    return text


def atomic_write_text(path: Path, text: str) -> None:
    """Write a whole file atomically (temp file + rename)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


class TableWriter:
    """An append-only CSV table; rows of one round go out in a single write."""

    def __init__(self, path: Path, columns: Sequence[str]):
        self.path = path
        self.columns = list(columns)
        new = not path.exists() or path.stat().st_size == 0
        if not new:
            with open(path, encoding="utf-8") as fh:
                header = fh.readline().rstrip("\n").split(",")
            if header != self.columns:
                raise UserError(
                    f"{path.name}: its columns differ from the ones this run writes (was it "
                    "written by another version of wirelessfl?); continue it with that version "
                    "or start a new run"
                )
        self._fh = open(path, "a", encoding="utf-8")  # noqa: SIM115 - kept open for the run
        if new:
            self._fh.write(",".join(self.columns) + "\n")
            self._fh.flush()

    def append(self, rows: Iterable[dict[str, Any]]) -> None:
        lines = [",".join(_cell(row.get(c, "")) for c in self.columns) for row in rows]
        if lines:
            self._fh.write("\n".join(lines) + "\n")
            self._fh.flush()

    def append_lines(self, lines: list[str]) -> None:
        """Append preformatted CSV lines (columns in this table's order)."""
        if lines:
            self._fh.write("\n".join(lines) + "\n")
            self._fh.flush()

    def close(self) -> None:
        self._fh.close()


def truncate_table(path: Path, keep_rounds: int) -> None:
    """Drop rows whose round is >= ``keep_rounds`` and any partial last line (for resume)."""
    if not path.exists():
        return
    raw = path.read_bytes()
    if not raw:
        return
    lines = raw.split(b"\n")
    header, body = lines[0], lines[1:]
    # the last element is either the empty string after the final newline, or a partial line
    # left by a killed write: both go
    body = body[:-1]
    kept = [line for line in body if line and int(line.split(b",", 1)[0]) < keep_rounds]
    atomic_write_text(path, (b"\n".join([header, *kept]) + b"\n").decode("utf-8"))


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
