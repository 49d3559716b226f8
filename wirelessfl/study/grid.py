"""Grid values: parsed from ``--grid KEY=V1,V2,...`` and written back as ``--set`` text."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from wirelessfl.errors import UserError


def plain(value: Any) -> Any:
    """numpy scalars and arrays as Python numbers and lists."""
    if hasattr(value, "tolist") and not isinstance(value, str | bytes):
        return value.tolist()
    return value


def normalize_grid(grid: dict[str, Any]) -> dict[str, list]:
    """Each key's values as a list of plain Python values (a scalar is one value; numpy arrays
    and other iterables become lists)."""
    out: dict[str, list] = {}
    for key, vals in grid.items():
        vals = plain(vals)
        if isinstance(vals, str | bytes | dict) or not isinstance(vals, Iterable):
            vals = [vals]
        out[str(key)] = [plain(v) for v in vals]
    return out


def format_value(value: Any) -> str:
    """A grid value as ``--set`` text that parses back to the same value (``1e-05``, ``true``)."""
    value = plain(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list | tuple | dict):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def parse_value(text: str, key: str = "") -> Any:
    """One value parsed exactly like a ``--set key=VALUE`` value (numbers, booleans, strings);
    ``UserError`` naming ``--grid <key>`` if it is not valid."""
    from wirelessfl.config.loader import parse_value as parse_set_value

    return parse_set_value(text, f"--grid {key}".rstrip(), key)


def _split_top_level(text: str) -> list[str]:
    """Split on commas outside brackets and quotes: ``1,[2,3],x`` -> ``1``, ``[2,3]``, ``x``."""
    parts, depth, quote, start = [], 0, "", 0
    for i, ch in enumerate(text):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts]


def parse_grid(items: Iterable[str]) -> dict[str, list]:
    """``["controller.V=1e-4,1e-3", ...]`` -> ``{"controller.V": [0.0001, 0.001], ...}``."""
    grid: dict[str, list] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key or not raw.strip():
            raise UserError(f"--grid: expected KEY=V1,V2,..., got {item!r}")
        if key in grid:
            raise UserError(f"--grid {key}: given twice (list every value in one --grid)")
        texts = _split_top_level(raw)
        if any(not t for t in texts):
            raise UserError(f"--grid {key}: empty value in {raw!r}")
        grid[key] = [parse_value(t, key) for t in texts]
    return grid
