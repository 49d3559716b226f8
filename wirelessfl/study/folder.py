"""Writing a study folder: ``study.json``, ``index.csv`` and the state of each run folder.

The formats are defined in ``wirelessfl.results.study``, which reads them back. A sweep into a
study adds to it: the runs already listed stay in ``index.csv``, a run whose resolved config
equals one of them reuses its folder, and every other run gets a folder of its own
(:func:`place_run`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wirelessfl.errors import RESOURCE_ERRNOS, UserError, folder_problem, held_names, short_path
from wirelessfl.results.folder_lock import LOCK_FILE
from wirelessfl.results.study import (
    INDEX_FILE,
    MISSING,
    PENDING,
    STUDY_FILE,
    index_columns,
    missing_run_text,
)
from wirelessfl.results.summary import summarize_folder
from wirelessfl.study.grid import format_value
from wirelessfl.study.plan import run_name

if TYPE_CHECKING:
    from wirelessfl.config.scenario import Scenario
    from wirelessfl.study.plan import SweepPoint

_log = logging.getLogger(__name__)
#: ``status`` of a listed run that the last sweep did not ask for
KEPT = "kept"


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
    shown = held_names(out, ignore=(LOCK_FILE,))  # a lock alone: a sweep killed at once
    if shown:
        raise UserError(
            f"--out: {out} is not empty and is not a study folder (it holds {shown}); "
            "give a folder that is new, empty, or a study to continue"
        )


def write_spec(out: Path, spec: dict[str, Any]) -> list[dict[str, Any]]:
    """Write ``study.json`` atomically: the sweep's scenario, overrides, grid and seeds, and
    ``sweeps``, every distinct sweep into the folder in order (``spec`` added if new).

    Returns:
        The sweeps.
    """
    from wirelessfl.results.store import atomic_write_text

    spec = json.loads(json.dumps(spec, default=str))
    try:
        old = json.loads((out / STUDY_FILE).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        old = {}
    sweeps = old.get("sweeps") if isinstance(old, dict) else None
    if not isinstance(sweeps, list):  # a study written before sweeps were listed
        sweeps = [{k: old[k] for k in spec if k in old}] if old else []
    if spec not in sweeps:
        sweeps.append(spec)
    text = json.dumps({**spec, "sweeps": sweeps}, indent=2, default=str)
    atomic_write_text(out / STUDY_FILE, text + "\n")
    return sweeps


def folder_summary(folder: Path) -> dict[str, float]:
    """``summarize_folder`` of a run folder: its ``SUMMARY_COLUMNS`` (all NaN when its tables
    are missing or unreadable)."""
    return summarize_folder(folder)


def _finished(folder: Path) -> bool:
    try:
        meta = json.loads((folder / "meta.json").read_text())
    except (OSError, ValueError):
        return False
    return bool(meta.get("finished", False))


def resolved_config(scenario: Scenario) -> dict[str, Any]:
    """A scenario as its run folder's ``config.yaml`` holds it (nested plain values)."""
    import yaml

    from wirelessfl.config.schema import to_dict

    return yaml.safe_load(yaml.safe_dump(to_dict(scenario), sort_keys=False))


def _read_config(folder: Path) -> dict[str, Any] | None:
    """A run folder's ``config.yaml`` (None when it has none)."""
    from wirelessfl.config.loader import read_mapping

    if not (folder / "config.yaml").is_file():
        return None
    return read_mapping(folder / "config.yaml")


def _differing_key(want: dict[str, Any], have: dict[str, Any]) -> str | None:
    """The first dotted key both configs hold with different values (None: they agree)."""
    from wirelessfl.results.groups import flat_config

    want_flat, have_flat = flat_config(want), flat_config(have)
    for key in want_flat.keys() & have_flat.keys():
        if want_flat[key] != have_flat[key]:
            return key
    return None


def _config_key(config: dict[str, Any]) -> str:
    from wirelessfl.results.groups import flat_config

    return json.dumps(flat_config(config), sort_keys=True, default=str)


def run_state(folder: Path) -> str:
    """What a run folder holds: ``finished``, ``unfinished`` (resume it) or ``missing``.

    A folder killed before its ``config.yaml`` was written holds nothing to resume: the run
    starts again in it (and refuses it if it holds anything but a leftover temporary file).
    """
    if folder.is_file():
        raise UserError(f"sweep: {folder} is a file where this sweep keeps a run folder")
    if (folder / "config.yaml").exists():
        return "finished" if _finished(folder) else "unfinished"
    return "missing"


def _param_text(value: Any) -> str:
    """An index cell as text: the ``--set`` text of a value, empty for an absent key."""
    if isinstance(value, float) and math.isnan(value):
        return ""
    return format_value(value)


