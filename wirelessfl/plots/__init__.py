"""Figures of runs and studies, and the ``wirelessfl plot`` command (``command``).

Each figure function draws a tidy DataFrame built by a ``wirelessfl.results.tables`` function;
it also accepts what that function takes (a run, a run or study folder as str or Path, a study,
or a list of any of these: ``wirelessfl.plots.inputs.tidy``) and builds the table itself;
anything else is a one-line ``TypeError``. Runs whose configs differ only in seed form one
group: curves show the group's mean with its min–max across seeds shaded, and labels name the
keys that differ between groups and apply to them. Legends sit to the right of the data, and
a new figure's title names the study or run it shows (``title=`` replaces it, ``""`` drops it).

Figures are built with ``matplotlib.figure.Figure`` directly (no pyplot state, no display
needed, nothing to close); save one with ``fig.savefig("x.png")``, or show it in a notebook by
leaving it as a cell's value. The figure modules are imported on first use, so registering the
command does not import matplotlib or pandas; ``dir()`` and tab completion list them all.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from wirelessfl.plots.command import add_plot_command

_MODULES = {
    "PLOTS": "kinds",
    "accuracy_vs_energy": "energy",
    "accuracy_vs_round": "accuracy",
    "accuracy_vs_time": "accuracy",
    "bandwidth_shares": "shares",
    "cov_norm": "dynamics",
    "energy_overview": "energy",
    "energy_vs_round": "energy",
    "energy_vs_time": "energy",
    "frontier": "tradeoff",
    "offline_bound": "offline",
    "queue_delay": "dynamics",
    "sparsification": "dynamics",
}

__all__ = ["add_plot_command", *_MODULES]


def __getattr__(name: str) -> Any:
    if name in _MODULES:
        return getattr(import_module(f"wirelessfl.plots.{_MODULES[name]}"), name)
    raise AttributeError(f"module 'wirelessfl.plots' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The public names (figure functions included, though not imported yet) and dunders."""
    return sorted({*__all__, *(name for name in globals() if name.startswith("__"))})
