"""Figures of runs and studies (``figures``) and the ``wirelessfl plot`` command (``command``).

The figure functions are imported on first use, so registering the command does not import
matplotlib or pandas.
"""

from __future__ import annotations

from typing import Any

from wirelessfl.plots.command import add_plot_command

_FIGURES = (
    "PLOTS",
    "RunGroup",
    "accuracy_curve",
    "accuracy_vs_round",
    "accuracy_vs_time",
    "as_runs",
    "bandwidth_shares",
    "config_value",
    "cov_norm",
    "frontier",
    "frontier_table",
    "group_runs",
    "offline_bound",
    "pareto_front",
    "queue_delay",
    "share_table",
    "sparsification",
)

__all__ = ["add_plot_command", *_FIGURES]


def __getattr__(name: str) -> Any:
    if name in _FIGURES:
        from wirelessfl.plots import figures

        return getattr(figures, name)
    raise AttributeError(f"module 'wirelessfl.plots' has no attribute {name!r}")
