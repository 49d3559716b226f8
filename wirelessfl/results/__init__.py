"""Results: run folders with tidy per-round tables, study folders, and tables for figures.

- ``columns``: every column of the run tables, documented;
- ``store``: writing and loading run folders (``RunResult``, ``load``);
- ``summary``: a run's summary numbers (the study index, the frontier);
- ``energy``: device energy per round, per device, and against the energy budget;
- ``study``: study folders (``StudyResult``, ``load_study``, the ``index.csv`` format);
- ``runs`` and ``groups``: results as runs, runs grouped by config and labelled;
- ``tables``: the tidy DataFrames the figures of ``wirelessfl.plots`` draw.

Names are imported on first use, so ``wirelessfl.results.summary`` and ``.study`` load without
pandas (the command line stays cheap to start).
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from wirelessfl.results.columns import (
    CLIENT_COLUMNS,
    CPU_CLOCK_COLUMNS,
    DEVICE_COLUMNS,
    EVENT_COLUMNS,
    EVENT_DRIVEN_ROUND_COLUMNS,
    ROUND_COLUMNS,
    UPDATE_COLUMNS,
)

_MODULES = {
    "RunResult": "store",
    "load": "store",
    "SUMMARY_COLUMNS": "summary",
    "final_accuracy": "summary",
    "summarize": "summary",
    "summarize_folder": "summary",
    "summarize_run": "summary",
    "device_energy": "energy",
    "time_to_target": "summary",
    "StudyResult": "study",
    "load_study": "study",
    "Results": "runs",
    "as_runs": "runs",
    "RunGroup": "groups",
    "config_value": "groups",
    "group_runs": "groups",
    "accuracy_curve": "tables",
    "evaluated_rounds": "tables",
    "accuracy_table": "tables",
    "energy_table": "tables",
    "frontier_table": "tables",
    "offline_table": "tables",
    "pareto_front": "tables",
    "rounds_table": "tables",
    "share_table": "tables",
}

__all__ = [
    "CLIENT_COLUMNS",
    "CPU_CLOCK_COLUMNS",
    "DEVICE_COLUMNS",
    "EVENT_COLUMNS",
    "EVENT_DRIVEN_ROUND_COLUMNS",
    "ROUND_COLUMNS",
    "UPDATE_COLUMNS",
    *_MODULES,
]


def __getattr__(name: str) -> Any:
    if name in _MODULES:
        return getattr(import_module(f"wirelessfl.results.{_MODULES[name]}"), name)
    raise AttributeError(f"module 'wirelessfl.results' has no attribute {name!r}")
