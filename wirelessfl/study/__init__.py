"""Studies: parameter sweeps into study folders (``sweep``) and their summary numbers."""

from __future__ import annotations

from typing import Any

from wirelessfl.study.summary import SUMMARY_COLUMNS, final_accuracy, summarize
from wirelessfl.study.sweep import (
    StudyResult,
    add_sweep_command,
    load_study,
    parse_grid,
    run_name,
    run_sweep,
)

__all__ = [
    "SUMMARY_COLUMNS",
    "StudyResult",
    "add_study_commands",
    "add_sweep_command",
    "final_accuracy",
    "load_study",
    "parse_grid",
    "run_name",
    "run_sweep",
    "summarize",
]


def add_study_commands(subparsers: Any) -> None:
    """Register ``wirelessfl sweep`` and ``wirelessfl plot`` (cheap: no pandas/matplotlib)."""
    from wirelessfl.plots import add_plot_command
    from wirelessfl.study.reproduce import add_reproduce_command

    add_sweep_command(subparsers)
    add_plot_command(subparsers)
    add_reproduce_command(subparsers)
