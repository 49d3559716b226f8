"""The Flower App's run config (``[tool.flwr.app.config]``, ``flwr run --run-config``) read
into what :func:`~wirelessfl.bridges.flower_serverapp.run_on_grid` needs.

Keys (:data:`RUN_CONFIG_KEYS`), all required, none other accepted:

- ``scenario``: a shipped scenario's name (``paper``, ``floral/synthetic_linear``) or the
  absolute path of a scenario file (``~`` expanded);
- ``set``: scenario overrides, ``KEY=VALUE`` items separated by spaces as a shell splits them
  (``"rounds=5 controller.V=1e-3 name='my run'"``), each as ``wirelessfl run --set``; ``""``
  for none;
- ``out-dir``: the absolute path of the results folder, new or empty (``~`` expanded);
- ``timeout-s``: the longest wait [s] for the nodes to connect and for a round's replies.

Paths must be absolute because the ServerApp runs in a process that Flower's SuperLink starts,
in the SuperLink's folder, not in the folder ``flwr run`` was typed in.
"""

from __future__ import annotations

import math
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wirelessfl.config import load_scenario
from wirelessfl.config.shipped import SCENARIO_DIR, SUFFIXES
from wirelessfl.config.yaml_limits import one_line
from wirelessfl.errors import ConfigError

if TYPE_CHECKING:
    from collections.abc import Mapping

    from wirelessfl.config.scenario import Scenario

__all__ = ["RUN_CONFIG_KEYS", "AppSettings", "app_settings"]

#: The run-config keys and the type each value must have.
RUN_CONFIG_KEYS: dict[str, type | tuple[type, ...]] = {
    "scenario": str,
    "set": str,
    "out-dir": str,
    "timeout-s": (int, float),
}


@dataclass(frozen=True)
class AppSettings:
    """A run of the Flower App: its validated scenario, results folder and timeout [s]."""

    scenario: Scenario
    out_dir: Path
    timeout_s: float


def app_settings(run_config: Mapping[str, Any]) -> AppSettings:
    """Validate ``run_config`` (Flower's ``context.run_config``) and load its scenario.

    Raises ConfigError/UserError in one line naming the run-config key (or the scenario key).
    """
    _check_keys(run_config)
    overrides = _overrides(run_config["set"])
    scenario = load_scenario(_scenario_source(run_config["scenario"]), overrides)
    return AppSettings(
        scenario=scenario,
        out_dir=_absolute(run_config["out-dir"], "out-dir", "the results folder"),
        timeout_s=_timeout_s(run_config["timeout-s"]),
    )


def _check_keys(run_config: Mapping[str, Any]) -> None:
    accepted = ", ".join(RUN_CONFIG_KEYS)
    unknown = sorted(set(run_config) - set(RUN_CONFIG_KEYS))
    if unknown:
        raise ConfigError(
            f"run config: unknown key {one_line(repr(unknown[0]), 60)} (the app's "
            f"[tool.flwr.app.config] takes {accepted})"
        )
    for key, kind in RUN_CONFIG_KEYS.items():
        if key not in run_config:
            raise ConfigError(
                f"run config: no key {key!r}; the app's [tool.flwr.app.config] needs {accepted}"
            )
        value = run_config[key]
        if isinstance(value, bool) or not isinstance(value, kind):
            wanted = "a number" if kind == (int, float) else "a string"
            raise ConfigError(
                f"run config {key}: expected {wanted}, got {one_line(repr(value), 60)}"
            )


def _overrides(text: str) -> list[str]:
    """``set``'s ``KEY=VALUE`` items, split as a shell splits them."""
    try:
        return shlex.split(text)
    except ValueError as err:  # an unclosed quote
        raise ConfigError(
            f"run config set: {err} in {one_line(repr(text), 80)}; write KEY=VALUE items "
            "separated by spaces, quoting a value that holds spaces"
        ) from None


def _scenario_source(value: str) -> str:
    """An absolute scenario path (``~`` expanded), or a shipped scenario's name."""
    path = Path(value).expanduser()
    if path.is_absolute():
        return str(path)
    if any((SCENARIO_DIR / f"{value}{suffix}").is_file() for suffix in SUFFIXES):
        return value
    raise ConfigError(
        f"run config scenario: {one_line(repr(value), 80)} is neither a shipped scenario's name "
        "(wirelessfl scenarios lists them) nor an absolute path; a relative path would be read "
        "in the SuperLink's folder"
    )


def _absolute(value: str, key: str, what: str) -> Path:
    path = Path(value).expanduser()
    if not value or not path.is_absolute():
        raise ConfigError(
            f"run config {key}: {what} must be an absolute path, got {one_line(repr(value), 80)} "
            "(the ServerApp runs in the SuperLink's folder)"
        )
    return path


def _timeout_s(value: float) -> float:
    if not math.isfinite(value) or value <= 0:
        raise ConfigError(f"run config timeout-s: expected a number of seconds > 0, got {value}")
    return float(value)
