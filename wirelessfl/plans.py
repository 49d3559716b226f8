"""What the server decided for a round: the whole round (:class:`RoundPlan`, from the
simulator) and each training client's part of it (:class:`ClientPlan`, from the algorithm)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["ClientPlan", "RoundPlan"]


@dataclass(frozen=True)
class RoundPlan:
    """The controller's decision for the clients that train in round ``round_index``.

    Attributes:
        round_index: t.
        clients: (n,) ids of the clients that train, ascending.
        ranks: (n,) LoRA rank per client; a scalar is broadcast.
        ratios: (n,) sparsification O_k per client; a scalar is broadcast.
        bound: gamma^t, the convergence-bound term the controller expects.
        n_scheduled: K^t, clients scheduled (including those that dropped or are in outage).
    """

    round_index: int
    clients: np.ndarray
    ranks: np.ndarray
    ratios: np.ndarray
    bound: float
    n_scheduled: int

    def __post_init__(self) -> None:
        clients = np.asarray(self.clients, dtype=int).reshape(-1)
        n = clients.size
        object.__setattr__(self, "clients", clients)
        for name, dtype in (("ranks", int), ("ratios", float)):
            value = np.asarray(getattr(self, name), dtype=dtype)
            if value.shape != (n,):
                value = np.broadcast_to(value, (n,))
            object.__setattr__(self, name, value)


@dataclass(frozen=True)
class ClientPlan:
    """What the server decided for one client's round.

    An algorithm with more knobs per client (a sketch size, a router temperature) returns a
    frozen dataclass subclass with extra fields from its ``plan`` step.

    Attributes:
        client: client id.
        round_index: t.
        rank: LoRA rank r_k the client trains and sends.
        ratio: sparsification O_k: the fraction of its update's values the client sends.
    """

    client: int
    round_index: int
    rank: int
    ratio: float
