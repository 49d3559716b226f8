"""Load a scenario file (YAML or TOML), apply ``--set key=value`` overrides, write it back.

Every mistake in a file or an override is a :class:`~wirelessfl.errors.ConfigError` (or
:class:`~wirelessfl.errors.UserError`) with one line naming the file or ``--set`` key: files
that are not UTF-8 text, larger than :data:`MAX_FILE_BYTES`, empty, not valid YAML/TOML,
with duplicate keys, recursive or exploding aliases or nesting deeper than
:data:`~wirelessfl.config.yaml_limits.MAX_DEPTH` (see :mod:`wirelessfl.config.yaml_limits`).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from wirelessfl.config.scenario import Scenario
from wirelessfl.config.schema import build, to_dict
from wirelessfl.config.shipped import SCENARIO_DIR, shipped_names
from wirelessfl.config.yaml_limits import MAX_DEPTH, load_yaml, one_line, show_key
from wirelessfl.errors import ConfigError, UserError
from wirelessfl.plugins import PLUGINS_KEY, import_plugins, listed_plugins, resolve_plugin

DEFAULT_SCENARIO = "default"
#: Largest scenario file read (the shipped ones are ~2 KB; parsing 1 MiB takes about a second).
MAX_FILE_BYTES = 1 << 20

# one part of a --set key: a name (letters, digits, _ and -), as scenario keys and options are,
# optionally followed by list indices: groups[0], grid[1][2]
_KEY_PART = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_\-]*(\[[0-9]+\])*\Z")
_INDEX = re.compile(r"\[([0-9]+)\]")


def _show_path(path: str | Path) -> str:
    return one_line(str(path), 160)


def resolve_scenario_path(name_or_path: str | Path | None) -> Path:
    """A path, or a shipped scenario's name (``paper`` → ``SCENARIO_DIR/paper.yaml``)."""
    if name_or_path is None:
        name_or_path = DEFAULT_SCENARIO
    path = Path(name_or_path)
    if _exists(path, "file"):
        return path
    for candidate in (SCENARIO_DIR / f"{name_or_path}.yaml", SCENARIO_DIR / f"{name_or_path}.toml"):
        if _exists(candidate, "file"):
            return candidate
    if _exists(path, "dir"):
        raise UserError(
            f"scenario: {_show_path(path)} is a directory; give a scenario file (.yaml or .toml) "
            "or a shipped scenario's name"
        )
    if _exists(path, "any"):
        raise UserError(
            f"scenario: {_show_path(path)} is not a regular file; give a scenario file "
            "(.yaml or .toml) or a shipped scenario's name"
        )
    top = [name for name in shipped_names() if "/" not in name]
    raise UserError(
        f"scenario: no file {one_line(repr(str(name_or_path)), 160)} and no shipped scenario of "
        f"that name (shipped: {', '.join(top) or 'none'}, ...; wirelessfl scenarios lists all)"
    )


def _exists(path: Path, kind: str) -> bool:
    """``is_file``/``is_dir``/``exists`` that say False for names the OS cannot even look up."""
    try:
        if kind == "file":
            return path.is_file()
        if kind == "dir":
            return path.is_dir()
        return path.exists()
    except (OSError, ValueError):  # a name too long, an embedded NUL byte
        return False


def _read_text(path: Path) -> str:
    where = f"scenario: {_show_path(path)}"
    try:
        with path.open("rb") as f:
            raw = f.read(MAX_FILE_BYTES + 1)
    except IsADirectoryError:
        raise UserError(f"{where} is a directory; give a scenario file (.yaml or .toml)") from None
    except OSError as err:
        reason = err.strerror or type(err).__name__
        raise UserError(f"{where} cannot be read: {one_line(reason)}") from None
    if len(raw) > MAX_FILE_BYTES:
        raise ConfigError(
            f"{where} is larger than {MAX_FILE_BYTES // 1024} KiB (the limit on a scenario file); "
            "is it the right file?"
        )
    try:
        return raw.decode("utf-8-sig")  # a UTF-8 byte-order mark is dropped
    except UnicodeDecodeError as err:
        raise ConfigError(
            f"{where} is not a text file (UTF-8): byte 0x{raw[err.start]:02x} at offset "
            f"{err.start} cannot be decoded; a scenario is a YAML or TOML text file"
        ) from None


