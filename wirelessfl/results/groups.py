"""Runs grouped by config and labelled by the config keys that tell them apart.

Runs whose configs differ only in ``seed`` (and ``name``/``output``) form one group; labels
read ``key=value`` with the last part of each dotted key (``V=0.0001``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wirelessfl.results.store import RunResult

#: config keys that never separate groups
IGNORED_KEYS = ("seed", "name", "output")


def flat_config(data: Any, prefix: str = "") -> dict[str, Any]:
    """A nested mapping as ``{"dotted.key": leaf}``; a non-mapping is ``{prefix: data}``."""
    if isinstance(data, dict):
        out: dict[str, Any] = {}
        for k, v in data.items():
            out.update(flat_config(v, f"{prefix}{k}."))
        return out
    return {prefix[:-1]: data}


def config_value(run: RunResult, key: str) -> Any:
    """A dotted key of a run's resolved config (``controller.d_th_s``); NaN if absent.

    ``strategy.<setting>`` reads the running algorithm's table (``strategy.<algorithm>``), as a
    key directly under ``strategy`` does in a scenario."""
    node: Any = run.config
    parts = key.split(".")
    strategy = node.get("strategy") if isinstance(node, dict) else None
    running = node.get("algorithm", {}).get("name") if isinstance(node, dict) else None
    if (
        len(parts) > 1
        and parts[0] == "strategy"
        and isinstance(strategy, dict)
        and parts[1] not in strategy
        and isinstance(strategy.get(running), dict)
    ):
        parts = ["strategy", running, *parts[1:]]
    for part in parts:
        if not isinstance(node, dict) or part not in node:
            return math.nan
        node = node[part]
    return node


def format_label(value: Any) -> str:
    """A config value as label text: floats with 4 significant digits."""
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


@dataclass
class RunGroup:
    """Runs with the same config apart from the seed."""

    label: str
    params: dict[str, Any]
    runs: list[RunResult]


def group_runs(runs: Sequence[RunResult]) -> list[RunGroup]:
    """Group by config without seed/name/output; labels name the keys that differ.

    Args:
        runs: loaded runs.

    Returns:
        The groups in order of their first run; ``params`` holds the varying keys' values.
    """
    keyed: dict[str, tuple[dict[str, Any], list[RunResult]]] = {}
    for run in runs:
        flat = {
            k: v
            for k, v in flat_config(run.config).items()
            if k.split(".")[0] not in IGNORED_KEYS and k
        }
        key = json.dumps(flat, sort_keys=True, default=str)
        keyed.setdefault(key, (flat, []))[1].append(run)
    flats = [flat for flat, _ in keyed.values()]
    keys = sorted({k for f in flats for k in f})
    varying = _label_keys(flats, keys)
    short = {k: k.rsplit(".", 1)[-1] for k in varying}
    if len(set(short.values())) < len(short):
        short = {k: k for k in varying}
    groups = []
    for flat, members in keyed.values():
        params = {k: flat.get(k) for k in varying}
        if params:
            label = ", ".join(f"{short[k]}={format_label(v)}" for k, v in params.items())
        else:
            label = str(members[0].config.get("name") or Path(members[0].path).name)
        groups.append(RunGroup(label, params, members))
    return groups


def _label_keys(flats: list[dict[str, Any]], keys: list[str]) -> list[str]:
    """The keys whose values differ between groups, naming them in labels.

    Keys every group has come first: runs of different algorithms differ in ``algorithm.name``
    and in settings only one of them has (``strategy.download`` of FSLoRA), and the label
    ``name=fslora`` says enough. Keys missing from some groups are kept only when the shared
    keys alone would give two groups the same label.
    """

    def differs(k: str) -> bool:
        return len({json.dumps(f.get(k), default=str) for f in flats}) > 1

    varying = [k for k in keys if differs(k)]
    shared = [k for k in varying if all(k in f for f in flats)]
    labels = {json.dumps([f.get(k) for k in shared], default=str) for f in flats}
    return shared if shared and len(labels) == len(flats) else varying


def _seed(run: RunResult) -> Any:
    return run.meta.get("seed", run.config.get("seed", "?"))


def run_labels(runs: Sequence[RunResult]) -> list[str]:
    """One label per run: its group's label when there are several groups, plus its seed when
    there are several runs (``V=0.01, seed=1``); a lone run gets its group's label."""
    groups = group_runs(runs)
    by_id = {}
    for group in groups:
        for run in group.runs:
            name = group.label if len(groups) > 1 else ""
            seed = f"seed={_seed(run)}" if len(group.runs) > 1 or len(runs) > 1 else ""
            by_id[id(run)] = ", ".join(s for s in (name, seed) if s) or group.label
    return [by_id[id(run)] for run in runs]


def distinguishing_labels(sets: Sequence[Sequence[RunResult]]) -> list[str]:
    """For sets of runs: the config keys constant within each set that differ between sets.

    Args:
        sets: non-empty sets of runs.

    Returns:
        One label per set (empty when no key tells the sets apart).
    """
    flats = [[flat_config(run.config) for run in members] for members in sets]
    keys = sorted({k for fs in flats for f in fs for k in f if k.split(".")[0] not in IGNORED_KEYS})

    def const(fs: list[dict[str, Any]], key: str) -> str | None:
        vals = {json.dumps(f.get(key), default=str) for f in fs}
        return vals.pop() if len(vals) == 1 else None

    chosen = []
    for key in keys:
        per_set = [const(fs, key) for fs in flats]
        if None not in per_set and len(set(per_set)) > 1:
            chosen.append(key)
    labels = []
    for fs in flats:
        parts = [f"{k.rsplit('.', 1)[-1]}={format_label(fs[0].get(k))}" for k in chosen]
        labels.append(", ".join(parts))
    return labels
