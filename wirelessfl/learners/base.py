"""The learning side of the co-simulation, behind one small interface.

The simulator owns virtual time; a :class:`Learner` owns the model. Per round the simulator calls
:meth:`Learner.local_round` once with every client that will train (wall time only; the virtual
compute and upload times come from the returned FLOPs and payload sizes), then
:meth:`Learner.aggregate` with the clients whose uploads arrived, and :meth:`Learner.evaluate`
every ``eval_every`` rounds. Per-client private state (error memories, optimizer moments,
personal parameters) lives inside the learner, keyed by client id; strategies that send other
things than (B, A) report their payload through the same :class:`ClientUpload`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class ModelGeometry:
    """Sizes the network side needs: adapted layer shapes and compute per local round."""

    layer_shapes: tuple[tuple[int, int], ...]  # (d, l) per adapted layer
    base_params: int  # frozen parameters
    batch_size: int
    seq_len: int  # tokens per sample (1 for non-sequence models)
    fixed_values: int = 0  # values sent dense every round whatever O and r (e.g. a task head)

    @property
    def params_per_rank(self) -> int:
        """Sum over adapted layers of (d + l): payload values per unit of rank."""
        return int(sum(d + ell for d, ell in self.layer_shapes))


@dataclass(frozen=True)
class RoundPlan:
    """What the server decided for a round, as the learner sees it."""

    round_index: int
    clients: np.ndarray  # (n,) ids of the clients that train this round
    rank: int
    sparsification: float  # O^t
    bound: float  # gamma^t (the surrogate uses it)
    n_scheduled: int  # K^t (including clients that dropped or are in outage)


@dataclass(frozen=True)
class ClientUpload:
    """One client's result of local training: what it sends and what it cost."""

    n_values: int  # nonzero values sent
    n_total: int  # values of the dense update
    index_bits: int  # index overhead of the sparse payload (min of bitmask, coordinates)
    flops: float  # FLOPs of the local round (for the virtual compute time)
    train_loss: float


class Learner(ABC):
    """Produces the model updates of a run (surrogate or real training)."""

    @abstractmethod
    def geometry(self) -> ModelGeometry:
        """Model sizes, known before the rank is chosen (the offline stage needs them)."""

    @abstractmethod
    def start(self, *, rank: int, n_clients: int, seed: int) -> None:
        """Set up the global model with the chosen rank (called once, before round 0)."""

    @abstractmethod
    def local_round(self, plan: RoundPlan) -> dict[int, ClientUpload]:
        """Train ``plan.clients`` from the current global model; keyed by client id."""

    @abstractmethod
    def aggregate(self, round_index: int, arrived: np.ndarray) -> dict[str, float]:
        """Fold the arrived clients' updates into the global model; returns metrics
        (``loss`` at least; ``cov_norm``, ``orth_residual`` where measured)."""

    @abstractmethod
    def evaluate(self, round_index: int) -> dict[str, float]:
        """Held-out metrics of the global model: ``accuracy`` and ``test_loss``."""

    @abstractmethod
    def save_state(self, folder: Path) -> None:
        """Write everything needed to continue identically (atomically) into ``folder``."""

    @abstractmethod
    def load_state(self, folder: Path) -> None:
        """Restore what :meth:`save_state` wrote."""

    def expected_flops(self, rank: int) -> float:
        """FLOPs the server expects one client's local round to take (compute-aware shares)."""
        return 0.0

    def describe(self) -> dict[str, object]:
        """Facts for ``meta.json`` (model, data, device)."""
        return {"learner": type(self).__name__}
