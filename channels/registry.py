"""Named plug-ins of one kind: the one registry shape every registry of the project uses.

It lives in ``channels``, the lowest package, so that ``channels`` (fading models), ``optim``
(selection rules) and ``wirelessfl`` (learners, algorithms, controllers, sparsifiers, ...) share
it. A registry maps names to objects (classes or functions). An entry is either the object
itself or a lazy target ``"package.module:attribute"`` imported on first use, so that listing
or validating names never imports heavy modules (torch). Names come from three sources:

- the built-in entries given when the registry is made (one line each);
- :meth:`Registry.register` calls (a decorator, or a plain call, from any code);
- the installed packages' entry points of the registry's group (``[project.entry-points.
  "<group>"]`` in a plug-in's ``pyproject.toml``: ``name = "module:attribute"``), read once,
  on first lookup, without importing them.

Example::

    SPARSIFIERS = Registry("sparsifier", {"topk": "wirelessfl.compress.topk:TopKSparsifier"})

    @SPARSIFIERS.register("my_rule")
    class MyRule(Sparsifier): ...

    SPARSIFIERS.load("my_rule")  # -> MyRule
    "topk" in SPARSIFIERS        # True, without importing wirelessfl.compress.topk
"""

from __future__ import annotations

import functools
import importlib
import inspect
import sys
from collections.abc import Callable, Iterator, Mapping
from importlib import metadata
from typing import Any, Generic, TypeVar

__all__ = ["Registry", "UnknownNameError", "resolve_target"]

T = TypeVar("T")


class UnknownNameError(ValueError):
    """A name that no entry of the registry has; the message lists the accepted names."""


def resolve_target(target: str) -> Any:
    """The object named by ``"package.module:attribute[.attribute...]"``."""
    module_name, _, attribute = target.partition(":")
    if not module_name or not attribute:
        raise ValueError(f"lazy registry target must look like 'module:attribute', got {target!r}")
    obj: Any = importlib.import_module(module_name)
    for part in attribute.split("."):
        obj = getattr(obj, part)
    return obj


@functools.lru_cache(maxsize=4)
def _entry_points(search_path: tuple[str, ...]) -> metadata.EntryPoints:
    """Every installed distribution's entry points, read once per ``sys.path`` (reading them
    parses every distribution's metadata: about 15 ms, which each registry paid before)."""
    return metadata.entry_points()


