"""User plug-ins: modules or ``.py`` files imported before a scenario is validated.

A plug-in registers algorithms, controllers, channel models, sparsifiers, data sets, models, ...
(``REGISTRY.register(name, obj)``, CONTRIBUTING.md) when it is imported. It is named by
``--plugin`` on the command line or in a scenario's top-level ``plugins`` list:

- a name ending in ``.py`` or holding a ``/`` is a file, relative to the scenario file's folder
  (the ``plugins`` key) or to the current folder (``--plugin``) and kept as its absolute path;
  its folder is appended to ``sys.path`` (after every other entry, so it shadows nothing), so it
  can import modules beside it;
- anything else is a dotted module name, imported from ``sys.path`` and the current folder.

A run's ``config.yaml`` lists its plug-ins resolved so (absolute paths, module names): ``run
--resume``, a sweep's worker processes and anything else reading the run folder import them
again. A plug-in is imported once per process; one that cannot be imported is a ``UserError``
of one line naming where it was given and what went wrong (a plug-in that calls
``sys.exit`` at import too).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import importlib.util
import os
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from wirelessfl.errors import ConfigError, UserError

__all__ = [
    "PLUGINS_KEY",
    "add_plugin_argument",
    "import_plugins",
    "is_plugin_file",
    "listed_plugins",
    "resolve_plugin",
]

#: the scenario's top-level key naming plug-ins
PLUGINS_KEY = "plugins"
#: longest plug-in name or path shown in a message
_SHOW = 160

#: the plug-ins (as resolved) imported in this process
_IMPORTED: set[str] = set()


def _shown(text: str) -> str:
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return text if len(text) <= _SHOW else text[: _SHOW - 3] + "..."


def is_plugin_file(plugin: str) -> bool:
    """Whether ``plugin`` names a file (ends in ``.py`` or holds a path separator)."""
    return plugin.endswith(".py") or "/" in plugin or os.sep in plugin


def resolve_plugin(plugin: str, base_dir: str | Path, where: str) -> str:
    """A file's absolute path (relative to ``base_dir``), or the module name as it is.

    Raises:
        UserError: ``plugin`` is empty, or neither a file nor a dotted module name.
    """
    text = plugin.strip() if isinstance(plugin, str) else plugin
    if not isinstance(text, str) or not text:
        raise UserError(
            f"{where}: expected a module name or a .py file, got {_shown(repr(plugin))}"
        )
    if is_plugin_file(text):
        return os.path.abspath(Path(base_dir) / Path(text).expanduser())
    if not all(part.isidentifier() for part in text.split(".")):
        raise UserError(
            f"{where}: {_shown(repr(text))} is neither a module name (Python names joined by "
            "dots, e.g. my_plugins.greedy) nor a .py file"
        )
    return text


def listed_plugins(data: Mapping[str, Any], base_dir: str | Path, where: str) -> list[str]:
    """The ``plugins`` list of a scenario's raw mapping, each resolved (:func:`resolve_plugin`).

    Args:
        data: the scenario as read from its file, before validation.
        base_dir: the folder relative file names start from (the scenario file's).
        where: the start of messages, e.g. ``"scenario: my.yaml"`` ("": none).

    Raises:
        ConfigError: ``plugins`` is not a list of names.
    """
    value = data.get(PLUGINS_KEY)
    if value is None:
        return []
    key = f"{where}: {PLUGINS_KEY}" if where else PLUGINS_KEY
    if not isinstance(value, list):
        raise ConfigError(
            f"{key}: expected a list of module names or .py files, e.g. [my_plugin.py], "
            f"got {_shown(repr(value))}"
        )
    return [resolve_plugin(item, base_dir, key) for item in value]


def import_plugins(plugins: Sequence[str], where: str) -> None:
    """Import every plug-in (resolved names, :func:`resolve_plugin`) not imported yet.

    Raises:
        UserError: ``WHERE PLUGIN: why`` for a missing module or file, or a plug-in whose import
            raised (its own message).
    """
    for plugin in plugins:
        if plugin in _IMPORTED:
            continue
        problem = _import(plugin)
        if problem is not None:
            raise UserError(f"{where} {_shown(plugin)}: {problem}")


def _import(plugin: str) -> str | None:
    """Import ``plugin``; None, or what went wrong (raised outside this function's ``except``
    blocks, so that the command line does not take the plug-in's error for a missing library).
    """
    try:
        if is_plugin_file(plugin):
            return _import_file(Path(plugin))
        return _import_module(plugin)
    except SystemExit as err:  # sys.exit() at import would end the command with no run
        return (
            f"the plug-in exited at import ({_shown(_exit_text(err))}); a plug-in registers "
            "names and must not exit"
        )
    except Exception as err:  # noqa: BLE001 - a plug-in's own failure, reported in one line
        return _raised(err)


def _exit_text(err: SystemExit) -> str:
    """``SystemExit(0)``, ``SystemExit('why')``, ``SystemExit()``: how the plug-in exited."""
    return f"SystemExit({'' if err.code is None else repr(err.code)})"


def _raised(err: BaseException) -> str:
    message = str(err).strip()
    what = f"{type(err).__name__}: {message}" if message else type(err).__name__
    return f"importing it raised {_shown(what)}"


def _import_module(name: str) -> str | None:
    here = os.getcwd()
    if here not in sys.path and "" not in sys.path:
        sys.path.append(here)
    try:
        importlib.import_module(name)
    except ModuleNotFoundError as err:
        if err.name and (name == err.name or name.startswith(err.name + ".")):
            return (
                f"no module named {err.name!r} (looked on sys.path and in the current folder "
                f"{_shown(here)}; a file is given as a path ending in .py)"
            )
        return _raised(err)
    _IMPORTED.add(name)
    return None


def _module_name(path: Path) -> str:
    """A module name of its own for the file at ``path``, the same in every process."""
    stem = re.sub(r"\W", "_", path.stem)
    digest = hashlib.sha1(str(path).encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"wirelessfl_plugin_{stem}_{digest}"


def _import_file(path: Path) -> str | None:
    if not path.is_file():
        return "no such file" if not path.exists() else "not a file (give a .py file)"
    name = _module_name(path)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        return "cannot be imported as Python source (give a .py file)"
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    folder = str(path.parent)
    if folder not in sys.path:
        sys.path.append(folder)
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    _IMPORTED.add(str(path))
    return None


def add_plugin_argument(parser: argparse.ArgumentParser) -> None:
    """``--plugin MODULE_OR_FILE`` (repeatable), for the commands that read a scenario."""
    parser.add_argument(
        "--plugin",
        action="append",
        metavar="MODULE_OR_FILE",
        dest="plugin",
        help="import a module (dotted name, from the current folder or sys.path) or a .py file "
        "that registers algorithms, controllers, channel models, ... before the scenario is "
        "read; repeat for more; runs record it, so --resume imports it again",
    )
