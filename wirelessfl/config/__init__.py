"""Scenario schema, loading and validation."""

from wirelessfl.config.loader import (
    dump_scenario,
    load_scenario,
    resolve_scenario_path,
    scenario_from_dict,
)
from wirelessfl.config.scenario import Scenario

__all__ = [
    "Scenario",
    "dump_scenario",
    "load_scenario",
    "resolve_scenario_path",
    "scenario_from_dict",
]
