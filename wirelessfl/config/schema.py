"""Typed, validated dataclass configs: one error line naming the dotted key and the accepted range.

A config section is a dataclass whose fields carry constraints in their metadata, built with
:func:`option`. :func:`build` turns a plain dict (from YAML/TOML) into the dataclass, rejecting
unknown keys, wrong types and out-of-range values with a :class:`~wirelessfl.errors.ConfigError`.
A dataclass may list keys it no longer has in ``MOVED_KEYS`` (a class attribute, key -> one
line saying where the setting went): such a key is refused with that line.

``choices`` may be a fixed tuple or a :class:`channels.registry.Registry`: the accepted names
are then read from the registry when a scenario is validated, so a plug-in registered by user
code is accepted like a built-in one. ``prefixes`` accepts names such as ``hub:<path>`` too.
A field made with :func:`settings_option` is a *settings section*: its dataclass is the
``Settings`` of the plug-in named by another field (``strategy`` holds the settings of the
algorithm named by ``algorithm.name``). A settings section holds the settings of several
plug-ins, one table per plug-in name (``strategy.fslora.ratio_choices``), so that one file can
switch plug-in; keys directly under it (``strategy.zeta``) are the running plug-in's and apply
over its table. Every table is validated by its own plug-in's ``Settings``; the running
plug-in's settings become the field, the others a hidden companion field (see
:func:`settings_option`), and :func:`to_dict` writes them all back as tables.

A field made with :func:`chosen_section` is a section whose dataclass its own name key chooses
(``controller.name``): the ``Settings`` of the plug-in it names, a subclass of the section's
base. Its keys stay flat (``controller.V``); a key of another registered plug-in's ``Settings``
is accepted (a file can switch plug-in, a sweep can run several), validated by that plug-in's
field, kept in the base's hidden ``others`` field, written back, and applies to nothing.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Callable, Collection, Mapping, Sequence
from functools import cache
from typing import Any, TypeVar

from wirelessfl.errors import ConfigError

T = TypeVar("T")

#: Integers are kept to 64 bits (what numpy, the results tables and torch seeds hold); keys
#: with a real cost have tighter limits of their own (see ``wirelessfl.config.scenario``).
INT_LIMIT = 2**63


def show(value: Any, limit: int = 60) -> str:
    """``repr(value)`` on one line, shortened to about ``limit`` characters (for messages)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        try:
            return f"{float(value):.4g}"  # 1e+30, not 31 digits
        except OverflowError:
            digits = int(value.bit_length() * 0.30103) + 1
            return f"{'-' if value < 0 else ''}an integer of about {digits} digits"
    if isinstance(value, str | bytes | list | tuple | dict | set) and len(value) > 4 * limit:
        value = value[: 4 * limit] if not isinstance(value, dict | set) else value
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - a message must not fail
        text = f"<{type(value).__name__}>"
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def key_text(key: Any) -> str:
    """A mapping key as written in a dotted path (repr unless it is a plain printable name)."""
    if isinstance(key, str) and key and key.isprintable() and " " not in key and len(key) <= 80:
        return key
    return show(key, 80)


