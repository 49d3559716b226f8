"""The federated-algorithm plug-in: the steps of an algorithm, read top to bottom.

An algorithm is a :class:`FederatedAlgorithm` subclass with a ``Settings`` dataclass (its
``strategy.<name>`` table, validated like every other section) and a cost model
(:attr:`FederatedAlgorithm.CostModel`, :mod:`wirelessfl.algorithms.cost`: what its clients
send, the decision knobs a controller may set, its convergence penalty). A built-in one lives
in its family's folder ``wirelessfl/algorithms/<family>/`` (``settings.py`` and ``cost.py``
without torch, an :class:`~wirelessfl.algorithms.spec.AlgorithmSpec` in the family's
``__init__.py``), plus one line in ``wirelessfl.registries.ALGORITHMS``; user code may register
the class itself (``ALGORITHMS.register(name, cls)``). Each round the learner calls, in this
order:

1. :meth:`~FederatedAlgorithm.plan` (server): one :class:`ClientPlan` per client that trains,
   from the cost model (so the plan a controller costed is the plan that trains);
2. :meth:`~FederatedAlgorithm.broadcast` (server -> client): the :class:`Message` the client
   starts from (its size is the client's download);
3. :meth:`~FederatedAlgorithm.train` (client): local training from
   :meth:`~FederatedAlgorithm.client_start` of that download, by the runtime's trainers
   (sequential or batched), leaving :meth:`~FederatedAlgorithm.frozen_names` untrained; the
   loss adds :meth:`~FederatedAlgorithm.orthogonality_weight` (zeta) times eq. (2)'s
   regularizer, 0 (the task loss alone) unless the algorithm says otherwise (SOFT does);
4. :meth:`~FederatedAlgorithm.client_message` (client -> server): shared tensors (uploaded,
   their bits counted by :meth:`Message.bits`), private ones (kept by the client) and the
   LoRA factors among the shared ones (:attr:`Message.lora`), which the run's compression
   stage then sparsifies (:meth:`~FederatedAlgorithm.sent_message`);
5. :meth:`~FederatedAlgorithm.aggregate` (server): the arrived messages -> the new global
   state; shapes may change (truncate, zero-pad, stack, SVD);
6. :meth:`~FederatedAlgorithm.metrics`: what the round measured. Names in
   ``wirelessfl.results.columns.ROUND_COLUMNS`` (``cov_norm``, ``orth_residual``) fill those
   columns; every other name ``m`` in :attr:`~FederatedAlgorithm.METRICS` becomes the
   ``rounds.csv`` column ``algo.m``.

Every step has a default: FedAvg of the LoRA factors at each client's rank (FedIT is the base
class with a settings table). An algorithm overrides what it does differently.
:meth:`~FederatedAlgorithm.client_flops` (a client's training FLOPs, its virtual compute time)
and :meth:`~FederatedAlgorithm.evaluate` (the test metrics of the global state: the runtime's
evaluation; an algorithm whose global state is more than LoRA factors, such as one that merges
updates into the base weights, evaluates it its own way, and a personalised one reads the
clients' private state) too. :meth:`~FederatedAlgorithm.start` builds the model before round 0:
the runtime's peft model by default; an algorithm that trains a model of its own (FLoRAL and
its baselines, :mod:`wirelessfl.algorithms.floral.routed`) builds it there from the runtime's
base network, data and device, and gives its cost model the sizes of what it built.
:attr:`~FederatedAlgorithm.EXPORTABLE` says whether its global state is the runtime's peft
adapter (``wirelessfl export``).

The learner checks what the steps produce, so an algorithm need not: a client's training loss
and trained state (before :meth:`~FederatedAlgorithm.client_message` sees them), its message,
the global state after :meth:`~FederatedAlgorithm.aggregate` and the metrics; a non-finite
value stops the run with one line naming the round and the client
(:mod:`wirelessfl.algorithms.finite`). A metric that was not measured is NaN.

Network-only runs never build the algorithm: they plan and size with its cost model alone.
This module imports without torch (the package does); an algorithm's own module may import
torch at the top.
"""

from __future__ import annotations

import math
from abc import ABC
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from wirelessfl.algorithms.cost import CostModel
from wirelessfl.algorithms.message import LoraTensors, Message
from wirelessfl.errors import ConfigError
from wirelessfl.plans import ClientPlan, RoundPlan

