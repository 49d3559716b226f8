"""``'module:attribute'`` settings (``learner.client_fn``, ``learner.initial_parameters``): the
object they name, with one-line errors naming the setting."""

from __future__ import annotations

import importlib
from typing import Any

from wirelessfl.errors import ConfigError

__all__ = ["import_target"]


def import_target(target: str, key: str, *, accepted: str = "'module:attribute'") -> Any:
    """The object ``target`` (``"module:attribute"``, the attribute possibly dotted) names.

    Raises:
        ConfigError: one line naming ``key``: a malformed target (``accepted`` says what is
            accepted), a module that cannot be imported, or a missing attribute.
    """
    module_name, _, attribute = target.partition(":")
    if not module_name or not attribute:
        raise ConfigError(f"{key}: expected {accepted}, got {target!r}")
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as err:
        problem = str(err)  # raised below, outside the handler: the command line must not
        # read this error as a missing library (it walks the errors it was raised while handling)
    else:
        problem = None
    if problem is not None:
        raise ConfigError(f"{key}: cannot import module {module_name!r} ({problem})")
    for part in attribute.split("."):
        if not hasattr(obj, part):
            raise ConfigError(f"{key}: {target!r} does not exist (no attribute {part!r})")
        obj = getattr(obj, part)
    return obj
