"""Runs grouped by config and labelled by the config keys that tell them apart.

Runs whose configs differ only in ``seed`` (and ``name``/``output``, and settings that do not
apply to them: :func:`group_runs`) form one group; labels read ``key=value`` with the last part
of each dotted key (``V=0.0001``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wirelessfl.results.store import RunResult

#: config keys that never separate groups
IGNORED_KEYS = ("seed", "name", "output")
#: a key's value where a group has no such key (no JSON text reads so)
_ABSENT = "<absent>"


def flat_config(data: Any, prefix: str = "") -> dict[str, Any]:
    """A nested mapping as ``{"dotted.key": leaf}``; a non-mapping is ``{prefix: data}``."""
    if isinstance(data, dict):
        out: dict[str, Any] = {}
        for k, v in data.items():
            out.update(flat_config(v, f"{prefix}{k}."))
        return out
    return {prefix[:-1]: data}


def config_value(run: RunResult, key: str) -> Any:
    """A dotted key of a run's resolved config (``controller.d_th_s``); NaN if absent
    (:func:`lookup`)."""
    return lookup(run.config, key)


def lookup(config: dict[str, Any], key: str) -> Any:
    """A dotted key of a resolved config (nested mappings, as ``config.yaml`` holds it); NaN
    if absent.

    ``strategy.<setting>`` reads the running algorithm's table (``strategy.<algorithm>``), as a
    key directly under ``strategy`` does in a scenario."""
    node: Any = config
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
    """Runs with the same config apart from the seed (and settings that do not apply)."""

    label: str
    params: dict[str, Any]
    runs: list[RunResult]

    @property
    def seeds(self) -> int:
        """Distinct seeds among the runs (runs that differ only in settings that do not apply
        to them, such as the ratio of a stage that sends everything, repeat a seed)."""
        return len({json.dumps(_seed(run), default=str) for run in self.runs})


def _flat(run: RunResult) -> dict[str, Any]:
    """The run's config flattened, without the keys that never separate groups."""
    flat = flat_config(run.config).items()
    return {k: v for k, v in flat if k and k.split(".")[0] not in IGNORED_KEYS}


def _applicable(runs: Sequence[RunResult], flats: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``flats`` without, for each run, the keys that vary between the runs and do not apply to
    that run (``wirelessfl.config.schema.applies``: a key's own rule, such as the controller's
    ratio under a compression stage that sends everything, or another algorithm's
    ``strategy.<name>`` table). Keys equal in every run are kept: they tell no run apart."""
    keys = sorted({k for f in flats for k in f})
    varying = [k for k in keys if len({json.dumps(f.get(k), default=str) for f in flats}) > 1]
    if not varying:
        return flats
    from wirelessfl.config.scenario import Scenario
    from wirelessfl.config.schema import applies

    return [
        {k: v for k, v in flat.items() if k not in varying or applies(Scenario, run.config, k)}
        for run, flat in zip(runs, flats, strict=True)
    ]


def _groups(runs: Sequence[RunResult], *, applicable: bool) -> list[RunGroup]:
    flats = [_flat(run) for run in runs]
    if applicable:
        flats = _applicable(runs, flats)
    keyed: dict[str, tuple[dict[str, Any], list[RunResult]]] = {}
    for run, flat in zip(runs, flats, strict=True):
        key = json.dumps(flat, sort_keys=True, default=str)
        keyed.setdefault(key, (flat, []))[1].append(run)
    flats = [flat for flat, _ in keyed.values()]
    keys = sorted({k for f in flats for k in f})
    varying = _label_keys(flats, keys)
    short = {k: k.rsplit(".", 1)[-1] for k in varying}
    if len(set(short.values())) < len(short):
        short = {k: k for k in varying}
    labels = _labels(flats, varying, short, format_label)
    if len(set(labels)) < len(labels):  # values alike to 4 digits: written in full
        labels = _labels(flats, varying, short, str)
    groups = []
    for flat, label, (_, members) in zip(flats, labels, keyed.values(), strict=True):
        params = {k: flat.get(k) for k in varying}
        label = label or str(members[0].config.get("name") or Path(members[0].path).name)
        groups.append(RunGroup(label, params, members))
    return groups


def _labels(
    flats: list[dict[str, Any]],
    keys: list[str],
    short: dict[str, str],
    show: Callable[[Any], str],
) -> list[str]:
    """``short=value`` of each of ``keys`` a group has (``show`` writes the value)."""
    return [", ".join(f"{short[k]}={show(f[k])}" for k in keys if k in f) for f in flats]


def group_runs(runs: Sequence[RunResult]) -> list[RunGroup]:
    """Group by config without seed/name/output, and without the settings that do not apply to
    a run; labels name the keys that differ.

    A key that does not apply to a run (:func:`wirelessfl.config.schema.applies`: the
    controller's ratio when the compression stage sends everything, or has a fixed ratio;
    another algorithm's ``strategy.<name>`` table) neither separates its groups nor appears in
    its label: dense ILoRA runs in a grid of ``compression.sparsifier`` x
    ``controller.sparsification`` form one group, ``sparsifier=none``, while the sparsifiers'
    groups keep their ratio. A label names only the keys its group has, so two groups never
    share one.

    Args:
        runs: loaded runs.

    Returns:
        The groups in order of their first run; ``params`` holds the varying keys' values
        (None where a key does not apply to the group).
    """
    return _groups(runs, applicable=True)


def _label_keys(flats: list[dict[str, Any]], keys: list[str]) -> list[str]:
    """The keys whose values differ between groups, naming them in labels.

    Keys every group has come first: runs of different algorithms differ in ``algorithm.name``
    and in settings only one of them has (``strategy.download`` of FSLoRA), and the label
    ``name=fslora`` says enough. When those alone would give two groups the same label, the
    keys that take two values or more among the groups that have them join (FSLoRA's
    ``download`` when two FSLoRA groups differ in it; not HetLoRA's own settings, constant in
    its group); then, if still needed, every key that differs, a key's absence (it does not
    apply, or the group's config lacks it) counting as a value of its own.
    """

    def value(f: dict[str, Any], k: str) -> str:
        return json.dumps(f[k], default=str) if k in f else _ABSENT

    def unique(chosen: list[str]) -> bool:
        return len({tuple(value(f, k) for k in chosen) for f in flats}) == len(flats)

    varying = [k for k in keys if len({value(f, k) for f in flats}) > 1]
    shared = [k for k in varying if all(k in f for f in flats)]
    if shared and unique(shared):
        return shared
    distinct = [k for k in varying if len({value(f, k) for f in flats if k in f}) > 1]
    return distinct if unique(distinct) else varying


def _seed(run: RunResult) -> Any:
    return run.meta.get("seed", run.config.get("seed", "?"))


def run_labels(runs: Sequence[RunResult]) -> list[str]:
    """One label per run: its group's label when there are several groups, plus its seed when
    there are several runs (``V=0.01, seed=1``); a lone run gets its group's label. Runs that
    would share a label (the same seed, differing only in settings that do not apply to them)
    are labelled by their whole config instead."""
    labels = _run_labels(runs, group_runs(runs))
    if len(set(labels)) < len(labels):
        whole = _run_labels(runs, _groups(runs, applicable=False))
        repeated = {label for label in labels if labels.count(label) > 1}
        labels = [w if label in repeated else label for label, w in zip(labels, whole, strict=True)]
    return labels


def _run_labels(runs: Sequence[RunResult], groups: list[RunGroup]) -> list[str]:
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
