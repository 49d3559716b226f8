"""A sweep's runs: every grid point × seed, each with its folder name and ``--set`` overrides."""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from wirelessfl.errors import UserError
from wirelessfl.study.grid import format_value, normalize_grid, plain

_NAME_OK = re.compile(r"[^A-Za-z0-9._+=,\-]")
_MAX_NAME = 150


def run_name(params: dict[str, Any], seed: int) -> str:
    """The run folder name: ``key=value`` for the sorted grid keys, then ``seed=N``.

    Characters unsafe in a file name become ``_`` and such names (and very long ones) get a
    short hash of the exact parameters, so different parameters never share a folder."""
    raw = ",".join([*(f"{k}={format_value(params[k])}" for k in sorted(params)), f"seed={seed}"])
    name = _NAME_OK.sub("_", raw)
    if name != raw or len(name) > _MAX_NAME:
        digest = hashlib.sha1(raw.encode()).hexdigest()[:8]
        name = f"{name[: _MAX_NAME - 9]}~{digest}"
    return name


@dataclass(frozen=True)
class SweepPoint:
    """One run of a sweep: its folder name, grid values, seed and ``--set`` overrides."""

    name: str
    params: dict[str, Any]
    seed: int
    overrides: tuple[str, ...]


def plan_sweep(
    grid: dict[str, Any], seeds: Sequence[int], overrides: Sequence[str] = ()
) -> list[SweepPoint]:
    """Every grid point × seed, in grid order with the seed innermost.

    Args:
        grid: dotted scenario keys -> values (see ``grid.normalize_grid``).
        seeds: the seeds of every grid point.
        overrides: ``key=value`` strings applied to every run, before the grid values.

    Returns:
        The runs; each one's overrides end with its grid values and ``seed=N``.
    """
    grid = normalize_grid(grid)
    keys = list(grid)
    if "seed" in keys:
        raise UserError("--grid seed: give the seeds with --seeds instead")
    for key in keys:
        if not grid[key]:
            raise UserError(f"--grid {key}: no values")
    values = [grid[key] for key in keys]
    points, seen = [], set()
    for combo in itertools.product(*values):
        params = dict(zip(keys, combo, strict=True))
        for seed in seeds:
            name = run_name(params, seed)
            if name in seen:
                raise UserError(
                    f"--grid: two runs would share the folder {name!r} (repeated value)"
                )
            seen.add(name)
            sets = [*overrides, *grid_sets(params)]
            points.append(SweepPoint(name, params, int(seed), (*sets, f"seed={int(seed)}")))
    return points


def grid_sets(params: dict[str, Any]) -> list[str]:
    """A grid point's values as ``KEY=VALUE`` items (``load_scenario``'s ``grid``)."""
    return [f"{k}={format_value(v)}" for k, v in params.items()]


def override_params(overrides: Sequence[str]) -> dict[str, str]:
    """``--set`` strings as key -> value text (the last of a repeated key; ``seed`` left out:
    a run name ends with its own), for naming a run apart from one of another ``--set``."""
    params: dict[str, str] = {}
    for item in overrides:
        key, _, value = item.partition("=")
        if key.strip() != "seed":
            params[key.strip()] = value.strip()
    return params


def seed_list(seeds: int | Sequence[int], base: int) -> list[int]:
    """Seeds from a count (``base`` and the next ones) or an explicit list of distinct seeds."""
    seeds = plain(seeds)
    if isinstance(seeds, int):
        if seeds < 1:
            raise UserError(f"--seeds: expected at least 1, got {seeds}")
        return [base + i for i in range(seeds)]
    out = [int(s) for s in seeds]
    if not out or any(s < 0 for s in out) or len(set(out)) != len(out):
        raise UserError(f"--seeds: expected distinct seeds >= 0, got {list(seeds)}")
    return out
