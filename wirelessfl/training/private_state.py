"""Per-client private state: what a client keeps between its rounds, and nothing else.

One mechanism for every kind of private state (error-feedback memory, optimizer moments, and
per-client parameters such as routers or personal heads): entries are named, staged during a
round and committed only when every client of the round succeeded, never uploaded, never
averaged, saved with the run's checkpoint and restored by ``--resume``. A client that never
trained holds nothing, so memory grows with the clients that trained, not with N.

Size rule: a client's private values may not exceed ``limit_values`` (the runtime sets it to
:data:`ADAPTER_MULTIPLE` times the trainable adapter's values: an error memory and two Adam
moments fit, a copy of the base model does not).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from wirelessfl.errors import SimulationError

__all__ = ["ADAPTER_MULTIPLE", "PrivateState", "count_values"]

#: A client's private state may hold at most this many adapters' worth of values.
ADAPTER_MULTIPLE = 4


def count_values(value: Any) -> int:
    """Tensor elements inside ``value`` (tensors, dicts, lists, tuples; other leaves count 0)."""
    if isinstance(value, torch.Tensor):
        return int(value.numel())
    if isinstance(value, Mapping):
        return sum(count_values(v) for v in value.values())
    if isinstance(value, list | tuple):
        return sum(count_values(v) for v in value)
    return 0


def _to(value: Any, device: torch.device | str) -> Any:
    """``value`` with every tensor moved to ``device`` (containers rebuilt, types kept)."""
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, Mapping):
        return {k: _to(v, device) for k, v in value.items()}
    if isinstance(value, tuple):
        return tuple(_to(v, device) for v in value)
    if isinstance(value, list):
        return [_to(v, device) for v in value]
    return value


class PrivateState:
    """Client id -> named private entries (see the module docstring).

    Args:
        limit_values: most tensor elements one client may keep (``None``: no limit).
    """

    def __init__(self, *, limit_values: int | None = None) -> None:
        self.limit_values = limit_values
        self._committed: dict[int, dict[str, Any]] = {}
        self._staged: dict[int, dict[str, Any]] = {}

    def get(self, client: int) -> dict[str, Any]:
        """The committed entries of ``client`` (a copy of the mapping; ``{}`` if none)."""
        return dict(self._committed.get(int(client), {}))

    def stage(self, client: int, entries: Mapping[str, Any]) -> None:
        """Set ``entries`` of ``client`` at the next :meth:`commit` (``None`` removes one)."""
        self._staged.setdefault(int(client), {}).update(entries)

    def commit(self) -> None:
        """Apply every staged entry (after the whole round succeeded); checks the size rule."""
        staged, self._staged = self._staged, {}
        for client, entries in staged.items():
            merged = {**self._committed.get(client, {}), **entries}
            merged = {k: v for k, v in merged.items() if v is not None}
            n = count_values(merged)
            if self.limit_values is not None and n > self.limit_values:
                raise SimulationError(
                    f"client {client}: private state {sorted(merged)} holds {n} values, more "
                    f"than {self.limit_values} ({ADAPTER_MULTIPLE} adapters' worth)"
                )
            if merged:
                self._committed[client] = merged
            else:
                self._committed.pop(client, None)

    def take(self, client: int) -> dict[str, Any]:
        """Remove and return the committed entries of ``client`` (``{}`` if none): a client
        that moves to another edge server takes them along (:meth:`put` there)."""
        return self._committed.pop(int(client), {})

    def put(self, client: int, entries: Mapping[str, Any]) -> None:
        """Commit ``entries`` of ``client`` as they are (what :meth:`take` returned)."""
        if entries:
            self._committed[int(client)] = dict(entries)

    def discard(self) -> None:
        """Drop what was staged (a round that failed)."""
        self._staged = {}

    def staged(self) -> dict[int, dict[str, Any]]:
        """What was staged since the last commit or discard: client -> entries (a copy)."""
        return {c: dict(entries) for c, entries in self._staged.items()}

    def clients(self) -> list[int]:
        """Ids of the clients that hold private state, ascending."""
        return sorted(self._committed)

    def n_values(self, client: int) -> int:
        """Tensor elements ``client`` keeps."""
        return count_values(self._committed.get(int(client), {}))

    # ---- persistence -----------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """The committed state on the CPU, keyed by client id as a string (for ``torch.save``)."""
        return {str(c): _to(entries, "cpu") for c, entries in self._committed.items()}

    def load_state_dict(self, payload: Mapping[str, Any], device: torch.device | str) -> None:
        """Restore what :meth:`state_dict` returned, tensors moved to ``device``."""
        self._committed = {int(c): _to(dict(e), device) for c, e in payload.items()}
        self._staged = {}
