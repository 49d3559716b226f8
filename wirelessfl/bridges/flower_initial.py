"""The initial global parameters of ``learner.kind: flower`` from ``learner.initial_parameters``.

Flower's server supplies them (``FedAvg.start(initial_arrays=...)``, or a strategy's
``initial_parameters``); a client need not implement ``get_parameters``. The setting is either:

- ``'module:attribute'``: a ``flwr.app.ArrayRecord`` (its keys kept, e.g. a torch
  ``state_dict``'s names), a list of numpy arrays, or a function of no arguments returning one
  of them;
- a path ending in ``.npz`` (relative to the working folder): its arrays in file order, named by
  their keys (``np.savez(path, *arrays)`` gives ``arr_0``, ``arr_1``...: named ``0``, ``1``...).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from wirelessfl.bridges.targets import import_target
from wirelessfl.errors import ConfigError

__all__ = ["KEY", "NamedArrays", "from_setting", "named"]

KEY = "learner.initial_parameters"
#: A model as Flower's ``ArrayRecord`` holds it: names and arrays, in order.
NamedArrays = tuple[list[str], list[np.ndarray]]


def named(arrays: list[np.ndarray]) -> NamedArrays:
    """Unnamed arrays named as ``ArrayRecord(list_of_arrays)`` names them: ``0``, ``1``..."""
    return [str(i) for i in range(len(arrays))], list(arrays)


def from_setting(setting: str) -> NamedArrays:
    """The arrays ``learner.initial_parameters`` names; one-line errors, never empty."""
    found = _from_npz(Path(setting)) if setting.endswith(".npz") else _from_attribute(setting)
    if not found[1]:
        raise ConfigError(f"{KEY}: {setting!r} holds no arrays")
    return found


def _from_npz(path: Path) -> NamedArrays:
    if not path.is_file():
        raise ConfigError(f"{KEY}: no file {str(path)!r}")
    try:
        with np.load(path, allow_pickle=False) as saved:
            keys = list(saved.files)
            arrays = [saved[k] for k in keys]
    except (OSError, ValueError) as err:
        problem = str(err).splitlines()[0] if str(err) else type(err).__name__
    else:
        problem = None
    if problem is not None:
        raise ConfigError(f"{KEY}: cannot read {str(path)!r} as .npz ({problem})")
    unnamed = [f"arr_{i}" for i in range(len(keys))]
    return (named(arrays)[0] if keys == unnamed else keys), arrays


def _from_attribute(target: str) -> NamedArrays:
    obj = import_target(target, KEY, accepted="'module:attribute' or a .npz file")
    if callable(obj) and not _is_array_record(obj):
        obj = obj()
    return _as_named(obj, target)


def _is_array_record(obj: Any) -> bool:
    from flwr.app import ArrayRecord

    return isinstance(obj, ArrayRecord)


def _as_named(obj: Any, target: str) -> NamedArrays:
    if _is_array_record(obj):
        return list(obj.keys()), [array.numpy() for array in obj.values()]
    if isinstance(obj, (list, tuple)) and all(isinstance(a, np.ndarray) for a in obj):
        return named(list(obj))
    raise ConfigError(
        f"{KEY}: {target!r} is a {type(obj).__name__}; expected a list of numpy arrays or a "
        "flwr.app.ArrayRecord (or a function of no arguments returning one)"
    )
