"""A run folder: the run's alone, checkpointed so that a resume loses nothing.

Layout::

    OUT/config.yaml                the resolved scenario (written once, atomically)
    OUT/meta.json                  versions, seed, times, the config's SHA-256 (atomic rewrites),
                                   the initial_evaluation before round 0 (eval_initial)
    OUT/rounds.csv, events.csv, clients.csv   append-only tables
    OUT/devices.csv                each device's energy over the rounds done (atomic rewrites when
                                   the run finishes or stops, and on resume)
    OUT/state.json                 names the current checkpoint (atomic)
    OUT/checkpoints/<n>/           state after round n - 1, with manifest.json

A checkpoint is built in ``checkpoints/.partial-<n>``, then
renamed to ``checkpoints/<n>``; it becomes current when ``state.json`` is atomically replaced.
Its ``manifest.json`` records the next round, the SHA-256 of ``config.yaml``, of every file it
holds, and each table's :class:`~wirelessfl.results.table_writer.TableMark` (rows, bytes,
SHA-256 of those bytes). A resume checks all of it and refuses, with one line saying what is
damaged and what to do, anything that disagrees; rows written after the checkpoint are cut and
re-run. Without ``state.json`` the latest complete checkpoint is used (it is what a kill between
the rename and ``state.json`` leaves); with no checkpoint at all the run starts again.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wirelessfl.errors import UserError, held_names
from wirelessfl.results.files import TMP_SUFFIX, atomic_write_text, file_sha256
from wirelessfl.results.folder_lock import LOCK_FILE
from wirelessfl.results.table_writer import TableMark

CONFIG = "config.yaml"
META = "meta.json"
#: The ``meta.json`` key of the evaluation of the global state before round 0 (``eval_initial``).
INITIAL_EVALUATION = "initial_evaluation"
#: The ``meta.json`` key of why a run ended before ``rounds`` (``privacy.target_epsilon``).
STOPPED_EARLY = "stopped_early"
STATE = "state.json"
CHECKPOINTS = "checkpoints"
MANIFEST = "manifest.json"
TABLES = ("rounds", "events", "clients", "cells")
#: Written to meta.json and every manifest; a resume refuses a folder of another format.
FORMAT = 2
_PARTIAL = ".partial-"
_ROUND_NAME = re.compile(r"[0-9]{1,12}")


class DamagedRunError(UserError):
    """A run folder that cannot be resumed as it is (one line: what, and what to do)."""


def table_path(out: Path, name: str) -> Path:
    """The CSV file of table ``name`` (one of :data:`TABLES`)."""
    return out / f"{name}.csv"


def claim_new(out: Path) -> None:
    """Make ``out`` a new run's folder: it must be new or empty (``UserError`` otherwise)."""
    try:
        if out.exists() and not out.is_dir():
            raise UserError(f"--out: {out} is a file; give a folder that is new or empty")
        if out.is_dir():
            leftover = out / (CONFIG + TMP_SUFFIX)  # a kill while the config was written
            if leftover.is_file():
                leftover.unlink()
            shown = held_names(out, ignore=(LOCK_FILE,))  # a lock alone: a run killed at once
            if shown and (out / CONFIG).exists():
                raise UserError(
                    f"--out: {out} already holds a run; continue it with "
                    f"`wirelessfl run --resume {out}` or choose another folder"
                )
            if shown:
                raise UserError(
                    f"--out: {out} is not empty and is not a wirelessfl run (it holds {shown}); "
                    "give a folder that is new or empty"
                )
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise UserError(f"--out: cannot use {out} as a run folder: {err.strerror or err}") from None
    if not os.access(out, os.W_OK | os.X_OK):
        raise UserError(f"--out: {out} is not writable")


@dataclass(frozen=True)
class Checkpoint:
    """A complete checkpoint: the next round, the config's hash, its files and the table marks."""

    folder: Path
    next_round: int
    config_sha256: str
    files: dict[str, str]
    tables: dict[str, TableMark]

    def manifest(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "next_round": self.next_round,
            "config_sha256": self.config_sha256,
            "files": self.files,
            "tables": {name: mark.to_json() for name, mark in self.tables.items()},
        }

    @classmethod
    def read(cls, folder: Path) -> Checkpoint:
        """Parse ``folder/manifest.json``; ``ValueError`` naming what is wrong."""
        try:
            data = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ValueError(f"it has no {MANIFEST}") from None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            raise ValueError(f"its {MANIFEST} is damaged") from None
        if not isinstance(data, Mapping) or data.get("format") != FORMAT:
            raise ValueError(f"its {MANIFEST} is of another format (another wirelessfl version?)")
        n, sha = data.get("next_round"), data.get("config_sha256")
        files, tables = data.get("files"), data.get("tables")
        if not (type(n) is int and n >= 0 and isinstance(sha, str)):
            raise ValueError(f"its {MANIFEST} is damaged")
        if not (isinstance(files, Mapping) and isinstance(tables, Mapping)):
            raise ValueError(f"its {MANIFEST} is damaged")
        marks = {str(name): TableMark.from_json(mark) for name, mark in tables.items()}
        return cls(folder, n, sha, {str(k): str(v) for k, v in files.items()}, marks)


def config_sha256(out: Path) -> str:
    """SHA-256 of the run's ``config.yaml``."""
    return file_sha256(out / CONFIG)


