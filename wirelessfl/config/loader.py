"""Load a scenario file (YAML or TOML), apply ``--set key=value`` overrides, write it back."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import yaml

from wirelessfl.config.scenario import Scenario
from wirelessfl.config.schema import build, to_dict
from wirelessfl.errors import ConfigError, UserError

SCENARIO_DIR = Path(__file__).resolve().parents[2] / "scenarios"
DEFAULT_SCENARIO = "default"


def resolve_scenario_path(name_or_path: str | Path | None) -> Path:
    """A path, or a shipped scenario's name (``paper`` → ``scenarios/paper.yaml``)."""
    if name_or_path is None:
        name_or_path = DEFAULT_SCENARIO
    path = Path(name_or_path)
    if path.is_file():
        return path
    for candidate in (SCENARIO_DIR / f"{name_or_path}.yaml", SCENARIO_DIR / f"{name_or_path}.toml"):
        if candidate.is_file():
            return candidate
    shipped = sorted(p.stem for p in SCENARIO_DIR.glob("*.yaml")) if SCENARIO_DIR.is_dir() else []
    raise UserError(
        f"scenario: no file {str(name_or_path)!r} and no shipped scenario of that name "
        f"(shipped: {', '.join(shipped) or 'none'})"
    )


def read_mapping(path: Path) -> dict[str, Any]:
    """Parse a YAML or TOML file into a dict (safe loaders only)."""
    text = path.read_text()
    try:
        data = tomllib.loads(text) if path.suffix == ".toml" else yaml.safe_load(text)
    except (yaml.YAMLError, tomllib.TOMLDecodeError) as err:
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise ConfigError(f"scenario: {path} is not valid {path.suffix[1:]}: {first}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"scenario: {path} must hold a table of settings at the top level")
    return data


def apply_overrides(data: dict[str, Any], overrides: list[str] | None) -> dict[str, Any]:
    """Apply ``key.sub=value`` strings; values are parsed as YAML scalars (``1e6``, ``true``)."""
    for item in overrides or []:
        if "=" not in item:
            raise ConfigError(f"--set: expected key=value, got {item!r}")
        key, raw = item.split("=", 1)
        key = key.strip()
        value = yaml.safe_load(raw) if raw.strip() else ""
        node = data
        parts = key.split(".")
        for part in parts[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise ConfigError(f"--set {key}: {part} is not a table")
            node = child
        node[parts[-1]] = _number_or_value(value)
    return data


def _number_or_value(value: Any) -> Any:
    # YAML 1.1 reads "1e6" as a string; accept it as a number like a user would expect.
    if isinstance(value, str):
        try:
            return float(value) if any(c in value for c in ".eE") else int(value)
        except ValueError:
            return value
    return value


def load_scenario(
    name_or_path: str | Path | None = None, overrides: list[str] | None = None
) -> Scenario:
    """Read, override and validate a scenario; raises ConfigError with one clear line."""
    path = resolve_scenario_path(name_or_path)
    data = apply_overrides(_numbers_in(read_mapping(path)), overrides)
    return build(Scenario, data)


def scenario_from_dict(data: dict[str, Any], overrides: list[str] | None = None) -> Scenario:
    """Validate a scenario given as a plain dict (library use, tests, notebooks)."""
    return build(Scenario, apply_overrides(_numbers_in(dict(data)), overrides))


def _numbers_in(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: _numbers_in(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_numbers_in(v) for v in data]
    return _number_or_value(data) if isinstance(data, str) else data


def dump_scenario(scenario: Scenario, path: Path) -> None:
    """Write the fully resolved scenario (every key, defaults included)."""
    path.write_text(yaml.safe_dump(to_dict(scenario), sort_keys=False))
