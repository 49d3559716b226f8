"""What one side sends the other in a round: named tensors, tagged shared or private.

A :class:`Message` holds

- ``shared``: name -> tensor, what goes over the air (uploaded by a client, or broadcast by the
  server) and what the server aggregates;
- ``private``: name -> value, what the client keeps for its next round (error memory, optimizer
  moments, a router, a personal head): never uploaded, never averaged, checkpointed;
- ``sparse``: the index spaces of the sparse shared tensors, each with the number of values
  actually sent out of the entries it spans (:class:`IndexSpace`); a shared tensor in no index
  space is sent dense;
- ``diagnostics``: what the simulation measures but nobody sends (e.g. a client's local
  factors, for the covariance term of eq. 12).

:meth:`Message.bits` is the one place where payload bits are counted: ``v`` bits per value
sent, plus, when asked, the index bits of every sparse space (the smaller of a bitmask and a
coordinate list, ``channels.index_overhead_bits``). A message may also be *size-only* (no
tensors, only :class:`IndexSpace` counts): the network-only learner sends those.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from channels.payload import index_overhead_bits, payload_bits

__all__ = ["IndexSpace", "Message"]


@dataclass(frozen=True)
class IndexSpace:
    """Values sent out of one index space.

    Attributes:
        names: the shared tensors the space spans (empty for a size-only message).
        n_sent: values transmitted (kept positions, zeros included).
        n_total: entries of the space; ``n_sent == n_total`` is a dense space (no index).
    """

    names: tuple[str, ...]
    n_sent: int
    n_total: int

    def __post_init__(self) -> None:
        if not 0 <= self.n_sent <= self.n_total:
            raise ValueError(f"need 0 <= n_sent <= n_total, got {self.n_sent}, {self.n_total}")

    @property
    def index_bits(self) -> int:
        """min(bitmask, coordinate list) [bit]; 0 when dense or empty."""
        if self.n_total == 0:
            return 0
        return int(index_overhead_bits(self.n_sent, self.n_total))


@dataclass
class Message:
    """Named tensors of one transmission (see the module docstring)."""

    shared: dict[str, Any] = field(default_factory=dict)
    private: dict[str, Any] = field(default_factory=dict)
    sparse: list[IndexSpace] = field(default_factory=list)
    diagnostics: dict[str, Any] = field(default_factory=dict)

    def add_sparse(self, tensors: dict[str, Any], *, n_sent: int, n_total: int) -> None:
        """Share ``tensors`` as one index space with ``n_sent`` of ``n_total`` values sent."""
        self.shared.update(tensors)
        self.sparse.append(IndexSpace(tuple(tensors), int(n_sent), int(n_total)))

    def _dense_names(self) -> Iterable[str]:
        covered = {name for space in self.sparse for name in space.names}
        return (name for name in self.shared if name not in covered)

    @property
    def n_values(self) -> int:
        """Values sent: the sparse spaces' kept counts plus every dense shared tensor."""
        dense = sum(int(self.shared[name].numel()) for name in self._dense_names())
        return dense + sum(space.n_sent for space in self.sparse)

    @property
    def n_total(self) -> int:
        """Values of the dense equivalent of what is shared."""
        dense = sum(int(self.shared[name].numel()) for name in self._dense_names())
        return dense + sum(space.n_total for space in self.sparse)

    @property
    def index_bits(self) -> int:
        """Index overhead of the sparse spaces [bit]."""
        return sum(space.index_bits for space in self.sparse)

    def bits(self, *, bits_per_value: float, count_index: bool) -> float:
        """Payload [bit]: v per value sent, plus the index bits if ``count_index``."""
        values = float(payload_bits(self.n_values, bits_per_value))
        return values + (self.index_bits if count_index else 0)
