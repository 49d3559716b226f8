"""Moving what a round's training takes and returns between devices (and so between processes).

A remote executor (``learner.executor: ray``) sends start states, private entries and the
algorithm's training state to its workers and gets :class:`~wirelessfl.training.local.LocalResult`
objects back. They travel on the CPU and are moved to the receiving process's device with
:func:`to_device`, which walks tensors, mappings, lists, tuples and dataclasses, keeping
objects that were shared still shared (the batched trainer recognises one start state given to
every client by identity).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import torch

__all__ = ["to_device"]


def to_device(value: Any, device: torch.device | str) -> Any:
    """``value`` with every tensor inside moved to ``device``: mappings rebuilt as dicts, lists,
    tuples and dataclass instances with their own types, a container met twice rebuilt once;
    other leaves are kept as they are."""
    return _move(value, torch.device(device), {})


def _move(value: Any, device: torch.device, seen: dict[int, Any]) -> Any:
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if id(value) in seen:
        return seen[id(value)]
    if isinstance(value, Mapping):
        moved: Any = {k: _move(v, device, seen) for k, v in value.items()}
    elif isinstance(value, list | tuple):
        moved = type(value)(_move(v, device, seen) for v in value)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {
            f.name: _move(getattr(value, f.name), device, seen) for f in dataclasses.fields(value)
        }
        moved = dataclasses.replace(value, **changes)
    else:
        return value
    seen[id(value)] = moved
    return moved
