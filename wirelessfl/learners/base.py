"""The learning side of the co-simulation, behind one small interface.

The simulator owns virtual time; a :class:`Learner` owns the model. Per round the simulator
calls :meth:`Learner.local_round` once with the round's :class:`~wirelessfl.plans.RoundPlan`
(wall time only; the virtual compute, download and upload times come from the returned
:class:`ClientReport`), then :meth:`Learner.aggregate` with the clients whose uploads arrived,
and :meth:`Learner.evaluate` every ``eval_every`` rounds (and, with ``eval_initial``, once
before round 0). Both learners run the scenario's federated algorithm
(``wirelessfl.algorithms``): the real one trains through it, the network-only one asks it for
sizes.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np

from wirelessfl.algorithms.cost import CostModel
from wirelessfl.errors import SimulationError
from wirelessfl.plans import AirRound, ClientPlan, ModelGeometry, RoundPlan, WeightedUpdate

__all__ = [
    "AirRound",
    "ClientPlan",
    "ClientReport",
    "Learner",
    "ModelGeometry",
    "RoundPlan",
    "WeightedUpdate",
]


@dataclass(frozen=True)
class ClientReport:
    """One client's round as the network sees it: what it moved and what it cost.

    Attributes:
        rank: LoRA rank r_k it trained.
        ratio: sparsification O_k it sent with.
        bits_up: uplink payload [bit] (values, plus index bits when the scenario counts them).
        bits_down: what the server sent it [bit].
        n_values: values sent up.
        n_total: values of the dense update.
        index_bits: index overhead of the sparse upload [bit] (reported even if not sent).
        flops: FLOPs of its local training (virtual compute time).
    """

    rank: int
    ratio: float
    bits_up: float
    bits_down: float
    n_values: int
    n_total: int
    index_bits: int
    flops: float


class Learner(ABC):
    """Produces the model updates of a run (network-only surrogate or real training)."""

    #: The ``channel.uplink`` values whose aggregate this learner forms. FDMA's exact weighted
    #: sum is every learner's; a learner that lists ``aircomp`` applies the over-the-air sum
    #: (:meth:`receive_over_the_air`). Any other uplink is refused in one line at load.
    UPLINKS: ClassVar[tuple[str, ...]] = ("fdma",)

    @abstractmethod
    def geometry(self) -> ModelGeometry:
        """Model sizes, known before the rank is chosen (the offline stage needs them)."""

    @abstractmethod
    def cost_model(self) -> CostModel:
        """The algorithm's cost model the controller plans with (known before :meth:`start`:
        the offline stage needs it)."""

    @abstractmethod
    def start(self, *, rank: int, n_clients: int, seed: int) -> None:
        """Set up the global state; ``rank`` is the largest rank any client will get."""

    @abstractmethod
    def local_round(self, plan: RoundPlan) -> dict[int, ClientReport]:
        """Train ``plan.clients`` from the current global state; keyed by client id."""

    @abstractmethod
    def aggregate(self, round_index: int, arrived: np.ndarray) -> dict[str, float]:
        """Fold the arrived clients' messages into the global state; returns metrics
        (``loss`` at least; ``cov_norm``, ``orth_residual`` and the algorithm's own)."""

    @abstractmethod
    def evaluate(self, round_index: int) -> dict[str, float]:
        """Held-out metrics of the global state: ``accuracy`` and ``test_loss``.

        ``round_index`` is the round just aggregated, or -1 for the initial state, before round
        0 (``eval_initial``): no client has trained yet, and private state is empty."""

    @abstractmethod
    def save_state(self, folder: Path) -> None:
        """Write everything needed to continue identically (atomically) into ``folder``; in an
        event-driven run, also the updates dispatched and not yet added (:meth:`dispatch`)."""

    @abstractmethod
    def load_state(self, folder: Path) -> None:
        """Restore what :meth:`save_state` wrote."""

    # ---- the event-driven modes (server.mode: async, buffered, semi_sync) ---------------------
    def event_driven_refusal(self) -> str | None:
        """Why this learner cannot run the event-driven modes (one line), or None if it can:
        a learner that can overrides this, :meth:`dispatch` and :meth:`add_updates` (the
        engine asks this first and refuses the run in one line)."""
        return f"the learner {type(self).__name__} has no event-driven rounds"

    def dispatch(self, plan: RoundPlan, *, keep_start: bool) -> dict[int, ClientReport]:
        """Train ``plan.clients`` from the current global state, keeping their updates pending
        next to those of earlier dispatches until :meth:`add_updates` takes them (with
        ``keep_start``, also the global state each downloaded, for FedAsync's mixing)."""
        raise SimulationError(f"dispatch: {self.event_driven_refusal()}")

    def add_updates(self, index: int, updates: Sequence[WeightedUpdate]) -> dict[str, float]:
        """Aggregation ``index`` of an event-driven mode: add the pending updates of
        ``updates`` with their weights (``wirelessfl.servers``); returns the metrics, as
        :meth:`aggregate` does."""
        raise SimulationError(f"add_updates: {self.event_driven_refusal()}")

    def discard_updates(self, clients: Sequence[int]) -> None:
        """Forget the pending updates of ``clients``, lost after they trained (unavailable or
        cut by ``faults.deadline_s`` in the event-driven modes, docs/simulator.md); a learner
        that keeps nothing per pending update needs no override."""
        return None

    def receive_over_the_air(self, air: AirRound) -> None:
        """The channel of the next :meth:`aggregate` (``channel.uplink: aircomp``), called only
        on a learner whose :attr:`UPLINKS` lists it: the real learner sums the updates as the
        server receives them, noise included; the network-only one adds the noise's term to
        its bound. A learner that cannot is refused at load, so this is never ignored."""
        raise SimulationError(
            f"{type(self).__name__} has no over-the-air sum (UPLINKS: {', '.join(self.UPLINKS)})"
        )

    # ---- client-edge-cloud hierarchies (cells, server.hierarchy) -----------------------------
    def hierarchy_refusal(self) -> str | None:
        """Why a cloud cannot average this learner's edge models (one line), or None if it
        can: a learner that can overrides this, :meth:`model_state`, :meth:`load_model_state`
        and :meth:`average_model_states` (the network asks this first and refuses the run)."""
        return f"the learner {type(self).__name__} has no model a cloud can average"

    def model_state(self) -> object:
        """The global model the edge server holds (what the cloud averages)."""
        raise SimulationError(f"model_state: {self.hierarchy_refusal()}")

    def load_model_state(self, state: object) -> None:
        """Replace the global model by ``state`` (the cloud's average)."""
        raise SimulationError(f"load_model_state: {self.hierarchy_refusal()}")

    def average_model_states(self, states: Sequence[object], weights: np.ndarray) -> object:
        """Σ_c w_c state_c / Σ_c w_c of the edge servers' ``states`` with (C,) ``weights``."""
        raise SimulationError(f"average_model_states: {self.hierarchy_refusal()}")

    def hand_over(self, client: int, to: Learner) -> None:
        """``client`` moves to the edge server whose learner is ``to``: what this learner keeps
        of it goes along (nothing by default)."""
        return None

    def data_weight(self, clients: np.ndarray) -> float:
        """The data the ``clients`` hold (the cloud's weight of their edge; by default one
        unit per client)."""
        return float(len(clients))

    def metric_names(self) -> dict[str, str]:
        """Name -> doc of the metrics :meth:`aggregate` returns beyond the standard ones."""
        return {}

    def stop_reason(self) -> str | None:
        """Why the run must stop before its next round (one line; ``privacy.target_epsilon``
        reached), or None: it goes on."""
        return None

    def expected_flops(self, rank: int) -> float:
        """FLOPs the server expects one client's local round to take (compute-aware shares)."""
        return 0.0

    def describe(self) -> dict[str, object]:
        """Facts for ``meta.json`` (model, data, device)."""
        return {"learner": type(self).__name__}