def option(
    default: Any = dataclasses.MISSING,
    *,
    ge: float | None = None,
    gt: float | None = None,
    le: float | None = None,
    lt: float | None = None,
    choices: Collection[Any] | None = None,
    prefixes: Sequence[str] = (),
    doc: str = "",
    default_factory: Any = dataclasses.MISSING,
    applies: Callable[[Mapping[str, Any]], bool] | None = None,
    check: Callable[[Any, str], None] | None = None,
) -> Any:
    """A dataclass field with validation metadata (bounds, allowed values, one-line doc).

    ``choices`` is a tuple or a registry (read at validation time); ``prefixes`` are accepted
    prefixes besides (``"hub:"``: any ``hub:<name-or-path>``). ``applies(config)`` says whether
    the key can change a run, given the run's whole resolved config as plain data (what its
    ``config.yaml`` holds): False where the run does not use it (a sparsification ratio under a
    stage that sends everything). Results leave a key that does not apply out of a run's
    group and label (:func:`applies`); None: it always applies. ``check(value, key)`` raises
    a one-line ``ConfigError`` for a value the field refuses on its own (no other field read):
    it runs on the value wherever the key is written, a chosen section's kept keys included.
    """
    meta = {
        "ge": ge,
        "gt": gt,
        "le": le,
        "lt": lt,
        "choices": choices,
        "prefixes": tuple(prefixes),
        "doc": doc,
        "applies": applies,
        "check": check,
    }
    if default_factory is not dataclasses.MISSING:
        return dataclasses.field(default_factory=default_factory, metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


def settings_option(
    owner: str, registry: Mapping[str, Any], *, doc: str = "", others: str | None = None
) -> Any:
    """A settings section: the ``Settings`` dataclass of ``registry[<owner>.name]``.

    ``owner`` is the sibling field naming the plug-in (built first: declare it earlier); the
    plug-in class must have a ``Settings`` dataclass attribute. ``others`` names a sibling
    field made with :func:`hidden_option` that receives the other plug-ins' validated tables
    (name -> settings); without it only the running plug-in's settings are accepted.
    """
    meta = {"settings_of": owner, "registry": registry, "doc": doc, "others": others}
    return dataclasses.field(default=None, metadata=meta)


def plugin_settings(registry: Mapping[str, Any], name: str, *, doc: str = "") -> Any:
    """A section holding the ``Settings`` dataclass of plug-in ``registry[name]`` (loaded when
    the scenario is built: the schema need not import the plug-in's package)."""
    meta = {"settings_table": name, "registry": registry, "doc": doc}
    return dataclasses.field(
        default_factory=lambda: settings_class(registry, name)(), metadata=meta
    )


def hidden_option(*, doc: str = "", flat: bool = False) -> Any:
    """A field the user does not write: filled by another field's build (a settings section's
    other tables), never a scenario key of its own; a dict, empty by default. ``flat``: its
    entries are written back as keys of the section that holds it (a chosen section's
    ``others``), after the section's own."""
    meta = {"hidden": True, "doc": doc, "flat": flat}
    return dataclasses.field(default_factory=dict, metadata=meta)


def settings_class(registry: Mapping[str, Any], name: str) -> type:
    """The ``Settings`` dataclass of plug-in ``name`` in ``registry``."""
    plugin = registry[name]
    settings = getattr(plugin, "Settings", None)
    if not (isinstance(settings, type) and dataclasses.is_dataclass(settings)):
        raise TypeError(f"{plugin!r} has no Settings dataclass")
    return settings


def chosen_section(registry: Mapping[str, Any], base: type, *, by: str = "name") -> Any:
    """A section whose dataclass the key ``by`` chooses: the ``Settings`` of ``registry[by]``
    (a subclass of ``base``, which declares ``by`` and a hidden ``others`` dict; a plug-in
    without ``Settings`` takes ``base``). See the module docstring."""
    meta = {"chosen_by": by, "registry": registry, "base": base}
    return dataclasses.field(
        default_factory=lambda: chosen_class(registry, base, _default_of(base, by))(),
        metadata=meta,
    )


def _default_of(cls: type, name: str) -> Any:
    return next(f.default for f in dataclasses.fields(cls) if f.name == name)


def chosen_class(registry: Mapping[str, Any], base: type, name: str) -> type:
    """The ``Settings`` of plug-in ``name`` (a subclass of ``base``), or ``base`` for a
    plug-in that declares none."""
    entry = registry[name]
    settings = getattr(
        entry, "Settings", getattr(getattr(entry, "__self__", None), "Settings", None)
    )
    if settings is None:
        return base
    if not (isinstance(settings, type) and issubclass(settings, base)):
        raise TypeError(f"{registry[name]!r}: its Settings must subclass {base.__name__}")
    return settings


def field_names(cls: type) -> list[str]:
    """The keys a config dataclass accepts (its fields but the hidden ones), in order."""
    return [f.name for f in dataclasses.fields(cls) if not f.metadata.get("hidden")]  # type: ignore[arg-type]


def chosen_holders(meta: Mapping[str, Any]) -> dict[str, type]:
    """Plug-in name -> ``Settings`` class for every plug-in of a chosen section's registry."""
    registry, base = meta["registry"], meta["base"]
    return {name: chosen_class(registry, base, name) for name in registry}


def _build_chosen(meta: Mapping[str, Any], raw: Mapping[str, Any], key: str) -> Any:
    """The running plug-in's settings of a chosen section, the other plug-ins' keys in
    ``others`` (validated by the first plug-in holding each)."""
    by, base, registry = meta["chosen_by"], meta["base"], meta["registry"]
    by_field = next(f for f in dataclasses.fields(base) if f.name == by)
    name = _coerce(raw.get(by, by_field.default), typing.get_type_hints(base)[by], f"{key}.{by}")
    _check_meta(name, by_field.metadata, f"{key}.{by}")
    cls = chosen_class(registry, base, name)
    own = set(field_names(cls))
    moved = getattr(cls, "MOVED_KEYS", {})
    others: dict[str, Any] = {}
    stray = [k for k in raw if k not in own]
    holders = chosen_holders(meta) if stray else {}
    for k in stray:
        if not isinstance(k, str):
            raise ConfigError(f"{key}: key {show(k)}: keys are names (strings)")
        if k in moved:
            raise ConfigError(f"{key}.{k}: {moved[k]}")
        holder = next((h for h in holders.values() if k in field_names(h)), None)
        if holder is None:
            known = sorted({n for h in holders.values() for n in field_names(h)} - own)
            raise ConfigError(
                f"{key}.{key_text(k)}: unknown key (accepted here: {', '.join(sorted(own))}; "
                f"other {registry_label(registry)}s' keys: {', '.join(known) or 'none'})"
            )
        f = next(f for f in dataclasses.fields(holder) if f.name == k)
        value = _coerce(raw[k], _hints(holder)[k], f"{key}.{k}")
        _check_meta(value, f.metadata, f"{key}.{k}")
        others[k] = value
    settings = build(cls, {k: v for k, v in raw.items() if k in own}, prefix=key)
    settings.others = others
    return settings


class MissingSettingError(ConfigError, AttributeError):
    """A chosen section read for a key its running plug-in's ``Settings`` does not declare
    (an ``AttributeError`` too, so ``getattr(settings, key, default)`` still works)."""


def missing_setting(section: str, settings: Any, name: str) -> AttributeError:
    """The error for reading ``<section>.<name>`` from ``settings`` that lack it: a plain
    ``AttributeError`` for private and special names (copy, pickle), else one line naming the
    key, the running plug-in and where its keys are declared."""
    if name.startswith("_") or not dataclasses.is_dataclass(settings):
        return AttributeError(name)
    own = ", ".join(field_names(type(settings)))
    return MissingSettingError(
        f"{section}.{name}: not a setting of the running {section} ({type(settings).__name__}: "
        f"{own}); a plug-in declares the keys it reads in its Settings (CONTRIBUTING.md)"
    )


def registry_label(registry: Any) -> str:
    """What a registry holds, in words (``controller``), for messages."""
    return str(getattr(registry, "kind", "plug-in"))


def _choices_text(meta: Mapping[str, Any]) -> str:
    names = [repr(c) for c in meta["choices"]]
    names += [repr(f"{p}<name-or-path>") for p in meta.get("prefixes", ())]
    return ", ".join(names)


def _range_text(meta: Mapping[str, Any]) -> str:
    parts = []
    if meta.get("gt") is not None:
        parts.append(f"> {meta['gt']}")
    if meta.get("ge") is not None:
        parts.append(f">= {meta['ge']}")
    if meta.get("lt") is not None:
        parts.append(f"< {meta['lt']}")
    if meta.get("le") is not None:
        parts.append(f"<= {meta['le']}")
    return " and ".join(parts)


def _type_name(tp: Any) -> str:
    if tp is float:
        return "a number"
    if tp is int:
        return "an integer"
    if tp is bool:
        return "true or false"
    if tp is str:
        return "a string"
    return getattr(tp, "__name__", str(tp))


def _coerce(value: Any, tp: Any, key: str) -> Any:
    """Check ``value`` against the annotation ``tp``; ints are accepted where floats are."""
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _coerce(value, arg, key)
            except ConfigError as err:
                errors.append(err)
        names = " or ".join(_type_name(a) for a in args if a is not type(None))
        opt = " (or null)" if type(None) in args else ""
        raise ConfigError(f"{key}: expected {names}{opt}, got {show(value)}")
    if dataclasses.is_dataclass(tp):
        if not isinstance(value, Mapping):
            raise ConfigError(f"{key}: expected a table of settings, got {show(value)}")
        return build(tp, value, prefix=key)
    if origin in (list, tuple, Sequence) or tp in (list, tuple):
        if isinstance(value, str | bytes) or not isinstance(value, Sequence):
            raise ConfigError(f"{key}: expected a list, got {show(value)}")
        inner = args[0] if args else Any
        items = [_coerce(v, inner, f"{key}[{i}]") for i, v in enumerate(value)]
        return tuple(items) if origin is tuple else items
    if origin in (dict, Mapping) or tp is dict:
        if not isinstance(value, Mapping):
            raise ConfigError(f"{key}: expected a table, got {show(value)}")
        vt = args[1] if len(args) == 2 else Any
        for k in value:
            if not isinstance(k, str):
                raise ConfigError(f"{key}: keys are names (strings), got the key {show(k)}")
        return {k: _coerce(v, vt, f"{key}.{key_text(k)}") for k, v in value.items()}
    if tp is Any:
        return value
    if tp is object:
        _check_plain(value, key)
        return value
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{key}: expected true or false, got {show(value)}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            if not (isinstance(value, float) and value.is_integer()):
                raise ConfigError(f"{key}: expected an integer, got {show(value)}")
            value = int(value)
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{key}: expected a number, got {show(value)}")
        try:
            value = float(value) + 0.0  # + 0.0: -0.0 reads as 0.0
        except OverflowError:  # an integer beyond the float range
            value = math.inf
        if not math.isfinite(value):
            raise ConfigError(f"{key}: expected a finite number, got {show(value)}")
        return value
    if tp is str:
        if not isinstance(value, str):
            raise ConfigError(f"{key}: expected a string, got {show(value)}")
        return value
    return value


def _check_plain(value: Any, key: str) -> None:
    """Option values (``dict[str, object]``) are plain data: what YAML, JSON and TOML share.

    Strings, finite numbers, true/false, null, and lists and tables (string keys) of those.
    """
    stack = [(value, key)]
    while stack:
        item, where = stack.pop()
        if item is None or isinstance(item, bool | str):
            continue
        if isinstance(item, int):
            _check_int64(item, where)
            continue
        if isinstance(item, float):
            if not math.isfinite(item):
                raise ConfigError(f"{where}: expected a finite number, got {show(item)}")
            continue
        if isinstance(item, list | tuple):
            stack.extend((v, f"{where}[{i}]") for i, v in enumerate(item))
            continue
        if isinstance(item, dict):
            for k, v in item.items():
                if not isinstance(k, str):
                    raise ConfigError(f"{where}: keys are names (strings), got the key {show(k)}")
                stack.append((v, f"{where}.{key_text(k)}"))
            continue
        raise ConfigError(
            f"{where}: expected plain data (a string, number, true/false, null, or a list or "
            f"table of those), got {show(item)}"
        )


def _check_meta(value: Any, meta: Mapping[str, Any], key: str) -> None:
    if value is None:
        return
    if meta.get("check") is not None:
        meta["check"](value, key)
    choices = meta.get("choices")
    prefixed = any(
        isinstance(value, str) and value.startswith(p) and len(value) > len(p)
        for p in meta.get("prefixes", ())
    )
    if choices is not None and value not in choices and not prefixed:
        raise ConfigError(f"{key}: must be one of {_choices_text(meta)}, got {show(value)}")
    bounds = _range_text(meta)
    if not bounds or not isinstance(value, int | float):
        _check_int64(value, key)
        return
    bad = (
        (meta.get("gt") is not None and not value > meta["gt"])
        or (meta.get("ge") is not None and not value >= meta["ge"])
        or (meta.get("lt") is not None and not value < meta["lt"])
        or (meta.get("le") is not None and not value <= meta["le"])
    )
    if bad:
        raise ConfigError(f"{key}: must be {bounds}, got {show(value)}")
    _check_int64(value, key)


def _check_int64(value: Any, key: str) -> None:
    if (
        isinstance(value, int)
        and not isinstance(value, bool)
        and not -INT_LIMIT <= value < INT_LIMIT
    ):
        raise ConfigError(f"{key}: expected a 64-bit integer (below 2**63), got {show(value)}")


def build(cls: type[T], data: Mapping[str, Any] | None, *, prefix: str = "") -> T:
    """Build dataclass ``cls`` from ``data``, validating every field (see module docstring)."""
    data = dict(data or {})
    hints = typing.get_type_hints(cls)
    fields = {
        f.name: f
        for f in dataclasses.fields(cls)  # type: ignore[arg-type]
        if not f.metadata.get("hidden")
    }
    accepted = ", ".join(sorted(fields))
    for k in data:
        if not isinstance(k, str):
            where = f"{prefix}: key {show(k)}" if prefix else f"key {show(k)}"
            raise ConfigError(f"{where}: keys are names (strings); accepted here: {accepted}")
    moved = getattr(cls, "MOVED_KEYS", {})  # a removed key -> where it went (one line)
    for k in data:
        if k in moved and k not in fields:
            raise ConfigError(f"{prefix}.{k}: {moved[k]}" if prefix else f"{k}: {moved[k]}")
    unknown = sorted(set(data) - set(fields))
    if unknown:
        name = key_text(unknown[0])
        where = f"{prefix}.{name}" if prefix else name
        raise ConfigError(f"{where}: unknown key (accepted here: {accepted})")
    kwargs: dict[str, Any] = {}
    for name, f in fields.items():
        key = f"{prefix}.{name}" if prefix else name
        if "settings_table" in f.metadata:
            section = settings_class(f.metadata["registry"], f.metadata["settings_table"])
            kwargs[name] = _coerce(data.get(name, {}), section, key)
            continue
        if "chosen_by" in f.metadata:
            raw = data.get(name, {})
            if not isinstance(raw, Mapping):
                raise ConfigError(f"{key}: expected a table of settings, got {show(raw)}")
            kwargs[name] = _build_chosen(f.metadata, raw, key)
            continue
        if "settings_of" in f.metadata:
            raw = data.get(name, {})
            if not isinstance(raw, Mapping):
                raise ConfigError(f"{key}: expected a table of settings, got {show(raw)}")
            running = kwargs[f.metadata["settings_of"]].name
            mine, others = _settings_tables(f.metadata, raw, running, key)
            kwargs[name] = mine
            if f.metadata.get("others"):
                kwargs[f.metadata["others"]] = others
            continue
        if name in data:
            value = _coerce(data[name], hints[name], key)
        elif f.default is not dataclasses.MISSING:
            value = f.default
        elif f.default_factory is not dataclasses.MISSING:
            value = f.default_factory()
        else:
            raise ConfigError(f"{key}: required key is missing")
        _check_meta(value, f.metadata, key)
        kwargs[name] = value
    obj = cls(**kwargs)
    check = getattr(obj, "validate", None)
    if callable(check):
        check(prefix)
    return obj


def _settings_tables(
    meta: Mapping[str, Any], raw: Mapping[str, Any], running: str, key: str
) -> tuple[Any, dict[str, Any]]:
    """The running plug-in's settings and the other plug-ins' (name -> settings) from a
    settings section: tables named by plug-ins, and keys of the running plug-in directly under
    it (over its table)."""
    registry = meta["registry"]
    tabled = bool(meta.get("others"))
    tables = {k: v for k, v in raw.items() if tabled and k in registry and isinstance(v, Mapping)}
    loose = {k: v for k, v in raw.items() if k not in tables}
    section = settings_class(registry, running)
    own_keys = {f.name for f in dataclasses.fields(section)}  # type: ignore[arg-type]
    stray = [k for k in loose if k not in own_keys and k not in getattr(section, "MOVED_KEYS", {})]
    if tabled and stray:
        owner, name = meta["settings_of"], key_text(stray[0])
        holders = [
            other
            for other in registry
            if other != running
            and stray[0] in {f.name for f in dataclasses.fields(settings_class(registry, other))}
        ]
        if holders:
            raise ConfigError(
                f"{key}.{name}: a setting of {owner} {holders[0]!r}, not of {running!r} (the "
                f"{owner} that runs); keep it in its table, {key}.{holders[0]}.{name}, or remove it"
            )
        accepted = ", ".join(sorted(own_keys)) or "none"
        raise ConfigError(
            f"{key}.{name}: unknown key (accepted here: {accepted}; another {owner}'s settings "
            f"go in its own table, {key}.<{owner} name>.<setting>)"
        )
    mine = build(section, {**tables.get(running, {}), **loose}, prefix=key)
    others = {
        other: build(settings_class(registry, other), table, prefix=f"{key}.{other}")
        for other, table in tables.items()
        if other != running
    }
    return mine, others


def to_dict(obj: Any) -> Any:
    """Plain-data form of a config dataclass (what is written back to ``config.yaml``); a
    settings section with other plug-ins' tables is written as one table per plug-in."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        out, flat = {}, {}
        for f in dataclasses.fields(obj):
            if f.metadata.get("hidden"):
                if f.metadata.get("flat"):  # a chosen section's other plug-ins' keys, last
                    flat.update({k: to_dict(v) for k, v in getattr(obj, f.name).items()})
                continue
            value = to_dict(getattr(obj, f.name))
            if f.metadata.get("others"):
                running = getattr(obj, f.metadata["settings_of"]).name
                others = getattr(obj, f.metadata["others"])
                value = {running: value, **{k: to_dict(v) for k, v in others.items()}}
            out[f.name] = value
        return {**out, **{k: v for k, v in flat.items() if k not in out}}
    if isinstance(obj, list | tuple):
        return [to_dict(v) for v in obj]
    if isinstance(obj, dict):
        return {k: to_dict(v) for k, v in obj.items()}
    return obj


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def applies(cls: type, config: Mapping[str, Any], key: str) -> bool:
    """Whether the dotted ``key`` can change a run whose resolved config is ``config``.

    ``config`` is plain data, as a run's ``config.yaml`` holds it, of dataclass ``cls`` (the
    scenario). A key does not apply when it, or a section holding it, has an ``applies``
    predicate (:func:`option`) that says no for ``config``, or when it lies in a settings
    section's table of a plug-in that does not run (``strategy.fslora.download`` while
    ``algorithm.name`` is hetlora). Every other key applies, keys the schema does not know and
    keys whose predicate fails on ``config`` (written by another version) included.
    """
    node: Any = config
    parts = key.split(".")
    i = 0
    while i < len(parts) and dataclasses.is_dataclass(cls):
        f = next((f for f in dataclasses.fields(cls) if f.name == parts[i]), None)
        if f is None:
            return True
        predicate = f.metadata.get("applies")
        if predicate is not None and not _says_yes(predicate, config):
            return False
        value = node.get(f.name) if isinstance(node, Mapping) else None
        if "chosen_by" in f.metadata:
            running = value.get(f.metadata["chosen_by"]) if isinstance(value, Mapping) else None
            if i + 1 >= len(parts):
                return True
            try:
                holders = chosen_holders(f.metadata)
            except Exception:  # noqa: BLE001 - a plug-in not registered here: keep the key
                return True
            name = parts[i + 1]
            held = [h for h in holders.values() if name in field_names(h)]
            if isinstance(running, str) and running in holders:
                if held and name not in field_names(holders[running]):
                    return False  # another plug-in's key: kept, never used
                cls = holders[running]
            elif held:  # no plug-in named: the key's own rules (its first holder's)
                cls = held[0]
            else:
                return True
            node, i = value, i + 1
            continue
        if "settings_of" in f.metadata:
            owner = node.get(f.metadata["settings_of"])
            running = owner.get("name") if isinstance(owner, Mapping) else None
            registry = f.metadata["registry"]
            table = parts[i + 1] if i + 1 < len(parts) else None
            if not isinstance(running, str) or table is None:
                return True
            if f.metadata.get("others") and table != running and table in registry:
                return False  # another plug-in's table: kept, never used
            try:
                cls = settings_class(registry, running)
            except Exception:  # noqa: BLE001 - a plug-in not registered here: keep the key
                return True
            if f.metadata.get("others") and table == running:
                value, i = value.get(table) if isinstance(value, Mapping) else None, i + 1
            node, i = value, i + 1
            continue
        if "settings_table" in f.metadata:
            try:
                cls = settings_class(f.metadata["registry"], f.metadata["settings_table"])
            except Exception:  # noqa: BLE001 - a plug-in not registered here: keep the key
                return True
            node, i = value, i + 1
            continue
        cls, node, i = _hints(cls).get(f.name), value, i + 1
    return True


def _says_yes(predicate: Callable[[Mapping[str, Any]], bool], config: Mapping[str, Any]) -> bool:
    try:
        return bool(predicate(config))
    except Exception:  # noqa: BLE001 - a config this version cannot read: the key applies
        return True


def describe(cls: type, prefix: str = "") -> list[tuple[str, str, str]]:
    """(dotted key, default, doc) for every leaf field: the scenario reference table."""
    rows = []
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        if f.metadata.get("hidden"):
            continue
        key = f"{prefix}.{f.name}" if prefix else f.name
        tp = hints[f.name]
        if "chosen_by" in f.metadata:
            rows.extend(_describe_chosen(f.metadata, key))
            continue
        if "settings_table" in f.metadata:
            section = settings_class(f.metadata["registry"], f.metadata["settings_table"])
            rows.extend(describe(section, key))
            continue
        if dataclasses.is_dataclass(tp):
            rows.extend(describe(tp, key))
            continue
        if "settings_of" in f.metadata:
            registry = f.metadata["registry"]
            for plugin in registry:
                table = f"{key}.{plugin}" if f.metadata.get("others") else key
                sub = describe(settings_class(registry, plugin), table)
                owner = (
                    f"{prefix}.{f.metadata['settings_of']}" if prefix else f.metadata["settings_of"]
                )
                rows.extend((k, d, f"[{owner}.name = {plugin}] {doc}") for k, d, doc in sub)
            continue
        default = f.default if f.default is not dataclasses.MISSING else "(required)"
        if f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        doc = f.metadata.get("doc", "")
        bounds = _range_text(f.metadata)
        if f.metadata.get("choices") is not None:
            bounds = "one of " + _choices_text(f.metadata).replace("'", "")
        rows.append((key, repr(default), f"{doc} {('[' + bounds + ']') if bounds else ''}".strip()))
    return rows


def _describe_chosen(meta: Mapping[str, Any], key: str) -> list[tuple[str, str, str]]:
    """A chosen section's rows: each key once, marked with the plug-ins that read it unless
    every one does."""
    holders = chosen_holders(meta)
    rows: dict[str, tuple[str, str]] = {}
    readers: dict[str, list[str]] = {}
    for plugin, cls in holders.items():
        for k, default, doc in describe(cls, key):
            rows.setdefault(k, (default, doc))
            readers.setdefault(k, []).append(plugin)
    owner = f"{key}.{meta['chosen_by']}"
    out = []
    for k, (default, doc) in rows.items():
        who = readers[k]
        mark = "" if len(who) == len(holders) else f"[{owner} = {', '.join(who)}] "
        out.append((k, default, mark + doc))
    return out