if TYPE_CHECKING:
    from wirelessfl.config.scenario import Scenario
    from wirelessfl.privacy.stage import PrivacyStage
    from wirelessfl.training.local import LocalResult
    from wirelessfl.training.private_state import PrivateState
    from wirelessfl.training.runtime import Runtime
    from wirelessfl.training.stacked_ranks import RankScaling

__all__ = ["ClientPlan", "FederatedAlgorithm", "RoundPlan", "State"]

#: A global (or client) state: parameter name -> tensor, in the runtime model's naming.
State = dict[str, Any]


class FederatedAlgorithm(ABC):
    """Base class of the federated algorithms (see the module docstring for the steps).

    The defaults are FedAvg on the LoRA factors at each client's rank: the dense download of
    the global factors cut to the rank, local training of every trainable tensor but the
    frozen ones, the update of each trained tensor up (its LoRA factors declared for the
    compression stage), and the weighted sum of the updates placed at their rank components.

    Args:
        settings: an instance of the subclass's ``Settings`` dataclass.
        scenario: the whole scenario (N, seed, payload settings, learner settings).
    """

    #: The settings dataclass (the scenario's ``strategy`` table for this algorithm).
    Settings: ClassVar[type]
    #: The cost model the controllers plan with and the network-only learner sizes with
    #: (default: dense LoRA factors at the client's rank and the head; see
    #: :mod:`wirelessfl.algorithms.cost`).
    CostModel: ClassVar[type[CostModel]] = CostModel
    #: Metric name -> one-line doc: the ``algo.<name>`` columns this algorithm fills.
    METRICS: ClassVar[dict[str, str]] = {}
    #: Whether the global state is the runtime's peft adapter (``wirelessfl export`` writes it).
    EXPORTABLE: ClassVar[bool] = True
    #: How a client's LoRA scaling follows its rank k below the model rank r, relative to the
    #: model's scaling at r (:func:`~wirelessfl.training.stacked_ranks.rank_multiplier`, both
    #: trainers): ``"own_rank"`` (default), the client trains its own rank-k LoRA, scaled
    #: ``alpha / k`` (``alpha / sqrt(k)`` with rsLoRA); ``"sketch"`` (FSLoRA), it trains a
    #: sketch of the rank-r LoRA, scaled ``(r / k)`` times the model's scaling (eq. (2) of
    #: arXiv:2501.19389: ``alpha / k`` plain, ``(alpha / sqrt(r)) (r / k)`` with rsLoRA).
    RANK_SCALING: ClassVar[RankScaling] = "own_rank"

    def __init__(self, settings: Any, *, scenario: Scenario) -> None:
        self.settings = settings
        self.scenario = scenario
        self.runtime: Runtime | None = None
        self.cost: CostModel | None = None
        #: the client-level DP stage (``privacy.mode``; None: off), built by :meth:`bind`
        self.privacy: PrivacyStage | None = None

    def bind(self, runtime: Runtime) -> None:
        """Attach the training runtime and build the cost model on its model's sizes (real
        training only; called once before round 0)."""
        self.runtime = runtime
        self.cost = self.CostModel(
            self.settings, scenario=self.scenario, geometry=runtime.geometry()
        )
        if self.scenario.privacy.client_level:
            from wirelessfl.privacy.stage import PrivacyStage

            self.privacy = PrivacyStage(self.scenario, runtime.data_fractions)

    def cost_or_fail(self) -> CostModel:
        """The cost model (built by :meth:`bind`)."""
        if self.cost is None:
            raise RuntimeError(f"{type(self).__name__} needs a training runtime (bind() first)")
        return self.cost

    # ---- 1. plan ---------------------------------------------------------------------------
    def plan(self, round_plan: RoundPlan) -> list[ClientPlan]:
        """One plan per client that trains: the cost model's (the plan the controller costed)."""
        return self.cost_or_fail().plan(round_plan, model_rank=self.runtime_or_fail().rank)

    # ---- setup -----------------------------------------------------------------------------
    def refuse_peft_settings(self) -> None:
        """For an algorithm that builds adapters of its own instead of the runtime's peft
        model: one ``ConfigError`` line for a peft LoRA setting that it would ignore."""
        from wirelessfl.config.scenario import PEFT_SETTINGS

        learner = self.scenario.learner
        for key, default in PEFT_SETTINGS.items():
            if learner.given(key, default) != default:
                raise ConfigError(
                    f"learner.{key}: algorithm {self.scenario.algorithm.name!r} trains adapters "
                    "of its own, not peft's, and ignores it; leave it at its default "
                    f"({default!r})"
                )

    def start(self, *, rank: int, seed: int) -> None:
        """Prepare the model before round 0 (default: the runtime wraps its model with peft
        at ``rank``); an algorithm that trains a model of its own builds it here (and gives
        its cost model the sizes of what it built)."""
        self.runtime_or_fail().start(rank=rank, seed=seed)
        self.cost_or_fail().start(rank=rank)

    # ---- 2. broadcast ----------------------------------------------------------------------
    def initial_state(self) -> State:
        """The global state before round 0 (default: the runtime model's trainable values)."""
        return self.runtime_or_fail().initial_state()

    def broadcast(self, plan: ClientPlan, global_state: State) -> Message:
        """What the server sends ``plan.client``: the global state at the client's rank, dense
        (what the client holds anyway, the frozen tensors, left out)."""
        from wirelessfl.training.rank_padding import truncate_rank

        runtime = self.runtime_or_fail()
        start = global_state
        if plan.rank != runtime.rank:
            start = truncate_rank(global_state, runtime.state.layers, plan.rank)
        frozen = self.frozen_names()
        return Message(shared={n: v for n, v in start.items() if n not in frozen})

    # ---- 3. train --------------------------------------------------------------------------
    def client_start(self, plan: ClientPlan, downloaded: State) -> State:
        """The values the client trains from, given what it downloaded (default: all of it,
        with the frozen tensors from the global start: every client holds them)."""
        frozen = self.frozen_names()
        if not frozen:
            return downloaded
        from wirelessfl.training.rank_padding import truncate_rank

        runtime = self.runtime_or_fail()
        held = runtime.frozen_values(frozen)
        if plan.rank != runtime.rank:
            held = truncate_rank(held, runtime.state.layers, plan.rank, missing_ok=True)
        return {**held, **downloaded}

    def frozen_names(self) -> frozenset[str]:
        """Trainable tensors of the runtime's model that clients do not train (never sent,
        never aggregated; honoured by both trainers). Default: none."""
        return frozenset()

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
        """Local training of every planned client from :meth:`client_start` of what it
        downloaded (the runtime's trainers), with the loss task + :meth:`orthogonality_weight`
        x eq. (2), :meth:`frozen_names` left untrained and a lower-rank client's LoRA scaled as
        :attr:`RANK_SCALING` says."""
        return self.runtime_or_fail().train(
            plans,
            [self.client_start(p, s) for p, s in zip(plans, starts, strict=True)],
            private,
            zeta=self.orthogonality_weight(),
            frozen=self.frozen_names(),
            record_grad_norms=record_grad_norms,
            rank_scaling=self.RANK_SCALING,
        )

    # ---- 4. client message ------------------------------------------------------------------
    def client_message(
        self, plan: ClientPlan, start: Message, result: LocalResult, private: dict[str, Any]
    ) -> Message:
        """What the client sends (shared) and keeps (private) after training; default: the
        update of every tensor it trained (its LoRA factors named in :attr:`Message.lora`).

        Args:
            plan: the client's plan.
            start: what the server sent it (:meth:`broadcast`).
            result: its local training result (``result.local``: trained values).
            private: its private state from earlier rounds (read-only; ``{}`` at first).
        """
        begin = self.client_start(plan, start.shared)
        frozen = self.frozen_names()
        shared = {n: result.local[n] - v for n, v in begin.items() if n not in frozen}
        return Message(shared=shared, lora=self.lora_tensors(plan))

    def lora_tensors(self, plan: ClientPlan) -> list[LoraTensors]:
        """The LoRA factors of ``plan``'s upload per adapted layer (the frozen ones left out),
        in the runtime's layer order; default: the first r_k components of every layer."""
        frozen = self.frozen_names()
        return [
            LoraTensors(
                layer.name, layer.b_param, None if layer.a_param in frozen else layer.a_param
            )
            for layer in self.runtime_or_fail().state.layers
        ]

    def sent_message(
        self, plan: ClientPlan, start: Message, result: LocalResult, private: dict[str, Any]
    ) -> Message:
        """Step 4 as it goes over the air: :meth:`client_message`, then the run's compression
        stage on its LoRA factors (:mod:`wirelessfl.algorithms.compression_stage`) and its
        quantiser stage at the plan's b (:mod:`wirelessfl.algorithms.quantize_stage`), with the
        DP stage's clip and noise before them (local) or its clip after them (central;
        :mod:`wirelessfl.privacy.stage`). A message with a non-finite value is returned as it
        is (the learner stops the round, naming it)."""
        from wirelessfl.algorithms.compression_stage import MEMORY, compress_message
        from wirelessfl.algorithms.finite import non_finite
        from wirelessfl.privacy.stage import NORM

        message = self.client_message(plan, start, result, private)
        if non_finite(message.shared) is not None:
            return message
        runtime, cost = self.runtime_or_fail(), self.cost_or_fail()
        quantizer = cost.quantizer_for(plan)
        t = plan.round_index
        if self.privacy is not None:
            noise = runtime.generator("dp_local", plan.client, t)
            norm = self.privacy.before_compression(message.shared, noise)
        compress_message(
            message,
            stage=cost.compression,
            ratio=plan.ratio,
            model_rank=runtime.rank,
            memory=private.get(MEMORY),
            generator=runtime.generator("sparsify", plan.client, t),
            fixed_ranks=runtime.fixed_layer_ranks(),
            quantizer=quantizer,
            quantize_generator=(
                runtime.generator("quantize", plan.client, t) if quantizer.active else None
            ),
            bits_per_value=self.scenario.payload.bits_per_value if cost.quantizes else None,
        )
        if self.privacy is not None:
            clipped = self.privacy.after_compression(message.shared)
            message.diagnostics[NORM] = norm if math.isnan(clipped) else clipped
            message.side_bits += self.scenario.privacy.upload_side_bits  # adaptive: b_k
        return message

    # ---- 5. aggregate ----------------------------------------------------------------------
    def aggregate(
        self,
        global_state: State,
        messages: dict[int, Message],
        plans: dict[int, ClientPlan],
        round_plan: RoundPlan,
    ) -> State:
        """The new global state from the arrived clients' messages (not empty); default:
        theta <- theta + sum_k w_k Delta_k, every update's LoRA factors placed at their rank
        components of the global factors (zero elsewhere), whatever tensors it carries."""
        ids = list(messages)
        weights = self.client_weights(ids, messages, round_plan)
        return self.add_updates(global_state, messages, weights)

    def add_updates(
        self,
        global_state: State,
        messages: dict[int, Message],
        weights: Sequence[float],
        mixes: Sequence[float] | None = None,
        starts: dict[int, State] | None = None,
    ) -> State:
        """``theta <- theta + sum_k w_k (Delta_k + m_k (theta_start,k - theta))`` in the order
        of ``messages``, every update's LoRA factors placed at their rank components.

        :meth:`aggregate` with its weights and no mixing (m_k = 0). The event-driven modes
        (``server.mode``) call it for algorithms whose ``CostModel.SINGLE_UPDATES``: FedAsync
        mixes a client's model ``theta_start + Delta`` into the global one (m_k = 1, with
        ``starts[k]`` the global state the client downloaded), over the tensors its update
        holds; FedBuff adds staleness-weighted updates (m_k = 0).
        """
        from wirelessfl.algorithms.state_ops import add_weighted, at_global_rank

        ids = list(messages)
        layers = self.runtime_or_fail().state.layers
        updates = [at_global_rank(messages[c], global_state, layers) for c in ids]
        for i, c in enumerate(ids):
            m = 0.0 if mixes is None else float(mixes[i])
            if m != 0.0:
                assert starts is not None, "mixing needs the start states"
                start = starts[c]
                updates[i] = {
                    n: v + m * (start[n] - global_state[n]) for n, v in updates[i].items()
                }
        add_weighted(global_state, updates, weights)
        return global_state

    def client_weights(
        self, ids: Sequence[int], messages: dict[int, Message], round_plan: RoundPlan
    ) -> list[float]:
        """The weights of the arrived clients ``ids`` in :meth:`aggregate` (default:
        :meth:`aggregation_weights`)."""
        return self.aggregation_weights(ids, round_plan)

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
        (``wirelessfl.algorithms.aggregation``; ``weighted_mean`` when the settings name no
        rule)."""
        from wirelessfl.registries import AGGREGATIONS

        runtime = self.runtime_or_fail()
        rule = AGGREGATIONS.load(getattr(self.settings, "aggregation", "weighted_mean"))
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
        """Server-side state besides the global one (tensors, numbers, lists, dicts); default:
        the cost model's bookkeeping."""
        return self.cost.state_dict() if self.cost is not None else {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`."""
        if self.cost is not None:
            self.cost.load_state_dict(state)

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