def _toml_has_content(text: str) -> bool:
    """Whether TOML ``text`` holds anything but blank lines and comments."""
    return any(line.strip() and not line.strip().startswith("#") for line in text.splitlines())


def read_mapping(path: Path) -> dict[str, Any]:
    """Parse a YAML or TOML file into a dict (safe loaders only, with limits)."""
    text = _read_text(path)
    where = f"scenario: {_show_path(path)}"
    toml = path.suffix.lower() == ".toml"
    if toml:
        data = _load_toml(text, where)
        found = _toml_has_content(text)
    else:
        found, data = load_yaml(text, where)
    if not found or data is None:  # no document, or one holding nothing (``---``, ``null``)
        hint = (
            "write {} in it to run with every default"
            if not toml
            else 'set at least one key (e.g. name = "..."), or use a YAML file holding {} to '
            "run with every default"
        )
        raise ConfigError(f"{where} is empty (it holds no settings); {hint}")
    if not isinstance(data, dict):
        raise ConfigError(
            f"{where} must hold a table of settings (key: value lines) at the top level, "
            f"got {_kind_of(data)}"
        )
    return data


def _kind_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, list):
        return "a list"
    return f"{type(value).__name__} {one_line(repr(value), 60)}"


def _load_toml(text: str, where: str) -> dict[str, Any]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"{where}: not valid TOML: {one_line(str(err))}") from None
    except RecursionError:
        raise ConfigError(
            f"{where}: nested deeper than {MAX_DEPTH} levels (limit {MAX_DEPTH})"
        ) from None
    _check_depth(data, where)
    return data


def _check_depth(data: Any, where: str) -> None:
    """Refuse nesting deeper than MAX_DEPTH (iteratively: no recursion limit to hit)."""
    stack = [(data, 1)]
    while stack:
        value, level = stack.pop()
        if level > MAX_DEPTH:
            raise ConfigError(f"{where}: nested deeper than {MAX_DEPTH} levels (limit {MAX_DEPTH})")
        if isinstance(value, dict):
            stack.extend((v, level + 1) for v in value.values())
        elif isinstance(value, list | tuple):
            stack.extend((v, level + 1) for v in value)


def _split_override(item: Any, option: str = "--set") -> tuple[str, list[str], str]:
    """``"a.b=1"`` → ("a.b", ["a", "b"], "1"), refusing malformed keys with one line naming
    ``option`` (``--set``, ``--grid``)."""
    if not isinstance(item, str):
        raise ConfigError(f"{option}: expected a KEY=VALUE string, got {one_line(repr(item), 60)}")
    if "=" not in item:
        raise ConfigError(
            f"{option}: expected KEY=VALUE (e.g. rounds=50 or controller.V=1e-3), "
            f"got {one_line(repr(item), 80)}"
        )
    key, raw = item.split("=", 1)
    key = key.strip()
    shown = one_line(key, 80)
    if not key:
        raise ConfigError(
            f"{option} {one_line(repr(item), 80)}: the key before '=' is empty; write KEY=VALUE, "
            "e.g. rounds=50"
        )
    parts = key.split(".")
    if any(not p for p in parts):
        raise ConfigError(
            f"{option} {shown}: empty name between dots; write names separated by single dots, "
            "e.g. controller.V=1e-3"
        )
    for part in parts:
        if not _KEY_PART.match(part):
            raise ConfigError(
                f"{option} {shown}: {one_line(repr(part), 60)} is not a key name; names are "
                "letters, digits, _ and - separated by dots, a list item as name[index] (see "
                "wirelessfl scenario-keys)"
            )
    return key, parts, raw


def _steps(parts: list[str]) -> list[str | int]:
    """``["strategy", "groups[0]", "rank"]`` -> ``["strategy", "groups", 0, "rank"]``."""
    steps: list[str | int] = []
    for part in parts:
        name = part.split("[", 1)[0]
        steps.append(name)
        steps.extend(int(i) for i in _INDEX.findall(part))
    return steps


