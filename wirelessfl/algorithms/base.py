"""The federated-algorithm plug-in: the steps of an algorithm, read top to bottom.

An algorithm is a :class:`FederatedAlgorithm` subclass with a ``Settings`` dataclass (the
scenario's ``strategy`` section when ``algorithm.name`` names it, validated like every other
section). A built-in one lives in its family's folder ``wirelessfl/algorithms/<family>/``
(``settings.py`` for the settings, an :class:`~wirelessfl.algorithms.spec.AlgorithmSpec` in the
family's ``__init__.py``), plus one line in ``wirelessfl.registries.ALGORITHMS``; user code may
register the class itself (``ALGORITHMS.register(name, cls)``). Each round the learner calls,
in this order:

1. :meth:`~FederatedAlgorithm.plan` (server): one :class:`ClientPlan` per client that trains,
   from the controller's per-client rank and ratio (and anything algorithm-specific);
2. :meth:`~FederatedAlgorithm.broadcast` (server -> client): the :class:`Message` the client
   starts from (its size is the client's download);
3. :meth:`~FederatedAlgorithm.train` (client): local training from that start, by the
   runtime's trainers (sequential or batched) unless the algorithm trains differently; the
   loss adds :meth:`~FederatedAlgorithm.orthogonality_weight` (zeta) times eq. (2)'s
   regularizer, 0 (the task loss alone) unless the algorithm says otherwise (SOFT does);
4. :meth:`~FederatedAlgorithm.client_message` (client -> server): shared tensors (uploaded,
   their bits counted by :meth:`Message.bits`) and private ones (kept by the client);
5. :meth:`~FederatedAlgorithm.aggregate` (server): the arrived messages -> the new global
   state; shapes may change (truncate, zero-pad, stack, SVD);
6. :meth:`~FederatedAlgorithm.metrics`: what the round measured. Names in
   ``wirelessfl.results.columns.ROUND_COLUMNS`` (``cov_norm``, ``orth_residual``) fill those
   columns; every other name ``m`` in :attr:`~FederatedAlgorithm.METRICS` becomes the
   ``rounds.csv`` column ``algo.m``.

Two more hooks have defaults that fit most algorithms: :meth:`~FederatedAlgorithm.client_flops`
(a client's training FLOPs, its virtual compute time: the runtime's step at the client's rank)
and :meth:`~FederatedAlgorithm.evaluate` (the test metrics of the global state: the runtime's
evaluation; an algorithm whose global state is more than LoRA factors, such as one that merges
updates into the base weights, evaluates it its own way, and a personalised one reads the
clients' private state). :meth:`~FederatedAlgorithm.start` builds the model before round 0:
the runtime's peft model by default; an algorithm that trains a model of its own (FLoRAL and
its baselines, :mod:`wirelessfl.algorithms.floral.routed`) builds it there from the runtime's
base network, data and device.

The learner checks what the steps produce, so an algorithm need not: a client's training loss
and trained state (before :meth:`~FederatedAlgorithm.client_message` sees them), its message,
the global state after :meth:`~FederatedAlgorithm.aggregate` and the metrics; a non-finite
value stops the run with one line naming the round and the client
(:mod:`wirelessfl.algorithms.finite`). A metric that was not measured is NaN.

The network-only learner runs steps 1 and 4 on sizes only (:meth:`sized_message`), so an
algorithm with a payload model can be studied without training.

The scenario schema reads ``Settings`` on a base install, where network-only runs have no
torch: a spec's settings module and this module import without torch, and so must an
algorithm module that is registered as its class or that the network-only learner builds (one
with :meth:`~FederatedAlgorithm.sized_message`): such a module imports torch and the
torch-side helpers (``wirelessfl.compress``, ``wirelessfl.training``,
``wirelessfl.algorithms.state_ops``) inside the methods that use them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from wirelessfl.algorithms.message import IndexSpace, Message
from wirelessfl.errors import ConfigError
from wirelessfl.plans import ClientPlan, RoundPlan

if TYPE_CHECKING:
    from wirelessfl.config.scenario import Scenario
    from wirelessfl.training.local import LocalResult
    from wirelessfl.training.private_state import PrivateState
    from wirelessfl.training.runtime import Runtime

__all__ = ["ClientPlan", "FederatedAlgorithm", "RoundPlan", "State"]

#: A global (or client) state: parameter name -> tensor, in the runtime model's naming.
State = dict[str, Any]


class FederatedAlgorithm(ABC):
    """Base class of the federated algorithms (see the module docstring for the steps).

    Args:
        settings: an instance of the subclass's ``Settings`` dataclass.
        scenario: the whole scenario (N, seed, payload settings, learner settings).
    """

    #: The settings dataclass (the scenario's ``strategy`` section for this algorithm).
    Settings: ClassVar[type]
    #: Metric name -> one-line doc: the ``algo.<name>`` columns this algorithm fills.
    METRICS: ClassVar[dict[str, str]] = {}

    def __init__(self, settings: Any, *, scenario: Scenario) -> None:
        self.settings = settings
        self.scenario = scenario
        self.runtime: Runtime | None = None

    def bind(self, runtime: Runtime) -> None:
        """Attach the training runtime (real training only; called once before round 0)."""
        self.runtime = runtime

    # ---- 1. plan ---------------------------------------------------------------------------
    def plan(self, round_plan: RoundPlan) -> list[ClientPlan]:
        """One plan per client that trains (default: the controller's rank and ratio)."""
        t, rp = round_plan.round_index, round_plan
        columns = (rp.clients.tolist(), rp.ranks.tolist(), rp.ratios.tolist())
        return [ClientPlan(c, t, r, o) for c, r, o in zip(*columns, strict=True)]

    # ---- network-only ----------------------------------------------------------------------
    def sized_message(self, plan: ClientPlan, layer_shapes: Sequence[tuple[int, int]]) -> Message:
        """The upload of ``plan`` as sizes only (for the network-only learner).

        Optional: an algorithm without a payload model runs with real training only, and
        ``learner.kind = surrogate`` refuses it when the run is built
        (:meth:`require_payload_model`).
        """
        raise ConfigError(self._missing_payload_model())

    def require_payload_model(self) -> None:
        """Raise a one-line ``ConfigError`` unless the algorithm defines :meth:`sized_message`."""
        if type(self).sized_message is FederatedAlgorithm.sized_message:
            raise ConfigError(self._missing_payload_model())

    def _missing_payload_model(self) -> str:
        return (
            f"learner.kind: 'surrogate' needs a network-only payload model, and algorithm "
            f"{type(self).__name__} has none (no sized_message); use learner.kind = lora"
        )

    def sized_broadcast(self, plan: ClientPlan, layer_shapes: Sequence[tuple[int, int]]) -> Message:
        """The download of ``plan`` as sizes only: the dense rank-r_k LoRA, r_k(d + l) per layer.

        Must depend on ``plan.rank`` only (the network-only learner caches it per rank).
        """
        n = plan.rank * sum(d + ell for d, ell in layer_shapes)
        return Message(sparse=[IndexSpace((), n, n)])

    # ---- setup -----------------------------------------------------------------------------
    def refuse_peft_settings(self) -> None:
        """For an algorithm that builds adapters of its own instead of the runtime's peft
        model: one ``ConfigError`` line for a peft LoRA setting that it would ignore."""
        from wirelessfl.config.scenario import PEFT_SETTINGS

        learner = self.scenario.learner
        for key, default in PEFT_SETTINGS.items():
            if getattr(learner, key) != default:
                raise ConfigError(
                    f"learner.{key}: algorithm {self.scenario.algorithm.name!r} trains adapters "
                    "of its own, not peft's, and ignores it; leave it at its default "
                    f"({default!r})"
                )

    def start(self, *, rank: int, seed: int) -> None:
        """Prepare the model before round 0 (default: the runtime wraps its model with peft
        at ``rank``); an algorithm that trains a model of its own builds it here."""
        self.runtime_or_fail().start(rank=rank, seed=seed)

    # ---- 2. broadcast ----------------------------------------------------------------------
    def initial_state(self) -> State:
        """The global state before round 0 (default: the runtime model's trainable values)."""
        return self.runtime_or_fail().initial_state()

    def broadcast(self, plan: ClientPlan, global_state: State) -> Message:
        """What the server sends ``plan.client``: the global state at the client's rank, dense."""
        from wirelessfl.training.rank_padding import truncate_rank

        runtime = self.runtime_or_fail()
        start = global_state
        if plan.rank != runtime.rank:
            start = truncate_rank(global_state, runtime.state.layers, plan.rank)
        return Message(shared=dict(start))

    # ---- 3. train --------------------------------------------------------------------------
    def orthogonality_weight(self) -> float:
        """zeta: the weight of eq. (2)'s orthogonality regularizer in the local loss.

        Default 0: the task loss alone. An algorithm that trains with the regularizer (SOFT:
        ``strategy.zeta``) returns its weight; :meth:`train` passes it to the runtime.
        """
        return 0.0

    def train(
        self,
        plans: Sequence[ClientPlan],
        starts: Sequence[State],
        private: PrivateState,
        *,
        record_grad_norms: bool = False,
    ) -> list[LocalResult]:
        """Local training of every planned client from its start state (the runtime's), with
        the loss task + :meth:`orthogonality_weight` x eq. (2)."""
        return self.runtime_or_fail().train(
            plans,
            starts,
            private,
            zeta=self.orthogonality_weight(),
            record_grad_norms=record_grad_norms,
        )

    # ---- 4. client message ------------------------------------------------------------------
    @abstractmethod
    def client_message(
        self, plan: ClientPlan, start: Message, result: LocalResult, private: dict[str, Any]
    ) -> Message:
        """What the client sends (shared) and keeps (private) after training.

        Args:
            plan: the client's plan.
            start: what the server sent it (:meth:`broadcast`).
            result: its local training result (``result.local``: trained values).
            private: its private state from earlier rounds (read-only; ``{}`` at first).
        """

    # ---- 5. aggregate ----------------------------------------------------------------------
    @abstractmethod
    def aggregate(
        self,
        global_state: State,
        messages: dict[int, Message],
        plans: dict[int, ClientPlan],
        round_plan: RoundPlan,
    ) -> State:
        """The new global state from the arrived clients' messages (not empty)."""

    def client_flops(self, plan: ClientPlan) -> float:
        """FLOPs of ``plan.client``'s round: its local steps at its rank (virtual compute)."""
        runtime = self.runtime_or_fail()
        return float(runtime.flops_per_step_at(plan.rank) * runtime.steps_for(plan.client))

    def expected_flops(self) -> float:
        """FLOPs the server expects a median client's round to take (compute-aware shares;
        default: the runtime's measured step times a median client's steps)."""
        return self.runtime_or_fail().expected_flops()

    def evaluate(
        self, global_state: State, private: PrivateState | None = None
    ) -> dict[str, float]:
        """Test ``accuracy`` and ``test_loss`` of ``global_state`` (the runtime's evaluation);
        ``private`` (the clients' private state) is there for personalised evaluation."""
        return self.runtime_or_fail().evaluate(global_state)

    def aggregation_weights(self, ids: Sequence[int], round_plan: RoundPlan) -> list[float]:
        """``strategy.aggregation``'s weights of the arrived clients ``ids`` from their p_k
        (``wirelessfl.algorithms.aggregation``); the algorithm's settings must name the rule."""
        from wirelessfl.registries import AGGREGATIONS

        runtime = self.runtime_or_fail()
        rule = AGGREGATIONS.load(self.settings.aggregation)
        p = [float(runtime.data_fractions[c]) for c in ids]
        return rule(p, self.scenario.n_clients, round_plan.n_scheduled)

    # ---- 6. metrics ------------------------------------------------------------------------
    def metrics(
        self, global_state: State, messages: dict[int, Message], round_plan: RoundPlan
    ) -> dict[str, float]:
        """What the round measured, after aggregation (``messages`` may be empty)."""
        return {}

    # ---- persistence -----------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """Server-side state besides the global one (tensors, numbers, lists, dicts)."""
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:  # noqa: B027 - optional hook
        """Restore :meth:`state_dict` (nothing to restore by default)."""

    def training_state(self) -> dict[str, Any]:
        """Server-side state that :meth:`train` reads besides its arguments (default:
        :meth:`state_dict`); a remote executor (``learner.executor: ray``) sends it to its
        workers before every round's training, so they train as this process would."""
        return self.state_dict()

    def load_training_state(self, state: dict[str, Any]) -> None:
        """Restore :meth:`training_state` in a worker (default: :meth:`load_state_dict`)."""
        self.load_state_dict(state)

    def runtime_or_fail(self) -> Runtime:
        """The bound runtime (an error if the algorithm is used without one)."""
        if self.runtime is None:
            raise RuntimeError(f"{type(self).__name__} needs a training runtime (bind() first)")
        return self.runtime