def write_checkpoint(
    out: Path,
    next_round: int,
    config_hash: str,
    tables: Mapping[str, TableMark],
    save: Callable[[Path], None],
) -> Checkpoint:
    """Write a checkpoint (``save`` fills its folder), make it current, drop the older ones."""
    root = out / CHECKPOINTS
    partial = root / f"{_PARTIAL}{next_round}"
    if partial.exists():
        shutil.rmtree(partial)
    partial.mkdir(parents=True)
    save(partial)
    files = {}
    for path in sorted(p for p in partial.rglob("*") if p.is_file()):
        files[path.relative_to(partial).as_posix()] = file_sha256(path)
    final = root / str(next_round)
    checkpoint = Checkpoint(final, next_round, config_hash, files, dict(tables))
    atomic_write_text(partial / MANIFEST, json.dumps(checkpoint.manifest(), indent=1))
    if final.exists():  # left by an earlier attempt that never became current
        shutil.rmtree(final)
    os.replace(partial, final)
    state = {"format": FORMAT, "next_round": next_round, "folder": str(next_round)}
    atomic_write_text(out / STATE, json.dumps(state))
    for old in root.iterdir():
        ours = _ROUND_NAME.fullmatch(old.name) or old.name.startswith(_PARTIAL)
        if ours and old.name != final.name and old.is_dir():
            shutil.rmtree(old, ignore_errors=True)
    return checkpoint


def find_checkpoint(out: Path) -> Checkpoint | None:
    """The checkpoint a resume continues from (None: there is none, start again).

    ``state.json`` names it; without ``state.json``, the latest complete one in
    ``checkpoints/``. Raises ``DamagedRunError`` when ``state.json`` is damaged or names a
    checkpoint that is missing, incomplete or of another round.
    """
    state_path = out / STATE
    fix = f"delete {state_path} to resume from the latest complete checkpoint"
    if not state_path.exists():
        return _latest_checkpoint(out)
    try:
        state = json.loads(state_path.read_text(encoding="utf-8"))
        n, name = state["next_round"], state["folder"]
        if not (type(n) is int and isinstance(name, str) and _ROUND_NAME.fullmatch(name)):
            raise ValueError
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError):
        raise DamagedRunError(f"--resume {out}: {STATE} is damaged; {fix}") from None
    folder = out / CHECKPOINTS / name
    if not folder.is_dir():
        raise DamagedRunError(f"--resume {out}: {STATE} names {folder}, which is missing; {fix}")
    try:
        checkpoint = Checkpoint.read(folder)
    except ValueError as err:
        raise DamagedRunError(
            f"--resume {out}: checkpoint {folder} is unusable: {err}; {fix}"
        ) from None
    if checkpoint.next_round != n or name != str(n):
        raise DamagedRunError(
            f"--resume {out}: {STATE} says round {n} but {folder} holds round "
            f"{checkpoint.next_round}; {fix}"
        )
    return checkpoint


def _latest_checkpoint(out: Path) -> Checkpoint | None:
    root = out / CHECKPOINTS
    if not root.is_dir():
        return None
    found = []
    for folder in root.iterdir():
        if not (_ROUND_NAME.fullmatch(folder.name) and folder.is_dir()):
            continue
        try:
            checkpoint = Checkpoint.read(folder)
        except ValueError:
            continue
        if checkpoint.next_round == int(folder.name):
            found.append(checkpoint)
    return max(found, key=lambda c: c.next_round, default=None)


def verify_checkpoint(out: Path, checkpoint: Checkpoint, config_hash: str, rounds: int) -> None:
    """Check the config's hash, every file's hash and the round against the checkpoint."""
    again = run_again(out)
    if checkpoint.config_sha256 != config_hash:
        raise DamagedRunError(
            f"--resume {out}: {CONFIG} differs from the one checkpoint {checkpoint.folder.name} "
            "was written with (it was edited or cut); restore it"
        )
    if checkpoint.next_round > rounds:
        raise DamagedRunError(
            f"--resume {out}: checkpoint {checkpoint.folder.name} is past the scenario's "
            f"{rounds} rounds; {again}"
        )
    for name, digest in checkpoint.files.items():
        path = checkpoint.folder / name
        if not path.is_file():
            raise DamagedRunError(f"--resume {out}: {path} is missing; {again}")
        if file_sha256(path) != digest:
            raise DamagedRunError(
                f"--resume {out}: {path} is damaged (its contents differ from the checkpoint's "
                f"record); {again}"
            )


def run_again(out: Path) -> str:
    """The advice for a folder that cannot be continued: the same scenario, a new folder."""
    return f"run the scenario again into a new folder: wirelessfl run {out / CONFIG} --out NEW"


def json_evaluation(evaluation: Mapping[str, float]) -> dict[str, float | None]:
    """An evaluation (metric -> number) as JSON holds it: NaN (not measured) as null."""
    return {k: (None if math.isnan(v) else float(v)) for k, v in evaluation.items()}


def read_evaluation(value: Any) -> dict[str, float] | None:
    """What :func:`json_evaluation` wrote (null as NaN); None for anything else (absent, or
    not a table of numbers)."""
    if not isinstance(value, Mapping) or "accuracy" not in value or "test_loss" not in value:
        return None
    out = {}
    for k, v in value.items():
        if v is None:
            out[str(k)] = math.nan
        elif isinstance(v, int | float) and not isinstance(v, bool):
            out[str(k)] = float(v)
        else:
            return None
    return out