def _path_text(steps: list[str | int]) -> str:
    """``strategy.groups[0]`` from its steps."""
    text = ""
    for step in steps:
        text += f"[{step}]" if isinstance(step, int) else (f".{step}" if text else step)
    return text


def apply_overrides(
    data: dict[str, Any], overrides: Sequence[str] | None, option: str = "--set"
) -> dict[str, Any]:
    """Apply ``key.sub=value`` strings; values are parsed as YAML (``1e6``, ``true``, ``[1, 2]``).

    A key names a path of tables and list items (``strategy.groups[0].rank``); a missing table
    is created, a list item must exist. Raises ConfigError naming ``--set KEY`` for a malformed
    key, a value that is not valid YAML, a path through a value that is not a table (or not a
    list, before an index), or an index past the end of its list (``option``: the option the
    items came from, ``--set`` or ``--grid``).
    """
    if isinstance(overrides, str):
        overrides = [overrides]
    for item in overrides or []:
        key, parts, raw = _split_override(item, option)
        where = f"{option} {one_line(key, 80)}"
        value = parse_value(raw, where, key)
        steps = _steps(parts)
        node: Any = data
        for depth, step in enumerate(steps[:-1]):
            here = _path_text(steps[: depth + 1])
            child = _child(node, step, steps[depth + 1], where, here)
            node = child
        last = steps[-1]
        if isinstance(last, int):
            _check_item(node, last, where, _path_text(steps[:-1]))
        node[last] = value
    return data


def _child(node: Any, step: str | int, following: str | int, where: str, here: str) -> Any:
    """The table or list at ``step`` of ``node`` (a missing table is created)."""
    if isinstance(step, int):
        _check_item(node, step, where, here.rsplit("[", 1)[0])
        child = node[step]
    else:
        child = node.setdefault(step, {}) if isinstance(following, str) else node.get(step)
    if isinstance(following, int):
        if not isinstance(child, list):
            raise ConfigError(
                f"{where}: {here} is not a list (it holds {one_line(repr(child), 60)}), so it "
                f"has no item [{following}]"
            )
        return child
    if not isinstance(child, dict):
        raise ConfigError(
            f"{where}: {here} is not a table (it holds {one_line(repr(child), 60)}), so it "
            f"has no key {show_key(following)}"
        )
    return child


def _check_item(node: Any, index: int, where: str, here: str) -> None:
    """One line unless ``node`` is a list with an item ``index``."""
    if not isinstance(node, list):
        raise ConfigError(f"{where}: {here} is not a list, so it has no item [{index}]")
    if index >= len(node):
        raise ConfigError(
            f"{where}: {here} has {len(node)} item(s), so there is no item [{index}] (items "
            "count from 0; --set changes items, it does not add them)"
        )


def parse_value(raw: str, where: str, key: str = "") -> Any:
    """A ``--set`` value: YAML (with the limits of :func:`load_yaml`), numeric strings as
    numbers; ``""`` when there is nothing after ``=``. Errors start with ``where`` (e.g.
    ``"--grid controller.V"``) and name keys inside the value under ``key``."""
    if not raw.strip():
        return ""
    found, value = load_yaml(raw, where, root_path=key)
    return _numbers_in(value, where) if found else ""


def _number_or_value(value: Any) -> Any:
    # YAML 1.1 reads "1e6" as a string; accept it as a number like a user would expect.
    if isinstance(value, str):
        try:
            return float(value) if any(c in value for c in ".eE") else int(value)
        except ValueError:
            return value
    return value


