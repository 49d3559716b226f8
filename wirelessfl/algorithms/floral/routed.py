"""What FLoRAL and its baselines share: a routed model trained whole, private routers,
Algorithm 1's aggregation and personalised evaluation.

"Collaborative and Efficient Personalization with Mixtures of Adaptors" (Almansoori, Horváth,
Takáč, arXiv 2410.03497). These algorithms train a model of their own instead of the runtime's
peft model: the runtime supplies the base network, the data, the partition and the device,
and :meth:`RoutedAlgorithm.start` builds the routed model from the network
(:mod:`wirelessfl.algorithms.floral.mixture_model`). Each round a client

1. starts from the global state it downloads (:meth:`RoutedAlgorithm.sent_names`), its
   private router logits theta^k (zeros the first time; the true cluster's one-hot with
   ``strategy.router: oracle``) and whatever else it keeps (:meth:`client_values`);
2. runs one local epoch (``learner.local_unit: epochs``, ``local_steps: 1``) of plain SGD
   on base, components and router
   (:class:`~wirelessfl.algorithms.floral.mixture_trainer.RoutedTrainer`);
3. uploads its trained shared tensors and, when C > 1, its mixture weights
   pi^k = softmax(theta^k) (C values, counted in the upload: Algorithm 1 line 12 needs them),
   and keeps theta^k (never uploaded; checkpointed, so ``--resume`` restores it).

The server averages the base by N^k and component c by pi_c^k N^k
(:func:`~wirelessfl.algorithms.floral.mixture_aggregation.mixture_average`). The test metrics are
personalised: every client evaluates its own model on its own test split
(:mod:`wirelessfl.algorithms.floral.personal_eval`), so these algorithms need a data set whose test
rows belong to clients (``mnist_rotate``, ``mnist_label_shift``, ``synthetic_linear``,
``synthetic_mlp``, with ``learner.partition: by_client``).
"""

from __future__ import annotations

import math
from abc import abstractmethod
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from wirelessfl.algorithms.base import FederatedAlgorithm, State
from wirelessfl.algorithms.floral.mixture_aggregation import mixture_average
from wirelessfl.algorithms.floral.mixture_trainer import RoutedTrainer
from wirelessfl.algorithms.floral.personal_eval import client_test_rows, personalised_metrics
from wirelessfl.algorithms.floral.routing import aggregation_mismatch, routing_accuracy
from wirelessfl.algorithms.message import Message
from wirelessfl.errors import ConfigError
from wirelessfl.models.rng import seeded, torch_generator
from wirelessfl.plans import ClientPlan, RoundPlan
from wirelessfl.training.local import measure_step_flops
from wirelessfl.training.private_state import ADAPTER_MULTIPLE

if TYPE_CHECKING:
    from wirelessfl.algorithms.floral.mixture_model import RoutedModel
    from wirelessfl.training.local import LocalResult
    from wirelessfl.training.private_state import PrivateState

__all__ = ["ORACLE_LOGIT", "RoutedAlgorithm", "THETA", "WEIGHTS"]

#: Private-state entry of a client's router logits theta^k (C,).
THETA = "theta"
#: Message entry of a client's mixture weights pi^k = softmax(theta^k) (C,).
WEIGHTS = "mixture_weights"
#: Logit of the other components under the oracle router (the authors' value).
ORACLE_LOGIT = -100.0