class Registry(Mapping[str, T], Generic[T]):
    """Name -> plug-in of one ``kind`` (see the module docstring).

    Args:
        kind: what the entries are, for messages (``"sparsifier"``, ``"fading model"``).
        builtins: name -> object or lazy ``"module:attribute"`` target.
        entry_point_group: the entry-point group read for plug-ins from installed packages,
            e.g. ``"wirelessfl.algorithms"``; ``None`` for none.

    A ``Registry`` is a read-only ``Mapping``: ``name in r``, ``list(r)``, ``r[name]`` (the
    loaded object) work as on a dict. Add entries with :meth:`register`.
    """

    def __init__(
        self,
        kind: str,
        builtins: Mapping[str, T | str] | None = None,
        *,
        entry_point_group: str | None = None,
    ) -> None:
        self.kind = kind
        self.entry_point_group = entry_point_group
        self._entries: dict[str, T | str] = dict(builtins or {})
        self._loaded: dict[str, T] = {}
        self._entry_points_read = entry_point_group is None

    # -- adding --------------------------------------------------------------------------
    def register(
        self, name: str, obj: T | str | None = None, *, replace: bool = False
    ) -> T | str | Callable[[T], T]:
        """Add ``obj`` (an object or a lazy ``"module:attribute"``) under ``name``.

        Without ``obj`` it returns a decorator: ``@registry.register("name")``. Registering
        the same object again is allowed; a different object under a taken name raises
        ``ValueError`` unless ``replace=True``.
        """
        if not isinstance(name, str) or not name:
            raise ValueError(f"{self.kind} name must be a non-empty string, got {name!r}")
        if obj is None:

            def decorator(target: T) -> T:
                self.register(name, target, replace=replace)
                return target

            return decorator
        self._read_entry_points()
        current = self._entries.get(name)
        if current is not None and not replace and not self._same(name, current, obj):
            raise ValueError(f"{self.kind} name {name!r} is already registered to {current!r}")
        self._entries[name] = obj
        self._loaded.pop(name, None)
        return obj

    def unregister(self, name: str) -> None:
        """Remove ``name`` (tests and notebooks that register temporary entries)."""
        self._read_entry_points()
        self._entries.pop(name, None)
        self._loaded.pop(name, None)

    def _same(self, name: str, current: T | str, new: T | str) -> bool:
        if current is new or current == new:
            return True
        loaded = self._loaded.get(name, current)
        if isinstance(loaded, str) or isinstance(new, str):
            return False
        ident = [
            (getattr(x, "__module__", None), getattr(x, "__qualname__", None))
            for x in (loaded, new)
        ]
        return ident[0] == ident[1] and ident[0][1] is not None  # the same class, re-imported

    def _read_entry_points(self) -> None:
        if self._entry_points_read:
            return
        self._entry_points_read = True
        for ep in _entry_points(tuple(sys.path)).select(group=self.entry_point_group):
            self._entries.setdefault(ep.name, ep.value)

    # -- looking up ----------------------------------------------------------------------
    def names(self) -> list[str]:
        """Every name, built-ins first, in registration order (nothing is imported)."""
        self._read_entry_points()
        return list(self._entries)

    def accepted(self) -> str:
        """The names as one quoted, comma-separated string (for error messages)."""
        return ", ".join(repr(n) for n in self.names())

    def unknown(self, name: object) -> UnknownNameError:
        """The error for a name that is not registered (one line listing the names)."""
        return UnknownNameError(f"unknown {self.kind} {name!r}; accepted: {self.accepted()}")

    def load(self, name: str) -> T:
        """The object registered as ``name``, importing a lazy target on first use.

        Raises:
            UnknownNameError: ``name`` is not registered (the message lists the names).
        """
        if not isinstance(name, str) or name not in self:
            raise self.unknown(name)
        if name not in self._loaded:
            entry = self._entries[name]
            self._loaded[name] = resolve_target(entry) if isinstance(entry, str) else entry
        return self._loaded[name]

    def build(self, name: str, /, *, supplied: tuple[str, ...] = (), **params: Any) -> Any:
        """``self.load(name)(**params)``, with the keywords checked first (one-line errors).

        ``supplied`` names keywords the caller passes on every model's behalf (the cell's
        ``seed``, ``n_clients``, ...): they are in ``params`` but not listed as the model's own.
        An unknown name, an unknown or missing keyword, or a constructor's ``TypeError`` is a
        ``ValueError`` on one line that lists the accepted keywords.
        """
        target = self.load(name)  # UnknownNameError (a ValueError) lists the names
        try:
            signature = inspect.signature(target)
        except (TypeError, ValueError):  # no signature to check against: let the call decide
            signature = None
        if signature is not None:
            named = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
            own = [
                p
                for p in signature.parameters.values()
                if p.kind in named and p.name not in supplied
            ]
            accepted = ", ".join(repr(p.name) for p in own) or "none"
            takes_any = any(
                p.kind is inspect.Parameter.VAR_KEYWORD for p in signature.parameters.values()
            )
            unknown = [k for k in params if k not in supplied and k not in {p.name for p in own}]
            if unknown and not takes_any:
                raise ValueError(
                    f"unknown parameter {unknown[0]!r} for {self.kind} {name!r}; accepted: "
                    f"{accepted}"
                )
            missing = [p.name for p in own if p.default is p.empty and p.name not in params]
            if missing:
                raise ValueError(
                    f"missing parameter {missing[0]!r} for {self.kind} {name!r}; accepted: "
                    f"{accepted}"
                )
        try:
            return target(**params)
        except TypeError as exc:
            raise ValueError(f"bad parameters for {self.kind} {name!r}: {exc}") from None

    def __contains__(self, name: object) -> bool:
        self._read_entry_points()
        return isinstance(name, str) and name in self._entries

    def __getitem__(self, name: str) -> T:
        try:
            return self.load(name)
        except UnknownNameError as err:
            raise KeyError(str(err)) from None

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, names={self.names()!r})"