def load_scenario(
    name_or_path: str | Path | None = None,
    overrides: list[str] | None = None,
    plugins: Sequence[str] = (),
    grid: Sequence[str] = (),
) -> Scenario:
    """Read, override and validate a scenario; raises ConfigError with one clear line.

    ``grid`` holds a sweep's grid values as ``KEY=VALUE`` items, applied after ``overrides``;
    their errors name ``--grid``. The plug-ins of its ``plugins`` key (files relative to its
    folder) and of the ``plugins`` argument (``--plugin``: files relative to the current
    folder) are imported first, so that the names they register validate; the scenario lists
    them all, resolved (:mod:`wirelessfl.plugins`).
    """
    path = resolve_scenario_path(name_or_path)
    where = f"scenario: {_show_path(path)}"
    data = _numbers_in(read_mapping(path), where)
    return _build_with_plugins(data, path.parent, where, plugins, overrides, grid)


def scenario_from_dict(
    data: dict[str, Any], overrides: list[str] | None = None, plugins: Sequence[str] = ()
) -> Scenario:
    """Validate a scenario given as a plain dict (library use, tests, notebooks); plug-in files
    in its ``plugins`` and in ``plugins`` are relative to the current folder."""
    if not isinstance(data, dict):
        raise ConfigError(f"scenario: expected a table (dict) of settings, got {_kind_of(data)}")
    data = _numbers_in(dict(data), "scenario")
    return _build_with_plugins(data, Path.cwd(), "scenario", plugins, overrides)


def with_plugins(
    data: dict[str, Any], base_dir: Path, where: str, plugins: Sequence[str] = ()
) -> dict[str, Any]:
    """Import the plug-ins of a scenario's raw mapping and of ``plugins`` (files relative to
    ``base_dir`` and the current folder), and list them all, resolved, as its ``plugins``.

    The pre-pass before validation: the names the plug-ins register are then known to the
    schema. Raises ``UserError`` naming ``WHERE: plugins`` (``where`` "": ``plugins``) or
    ``--plugin``.
    """
    listed = listed_plugins(data, base_dir, where)
    import_plugins(listed, f"{where}: {PLUGINS_KEY}:" if where else f"{PLUGINS_KEY}:")
    extra = [resolve_plugin(p, Path.cwd(), "--plugin") for p in plugins]
    import_plugins(extra, "--plugin")
    merged = list(dict.fromkeys([*listed, *extra]))
    if merged:
        data[PLUGINS_KEY] = merged
    return data


def _build_with_plugins(
    data: dict[str, Any],
    base_dir: Path,
    where: str,
    plugins: Sequence[str],
    overrides: list[str] | None,
    grid: Sequence[str] = (),
) -> Scenario:
    data = with_plugins(data, base_dir, where, plugins)
    imported = list(data.get(PLUGINS_KEY) or [])
    for option, items in (("--set", overrides), ("--grid", grid)):
        data = apply_overrides(data, items, option)
        if (data.get(PLUGINS_KEY) or []) != imported:
            raise ConfigError(
                f"{option} {PLUGINS_KEY}: plug-ins are imported before --set and --grid apply; "
                f"give them with --plugin MODULE_OR_FILE (added to the scenario's {PLUGINS_KEY})"
            )
    return build(Scenario, data)


def _numbers_in(data: Any, where: str) -> Any:
    """Numeric strings (``"1e6"``) as numbers, everywhere in ``data``; refuses nesting (or a
    structure containing itself) deeper than MAX_DEPTH."""

    def walk(value: Any, level: int) -> Any:
        if level > MAX_DEPTH:
            raise ConfigError(
                f"{where}: nested deeper than {MAX_DEPTH} levels, or a table or list that contains "
                f"itself (limit {MAX_DEPTH})"
            )
        if isinstance(value, dict):
            return {k: walk(v, level + 1) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v, level + 1) for v in value]
        return _number_or_value(value) if isinstance(value, str) else value

    return walk(data, 1)


def scenario_yaml(scenario: Scenario) -> str:
    """The fully resolved scenario (every key, defaults included) as YAML text (emitted by
    libyaml when PyYAML has it: the same text as ``yaml.safe_dump``, several times faster)."""
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    return yaml.dump(to_dict(scenario), Dumper=dumper, sort_keys=False)


def dump_scenario(scenario: Scenario, path: Path) -> None:
    """Write :func:`scenario_yaml` to ``path`` (a run writes its ``config.yaml`` atomically)."""
    path.write_text(scenario_yaml(scenario))