class RoutedAlgorithm(FederatedAlgorithm):
    """Shared steps of the routed algorithms (module docstring); subclasses build the model
    (:meth:`build_model`) and say what is sent and kept."""

    EXPORTABLE = False  # a routed model of its own, not the runtime's peft adapter

    METRICS = {
        "router_entropy": "mean entropy (nats) of the arrived clients' mixture weights",
        "routing_accuracy": "share of the arrived clients whose top component is their "
        "cluster's, under the best matching of components to clusters",
        "aggregation_mismatch": "mean over components of ||p-hat(.|c) - p(.|c)||_1 over the "
        "arrived clients (§4)",
    }

    #: Number of components C (1 for models without a mixture).
    n_components: int = 1

    # ---- setup -----------------------------------------------------------------------------
    @abstractmethod
    def build_model(self, net: Any) -> RoutedModel:
        """The routed model around the runtime's base network ``net`` (seeded by the caller)."""

    def start(self, *, rank: int, seed: int) -> None:
        """Build the routed model, its trainer and the per-client test rows (no peft)."""
        self.refuse_peft_settings()
        runtime = self.runtime_or_fail()
        lc, name = runtime.settings, self.scenario.algorithm.name
        if lc.optimizer != "sgd":
            raise ConfigError(
                f"learner.optimizer: algorithm {name} trains with plain SGD (Algorithm 1); "
                "set learner.optimizer: sgd"
            )
        self.rows = client_test_rows(runtime.data.test_groups, self.scenario.n_clients)
        if self.rows is None or lc.partition != "by_client":
            raise ConfigError(
                f"learner.dataset: algorithm {name} evaluates every client on its own test "
                "split; use a data set with per-client test rows (mnist_rotate, "
                "mnist_label_shift, synthetic_linear, synthetic_mlp) and learner.partition: "
                "by_client"
            )
        self.clusters = runtime.data.client_clusters
        if self.oracle:
            self._check_oracle(name)
        with seeded(seed):
            self.model = self.build_model(runtime.bundle.model).to(runtime.device)
        self.template = self.model.snapshot()  # what a client holds before its first round
        router_lr = 0.0 if self.oracle or self.n_components == 1 else self.router_lr
        self.trainer = RoutedTrainer(
            self.model,
            runtime.bundle.loss_and_logits,
            lr=lc.lr,
            router_lr=router_lr,
            precondition_eps=self.precondition_eps,
        )
        self.sizes = runtime.partition.sizes.astype(float)
        runtime.rank = rank
        runtime.trainer_name = "routed"
        values = sum(v.numel() for v in self.model.snapshot().values())
        runtime.private_limit = ADAPTER_MULTIPLE * values
        runtime.flops_per_step = measure_step_flops(
            self.model, runtime.bundle.loss_and_logits, runtime.train_data, lc.batch_size
        )
        cost = self.cost_or_fail()  # what the built model federates each way
        cost.set_sent_values(sum(int(self.template[n].numel()) for n in self.sent_names()))
        cost.start(rank=rank)

    @property
    def oracle(self) -> bool:
        return getattr(self.settings, "router", "learned") == "oracle"

    @property
    def router_lr(self) -> float:
        return float(getattr(self.settings, "router_lr", 0.0))

    @property
    def precondition_eps(self) -> float | None:
        return None

    def _check_oracle(self, name: str) -> None:
        if self.clusters is None:
            raise ConfigError(
                f"strategy.router: 'oracle' needs the true clusters, and data set "
                f"{self.scenario.learner.dataset!r} has none; use router: learned"
            )
        n_true = int(np.max(self.clusters)) + 1
        if n_true != self.n_components:
            raise ConfigError(
                f"strategy.router: 'oracle' routes to the {n_true} true clusters, but {name} "
                f"has {self.n_components} components; set them to {n_true}"
            )

    def initial_state(self) -> State:
        return dict(self.template)

    # ---- what is sent and kept ---------------------------------------------------------------
    def sent_names(self) -> list[str]:
        """Names of the global state that travel (down and up): all of it by default."""
        return self.model.federated_names()

    def client_values(self, client: int, global_state: State, private: dict[str, Any]) -> State:
        """The federated values ``client``'s model holds (default: the global state)."""
        return global_state

    def client_theta(self, client: int, private: dict[str, Any]) -> torch.Tensor | None:
        """``client``'s router logits: its private ones, the oracle's, or None (zeros)."""
        if self.oracle:
            theta = torch.full((self.n_components,), ORACLE_LOGIT, device=self.model.theta.device)
            theta[int(self.clusters[client])] = 0.0
            return theta
        return private.get(THETA)

    # ---- 2. broadcast ------------------------------------------------------------------------
    def broadcast(self, plan: ClientPlan, global_state: State) -> Message:
        return Message(shared={n: global_state[n] for n in self.sent_names()})

    # ---- 3. train ----------------------------------------------------------------------------
    def train(
        self,
        plans: list[ClientPlan],
        starts: list[State],
        private: PrivateState,
        *,
        record_grad_norms: bool = False,
    ) -> list[LocalResult]:
        """Local training (``learner.local_unit`` / ``local_steps``: one epoch in the paper) of
        every client from its start, router and kept values; batches and router noise from CPU
        generators addressed by (seed, client, round), so every device draws alike."""
        runtime = self.runtime_or_fail()
        results = []
        for plan, start in zip(plans, starts, strict=True):
            c, t = plan.client, plan.round_index
            kept = private.get(c)
            values = {**self.client_values(c, self.template, kept), **start}
            results.append(
                self.trainer.train(
                    values,
                    self.client_theta(c, kept),
                    runtime.train_data.subset(runtime.partition.indices[c]),
                    steps=runtime.steps_for(c),
                    batch_size=runtime.settings.batch_size,
                    generator=torch_generator(runtime.seed, "batches", c, t),
                    noise_generator=torch_generator(runtime.seed, "router_noise", c, t),
                )
            )
        return results

    # ---- 4. client message -------------------------------------------------------------------
    def client_message(
        self, plan: ClientPlan, start: Message, result: LocalResult, private: dict[str, Any]
    ) -> Message:
        """Trained shared tensors (+ pi^k when C > 1) up; theta^k (+ kept values) private."""
        shared = {n: result.local[n] for n in self.sent_names()}
        theta = getattr(result, "theta", None)
        kept: dict[str, Any] = {}
        if self.n_components > 1:
            shared[WEIGHTS] = torch.softmax(theta, dim=0)
            if not self.oracle:
                kept[THETA] = theta
        kept.update(self.kept_values(result.local))
        return Message(shared=shared, private=kept)

    def kept_values(self, trained: State) -> dict[str, Any]:
        """Trained values the client keeps privately (default: none)."""
        return {}

    # ---- 5. aggregate ------------------------------------------------------------------------
    def aggregate(
        self,
        global_state: State,
        messages: dict[int, Message],
        plans: dict[int, ClientPlan],
        round_plan: RoundPlan,
    ) -> State:
        """Algorithm 1 lines 11-12: the base by N^k, component c by pi_c^k N^k."""
        ids = sorted(messages)
        states = [{k: v for k, v in messages[c].shared.items() if k != WEIGHTS} for c in ids]
        pis = None
        if self.n_components > 1:
            pis = torch.stack([messages[c].shared[WEIGHTS] for c in ids])
        elif self.model.clustered:
            pis = torch.ones(len(ids), 1, device=self.model.theta.device)
        return mixture_average(
            global_state, states, [self.sizes[c] for c in ids], pis, self.model.clustered
        )

    def client_flops(self, plan: ClientPlan) -> float:
        runtime = self.runtime_or_fail()
        return float(runtime.flops_per_step * runtime.steps_for(plan.client))

    # ---- evaluation and metrics ----------------------------------------------------------------
    def evaluate(
        self, global_state: State, private: PrivateState | None = None
    ) -> dict[str, float]:
        """Personalised test metrics: every client, its own model, its own test split."""
        runtime = self.runtime_or_fail()

        def client_model(client: int):
            kept = private.get(client) if private is not None else {}
            values = self.client_values(client, global_state, kept)
            return values, self.client_theta(client, kept)

        return personalised_metrics(
            self.model,
            runtime.bundle.loss_and_logits,
            runtime.test_data,
            self.rows,
            client_model,
            classification=runtime.data.kind != "regression",
            batch_size=runtime.settings.eval_batch_size,
        )

    def metrics(
        self, global_state: State, messages: dict[int, Message], round_plan: RoundPlan
    ) -> dict[str, float]:
        """Router entropy, routing accuracy and aggregation mismatch of the arrived clients."""
        out = {"router_entropy": math.nan, "routing_accuracy": math.nan}
        out["aggregation_mismatch"] = math.nan
        if self.n_components == 1 or not messages:
            return out
        ids = sorted(messages)
        pis = np.stack([messages[c].shared[WEIGHTS].detach().cpu().double().numpy() for c in ids])
        out["router_entropy"] = float(np.mean(-(pis * np.log(np.clip(pis, 1e-300, 1))).sum(1)))
        if self.clusters is not None:
            clusters = np.asarray(self.clusters)[ids]
            out["aggregation_mismatch"] = aggregation_mismatch(pis, clusters, self.sizes[ids])
            out["routing_accuracy"] = routing_accuracy(pis, clusters)
        return out
