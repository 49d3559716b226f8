"""Safe YAML loading with limits: one clear error line for any document a user can write.

:func:`load_yaml` is ``yaml.safe_load`` (the same tags, resolver and constructors; no Python
tags) plus checks made on the composed node graph *before* anything is constructed:

- nesting deeper than :data:`MAX_DEPTH` levels, counted as written (checked while composing,
  so ``[[[[...]]]]`` 10,000 deep never reaches Python's recursion limit) and as expanded
  through aliases;
- documents that expand to more than :data:`MAX_NODES` nodes once every alias is replaced by
  what it names ("billion laughs": 9 levels of 9 aliases is ~1 KB of text and 400 million
  nodes); the expanded size is computed once per node, so the check is linear in the text;
- an alias inside the node it names (``a: &a [*a]``), which would make a structure that
  contains itself;
- duplicate keys in one mapping (YAML keeps the last one silently): the dotted path of the key
  and both line numbers are named; keys that are lists or mappings.

Every problem is raised as :class:`~wirelessfl.errors.ConfigError` whose one-line message
starts with ``where`` (``"scenario: my.yaml"``, ``"--set controller.V"``). libyaml parses the
text when it is available (about ten times faster than the pure-Python parser); the composer
is PyYAML's own, with the depth check added.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.resolver import Resolver

from wirelessfl.errors import ConfigError

__all__ = ["MAX_DEPTH", "MAX_NODES", "load_yaml", "one_line", "show_key"]

#: Deepest nesting accepted (a scenario is at most 6 levels deep).
MAX_DEPTH = 100
#: Most nodes a document may hold once aliases are expanded (the shipped ones hold ~200).
MAX_NODES = 100_000

_MERGE_TAG = "tag:yaml.org,2002:merge"

try:  # libyaml's parser feeds PyYAML's composer (so the depth check below applies)
    from yaml._yaml import CParser as _Parser

    _C_PARSER = True
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    from yaml.parser import Parser as _Parser
    from yaml.reader import Reader as _Reader
    from yaml.scanner import Scanner as _Scanner

    _C_PARSER = False


class _TooDeep(Exception):
    def __init__(self, mark: Any):
        self.mark = mark


class _TooMany(Exception):
    pass


class _LimitedComposer(Composer):
    """PyYAML's composer, refusing to nest deeper than :data:`MAX_DEPTH` or to compose more
    than :data:`MAX_NODES` nodes (so a long text is refused before it is all composed)."""

    _depth = 0
    _count = 0

    def compose_node(self, parent: Node | None, index: Any) -> Node:
        self._depth += 1
        self._count += 1
        try:
            if self._depth > MAX_DEPTH:
                raise _TooDeep(self.peek_event().start_mark)
            if self._count > MAX_NODES:
                raise _TooMany
            return Composer.compose_node(self, parent, index)
        finally:
            self._depth -= 1


if _C_PARSER:

    class _Loader(_Parser, SafeConstructor, Resolver):  # type: ignore[misc]
        def __init__(self, stream: str):
            _Parser.__init__(self, stream)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)
            _LimitedComposer.__init__(self)

        # the C parser composes by itself; use the Python composer (and its limits)
        check_node = _LimitedComposer.check_node
        get_node = _LimitedComposer.get_node
        get_single_node = _LimitedComposer.get_single_node
        compose_document = _LimitedComposer.compose_document
        compose_node = _LimitedComposer.compose_node
        compose_scalar_node = _LimitedComposer.compose_scalar_node
        compose_sequence_node = _LimitedComposer.compose_sequence_node
        compose_mapping_node = _LimitedComposer.compose_mapping_node
        _depth = 0
        _count = 0

else:  # pragma: no cover

    class _Loader(_Reader, _Scanner, _Parser, _LimitedComposer, SafeConstructor, Resolver):  # type: ignore[no-redef]
        def __init__(self, stream: str):
            _Reader.__init__(self, stream)
            _Scanner.__init__(self)
            _Parser.__init__(self)
            _LimitedComposer.__init__(self)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)


def one_line(text: str, limit: int = 200) -> str:
    """``text`` on one line (line breaks and control characters escaped), at most ``limit``."""
    out = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return out if len(out) <= limit else out[: limit - 3] + "..."


def show_key(key: Any) -> str:
    """A key as it reads in a dotted path: plain names as they are, anything else as repr."""
    if isinstance(key, str) and key and key.isprintable() and " " not in key:
        return one_line(key, 80)
    return one_line(repr(key), 80)


def _line(mark: Any) -> str:
    if mark is None:
        return ""
    return f"line {mark.line + 1}, column {mark.column + 1}"


def _yaml_error_text(err: yaml.YAMLError) -> str:
    """One line from a PyYAML error: the problem, where, and what it was parsing."""
    if isinstance(err, yaml.MarkedYAMLError):
        problem = err.problem or err.context or type(err).__name__
        text = str(problem)
        if err.problem_mark is not None:
            text += f" at {_line(err.problem_mark)}"
        if err.context and err.problem:
            ctx = str(err.context)
            if err.context_mark is not None:
                ctx += f" started at {_line(err.context_mark)}"
            text += f" ({ctx})"
        return one_line(text)
    first = str(err).splitlines()[0] if str(err) else type(err).__name__
    return one_line(first)


def _kind(node: Node) -> str:
    if isinstance(node, MappingNode):
        return "a table"
    if isinstance(node, SequenceNode):
        return "a list"
    return "a value"


def _child_path(path: str, part: str) -> str:
    if part.startswith("["):
        return f"{path}{part}" if path else part
    return f"{path}.{part}" if path else part


def _check_graph(root: Node, loader: _Loader, where: str, root_path: str) -> None:
    """Refuse cycles, expansion past MAX_NODES or MAX_DEPTH, bad and duplicate keys.

    One iterative post-order walk; sizes and depths are memoised per node, so a node reached
    through many aliases is measured once.
    """
    size: dict[int, int] = {}
    depth: dict[int, int] = {}
    active: set[int] = set()
    stack: list[tuple[Node, str, bool]] = [(root, root_path, False)]
    while stack:
        node, path, done = stack.pop()
        nid = id(node)
        if done:
            active.discard(nid)
            children = _children(node)
            size[nid] = 1 + sum(size[id(c)] for c in children)
            depth[nid] = 1 + max((depth[id(c)] for c in children), default=0)
            if size[nid] > MAX_NODES:
                raise ConfigError(
                    f"{where}: expands to more than {MAX_NODES:,} values once its aliases (*name) "
                    f"are replaced by what they name (limit {MAX_NODES:,}); write the values out "
                    "or use fewer aliases"
                )
            if depth[nid] > MAX_DEPTH:
                raise ConfigError(
                    f"{where}: nested deeper than {MAX_DEPTH} levels once its aliases are "
                    f"expanded (limit {MAX_DEPTH})"
                )
            continue
        if nid in size:
            continue
        if nid in active:
            raise ConfigError(
                f"{where}: {_line(node.start_mark)}: an alias (*name) refers to a node that "
                "contains it (a recursive alias); YAML aliases must not nest inside what they name"
            )
        active.add(nid)
        stack.append((node, path, True))
        if isinstance(node, MappingNode):
            _check_keys(node, path, loader, where)
            for key_node, value_node in reversed(node.value):
                part = _key_part(key_node, loader)
                stack.append((value_node, _child_path(path, part), False))
                stack.append((key_node, path, False))
        elif isinstance(node, SequenceNode):
            for i in range(len(node.value) - 1, -1, -1):
                stack.append((node.value[i], _child_path(path, f"[{i}]"), False))


def _children(node: Node) -> list[Node]:
    if isinstance(node, MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, SequenceNode):
        return list(node.value)
    return []


def _key_part(key_node: Node, loader: _Loader) -> str:
    if isinstance(key_node, ScalarNode):
        if key_node.tag == _MERGE_TAG:
            return "<<"
        return show_key(loader.construct_object(key_node))
    return "?"


def _check_keys(node: MappingNode, path: str, loader: _Loader, where: str) -> None:
    """Keys must be plain values (not lists or tables) and appear once per mapping."""
    seen: dict[Any, Any] = {}
    for key_node, _ in node.value:
        if not isinstance(key_node, ScalarNode):
            at = f" under {path}" if path else ""
            raise ConfigError(
                f"{where}: {_line(key_node.start_mark)}: a key{at} is {_kind(key_node)}; "
                "keys must be names (plain strings)"
            )
        if key_node.tag == _MERGE_TAG:
            continue
        key = loader.construct_object(key_node)
        try:
            hash(key)
        except TypeError:  # pragma: no cover - scalars construct to hashable values
            raise ConfigError(
                f"{where}: {_line(key_node.start_mark)}: key {one_line(repr(key), 60)} cannot be "
                "used as a key; keys must be names (plain strings)"
            ) from None
        mark = key_node.start_mark
        if key in seen:
            first = seen[key]
            if first.line == mark.line:
                at = f"line {mark.line + 1}, columns {first.column + 1} and {mark.column + 1}"
            else:
                at = f"lines {first.line + 1} and {mark.line + 1}"
            dotted = _child_path(path, show_key(key))
            raise ConfigError(
                f"{where}: duplicate key {dotted} ({at}); each key may appear once in a table"
            )
        seen[key] = mark


def load_yaml(text: str, where: str, root_path: str = "") -> tuple[bool, Any]:
    """Parse one YAML document with the limits above.

    Returns ``(found, data)``: ``found`` is False when the text holds no document at all
    (empty, or only comments). Raises :class:`ConfigError` starting with ``where``; keys are
    named by their dotted path, starting with ``root_path`` (the key a ``--set`` value goes to).
    """
    loader = _Loader(text)
    try:
        try:
            node = loader.get_single_node()
        except _TooDeep as deep:
            raise ConfigError(
                f"{where}: nested deeper than {MAX_DEPTH} levels at {_line(deep.mark)} "
                f"(limit {MAX_DEPTH})"
            ) from None
        except _TooMany:
            raise ConfigError(
                f"{where}: holds more than {MAX_NODES:,} values (keys, values and list items; "
                f"limit {MAX_NODES:,})"
            ) from None
        if node is None:
            return False, None
        _check_graph(node, loader, where, root_path)
        return True, loader.construct_document(node)
    except yaml.YAMLError as err:
        if "maximum nesting depth" in str(getattr(err, "problem", "") or ""):
            # PyYAML >= 6.0.3 stops deep flow collections itself, before the depth check here
            raise ConfigError(
                f"{where}: nested deeper than {MAX_DEPTH} levels (limit {MAX_DEPTH})"
            ) from None
        raise ConfigError(f"{where}: not valid YAML: {_yaml_error_text(err)}") from None
    except ConfigError:
        raise
    except (ValueError, OverflowError, TypeError, AttributeError, KeyError, IndexError) as err:
        # PyYAML's constructors fail so on some malformed scalars: an integer of more than
        # 4,300 digits, an explicit !!timestamp that is not a date
        text = str(err).split(";")[0] or type(err).__name__
        raise ConfigError(
            f"{where}: not valid YAML: cannot read a value: {one_line(text)}"
        ) from None
    except RecursionError:  # pragma: no cover - the depth limit keeps well below it
        raise ConfigError(f"{where}: nested too deeply (limit {MAX_DEPTH} levels)") from None
    finally:
        loader.dispose()