class StudyIndex:
    """The rows of ``index.csv``: the runs already listed, then this sweep's new ones, each
    with its resolved config; rewritten atomically by ``write``."""

    def __init__(self, out: Path):
        self.out = out
        self.path = out / INDEX_FILE
        self.rows: dict[str, dict[str, Any]] = {}
        self.configs: dict[str, dict[str, Any] | None] = {}
        self.keys: list[str] = []
        self._by_config: dict[str, str] = {}
        self._read()

    def _read(self) -> None:
        """Load the listed runs: their rows, and their configs from their folders (a listed
        run whose folder is gone stays listed, as ``missing``, with a one-line warning)."""
        import pandas as pd

        if not self.path.is_file():
            return
        try:
            table = pd.read_csv(self.path, dtype=str, keep_default_na=False)
        except (OSError, UnicodeDecodeError, ValueError):
            raise UserError(
                f"sweep: {self.path} cannot be read as a table; restore it, or choose another --out"
            ) from None
        if "run" not in table.columns or "seed" not in table.columns:
            raise UserError(f"sweep: {self.path} is not a study index (no run or seed column)")
        columns = list(table.columns)
        self.keys = columns[1 : columns.index("seed")]
        for row in table.to_dict("records"):
            name = str(row["run"])
            folder = self.out / name
            config = _read_config(folder) if folder.is_dir() else None
            self.rows[name] = {**row, "status": row.get("status", KEPT) or KEPT}
            self.configs[name] = config
            if config is not None:
                self._by_config.setdefault(_config_key(config), name)
            elif row.get("status") != PENDING:
                _log.warning("wirelessfl: warning: %s", missing_run_text(folder))
                self.rows[name].update(status=MISSING, finished=False)

    def match(self, config: dict[str, Any]) -> str | None:
        """The listed run whose resolved config is ``config`` (None: none)."""
        return self._by_config.get(_config_key(config))

    def takes(self, name: str, config: dict[str, Any]) -> bool:
        """Whether the folder ``name`` may hold the run of ``config``: it holds no run, or that
        run (its ``config.yaml`` agrees on every key both hold), and no other listed run whose
        folder is gone had that name (recorded parameters disagreeing with ``config``)."""
        from wirelessfl.results.groups import lookup

        folder = self.out / name
        have = _read_config(folder) if folder.is_dir() else None
        if have is not None:
            return _differing_key(config, have) is None
        row = self.rows.get(name)
        if row is None or self.configs.get(name) is not None:
            return True
        return all(row.get(k, "") in ("", _param_text(lookup(config, k))) for k in self.keys)

    def add(self, name: str, seed: int, config: dict[str, Any]) -> None:
        """List the run ``name`` of this sweep (kept rows come first, new ones after)."""
        row = self.rows.setdefault(name, {"run": name})
        row.update(seed=seed, error="")
        self.configs[name] = config
        self._by_config.setdefault(_config_key(config), name)

    def keep_others(self, names: Sequence[str]) -> None:
        """Mark the listed runs not in ``names`` (this sweep's) as ``kept`` and refresh their
        summaries from their folders."""
        ours = set(names)
        for name, row in self.rows.items():
            if name in ours or row.get("status") in (MISSING, PENDING):
                continue
            folder = self.out / name
            row.update(status=KEPT, finished=_finished(folder), **folder_summary(folder))

    def resolve(self, grid_keys: Sequence[str]) -> None:
        """Fix the parameter columns (``index_columns``): every grid key of the sweeps into the
        study, then the other config keys with two values or more among the runs that have
        them; and fill each run's resolved values."""
        from wirelessfl.results.groups import IGNORED_KEYS, flat_config, lookup

        keys = list(dict.fromkeys([*self.keys, *grid_keys]))  # never drop a listed column
        known = [c for c in self.configs.values() if c is not None]
        flats = [flat_config(c) for c in known]
        every = sorted({k for f in flats for k in f})
        ignored = tuple(f"{k}." for k in IGNORED_KEYS)
        for key in every:
            if key in keys or key in IGNORED_KEYS or key.startswith(ignored):
                continue
            if any(key.startswith(f"{k}.") for k in keys):
                continue
            values = {json.dumps(f[key], default=str) for f in flats if key in f}
            if len(values) > 1:  # a key only some runs have (one algorithm's table) is no column
                keys.append(key)
        self.keys = keys
        for name, row in self.rows.items():
            config = self.configs.get(name)
            if config is None:
                continue
            for key in keys:
                row[key] = _param_text(lookup(config, key))

    def update(self, name: str, **values: Any) -> None:
        """Set columns of the run ``name``'s row (written on the next ``write``)."""
        self.rows[name].update(values)

    def write(self) -> None:
        """Rewrite ``index.csv`` atomically."""
        import pandas as pd

        from wirelessfl.results.store import atomic_write_text

        table = pd.DataFrame(list(self.rows.values()), columns=index_columns(self.keys))
        atomic_write_text(self.path, table.to_csv(index=False))


def place_run(index: StudyIndex, point: SweepPoint, config: dict[str, Any], sets: dict[str, Any]):
    """The folder name of a sweep's run and its state (``run_state``).

    A listed run with the same resolved config is reused; otherwise the first name that
    :meth:`StudyIndex.takes` it of: the grid name (``run_name``), the name with the ``--set``
    keys too, then that name with a short hash of the resolved config.
    """
    reused = index.match(config)
    if reused is not None:
        return reused, run_state(index.out / reused)
    named = run_name({**sets, **point.params}, point.seed)
    digest = hashlib.sha1(_config_key(config).encode()).hexdigest()[:8]
    for name in dict.fromkeys([point.name, named, f"{named[:140]}~{digest}"]):
        if index.takes(name, config):
            return name, run_state(index.out / name)
    raise UserError(f"sweep: no free run folder for {point.name} in {index.out}")
