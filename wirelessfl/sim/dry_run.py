"""``wirelessfl run --dry-run``: the resolved scenario and the offline stage's choice.

The learner is built (a training scenario loads its model) and the controller plans, as when
a run starts, but no round is simulated and nothing is written.
"""

from __future__ import annotations

import math
from typing import Any

from wirelessfl.config.loader import scenario_yaml
from wirelessfl.config.scenario import Scenario
from wirelessfl.learners import make_learner
from wirelessfl.sim.simulator import Simulator


def _show(value: Any) -> str:
    if isinstance(value, float):
        return "nan" if math.isnan(value) else f"{value:.4g}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_show(v) for v in value) + "]"
    return str(value)


def offline_choice(scenario: Scenario) -> dict[str, Any]:
    """The controller's offline plan (its ``meta.json`` summary: rank, TSFA's curve, ...; a
    network of cells: its first cell's, every cell's controller plans the same offline stage
    on all clients' mean SNR)."""
    if scenario.cells.enabled:
        from wirelessfl.sim.network import NetworkSimulator

        return NetworkSimulator(scenario).controller.summary()
    return Simulator(scenario, make_learner(scenario)).controller.summary()


def dry_run_text(scenario: Scenario) -> str:
    """The resolved scenario as YAML, then the offline choice as comments (so the text is
    itself a scenario file that runs)."""
    choice = offline_choice(scenario)
    lines = [
        "# resolved scenario (every key; save it and run it as a scenario file)",
        scenario_yaml(scenario).rstrip("\n"),
        f"# offline stage (controller {scenario.controller.name}); nothing was run:",
        *(f"#   {key}: {_show(value)}" for key, value in choice.items()),
    ]
    return "\n".join(lines)
