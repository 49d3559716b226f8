"""What H2Tune and its baselines share: clients with different base models and tasks.

"H2Tune: Federated Foundation Model Fine-Tuning with Hybrid Heterogeneity" (Guo, Lu, Tong, Hu,
Zhuang, Zhang, Fan, Dong, arXiv 2507.22633). ``strategy.groups`` assigns every client a base
model, a task and a resource rank r_k (consecutive client ids, group by group); with no groups
every client gets the learner's model and data set at the controller's rank. These algorithms
train models of their own: :meth:`HeteroAlgorithm.start` builds one model object per distinct
base model (:mod:`wirelessfl.algorithms.h2tune.hetero_clients`), installs the triple-factor
adapters on its LoRA targets (:mod:`wirelessfl.algorithms.h2tune.trilora`; the baselines use
them as plain LoRA of rank r_k) and keeps every client's adapters and private task head in its
private state. Each round a client

1. loads its private values (fresh ones the first time) and what it downloads
   (:meth:`HeteroAlgorithm.client_values`) into its group's shared model;
2. trains them for ``learner.local_steps`` steps or epochs (``learner.optimizer``,
   ``learner.lr``, ``learner.batch_size``) by :meth:`HeteroAlgorithm.train_client`;
3. uploads what the algorithm shares and keeps everything it trained.

A client's compute is its own model's measured training step (FLOPs counted by torch on that
model) times its steps and :attr:`HeteroAlgorithm.passes_per_step`, so large-model clients take
longer in the simulator. The test metrics are personalised: every client evaluates its own
model on its group's test split; ``accuracy`` and ``test_loss`` are means over the clients.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from channels.streams import stream_seed
from wirelessfl.algorithms.base import FederatedAlgorithm, State
from wirelessfl.algorithms.h2tune.hetero_clients import (
    HeteroClients,
    head_initial_values,
    model_key,
)
from wirelessfl.algorithms.h2tune.hetero_trainer import train_lora
from wirelessfl.algorithms.h2tune.settings import ClientGroup
from wirelessfl.algorithms.h2tune.trilora import (
    TriLoRAAdapters,
    initial_values,
    install_trilora,
    transformer_layer_index,
)
from wirelessfl.algorithms.message import Message
from wirelessfl.errors import ConfigError
from wirelessfl.models.rng import seeded, torch_generator
from wirelessfl.plans import ClientPlan, RoundPlan
from wirelessfl.training.local import LocalResult, measure_step_flops
from wirelessfl.training.private_state import ADAPTER_MULTIPLE

if TYPE_CHECKING:
    from wirelessfl.algorithms.h2tune.hetero_clients import ClientGroupRuntime
    from wirelessfl.training.private_state import PrivateState

__all__ = ["HeteroAlgorithm"]


class HeteroAlgorithm(FederatedAlgorithm):
    """Shared steps of the heterogeneous-model algorithms (module docstring)."""

    EXPORTABLE = False  # one model per base model, adapters of its own

    #: Forward-backward passes per local step (H2Tune's alternating steps: 2).
    passes_per_step: int = 1
    #: Whether the R path of the adapters is on (H2Tune) or they act as plain LoRA.
    use_shared: bool = False

    # ---- setup -----------------------------------------------------------------------------
    def adapter_width(self, ranks: list[int]) -> int:
        """The width of the adapters on one base model, from the ranks of the groups that use
        it (default: the largest, so every client of that model fits)."""
        return max(ranks)

    def check_width(self, group: ClientGroupRuntime, width: int, limit: int) -> None:
        """One line if ``group``'s rank does not fit its model (``limit``: the smallest
        adapted dimension)."""
        if width > limit:
            raise ConfigError(
                f"strategy.groups[{group.index}].rank: rank {group.rank} is larger than "
                f"{limit}, the smallest adapted dimension of {group.bundle.name!r}"
            )

    def global_layers(self, layer_counts: list[int]) -> int:
        """L_g, the global layer slots (default: the deepest model's L_k)."""
        return max(layer_counts)

    def resolved_groups(self, rank: int) -> list[Any]:
        """``strategy.groups``, or one group of every client from the learner section."""
        groups = list(getattr(self.settings, "groups", []) or [])
        if groups:
            return groups
        lc = self.scenario.learner
        return [
            ClientGroup(
                clients=self.scenario.n_clients,
                model=lc.model,
                dataset=lc.dataset,
                dataset_options=dict(lc.dataset_options),
                partition=lc.partition,
                rank=rank,
            )
        ]

    def start(self, *, rank: int, seed: int) -> None:
        """Build the groups, install the adapters on each shared model, measure its step."""
        self.refuse_peft_settings()
        runtime = self.runtime_or_fail()
        lc = runtime.settings
        groups = self.resolved_groups(rank)
        reuse = {}
        if lc.target_modules is None:
            reuse[model_key(lc.model, dict(lc.model_options))] = runtime.bundle
        self.clients: HeteroClients = HeteroClients(
            groups,
            n_clients=self.scenario.n_clients,
            seed=seed,
            device=runtime.device,
            reuse=reuse,
        )
        self.widths = {
            key: self.adapter_width([g.rank for g in self.clients.groups if g.model_key == key])
            for key in self.clients.models
        }
        layer_counts = {}
        for key, bundle in self.clients.models.items():
            names = bundle.target_names()
            blocks = {transformer_layer_index(n) for n in names}
            if None in blocks:
                raise ConfigError(
                    f"strategy.groups: model {bundle.name!r} has LoRA targets outside "
                    "transformer blocks; the adapters need one block index per target"
                )
            layer_counts[key] = len(blocks)
        self.n_global = self.global_layers(list(layer_counts.values()))
        for g in self.clients.groups:
            self.check_width(
                g, self.widths[g.model_key], min(min(s) for s in g.bundle.layer_shapes())
            )
        self.adapters: dict[str, TriLoRAAdapters] = {}
        for key, bundle in self.clients.models.items():
            adapters = install_trilora(
                bundle.model,
                bundle.target_names(),
                self.widths[key],
                n_global_layers=self.n_global,
                scale=self.adapter_scale(),
            ).to(runtime.device)
            adapters.use_shared = self.use_shared
            self.adapters[key] = adapters
        self.seed = seed
        self.generators = torch_generator
        self.step_flops = {}
        for key in self.clients.models:
            group = next(g for g in self.clients.groups if g.model_key == key)
            first = group.clients[0]
            self.load_client(first, self.initial_values(first))
            params = self.trainable(first)
            for p in params:
                p.requires_grad_(True)
            self.step_flops[key] = measure_step_flops(
                group.bundle.model, group.bundle.loss_and_logits, group.train, lc.batch_size
            )
            for p in params:
                p.requires_grad_(False)
                p.grad = None  # the adapters are not the model's parameters
        sizes = self.clients.sizes
        runtime.rank = rank
        runtime.trainer_name = "hetero"
        runtime.data_fractions = sizes / sizes.sum()
        largest = max(
            sum(v.numel() for v in self.initial_values(g.clients[0]).values())
            for g in self.clients.groups
        )
        runtime.private_limit = ADAPTER_MULTIPLE * largest
        cost = self.cost_or_fail()  # what each client federates on the model it has
        cost.set_client_values(
            {c: self.federated_values(c) for c in range(self.scenario.n_clients)}
        )
        cost.start(rank=rank)

    def federated_values(self, client: int) -> int:
        """Values ``client`` sends (and receives) each round (default: none, LOCAL)."""
        return 0

    def adapter_scale(self) -> float:
        """The scale of the adapters' output (LoRA's alpha / r; H2Tune does not say: 1)."""
        return 1.0

    # ---- a client's values in its group's model -----------------------------------------------
    def group(self, client: int) -> ClientGroupRuntime:
        return self.clients.group_of[client]

    def initial_values(self, client: int) -> State:
        """A client's values before its first round: adapters (A Kaiming-uniform, B, R zero,
        Omega the depth-block alignment) and a fresh head, from per-client generators."""
        g = self.group(client)
        adapters = self.adapters[g.model_key]
        values = initial_values(adapters, self.generators(self.seed, "adapters", client))
        heads = g.heads
        head = head_initial_values(
            heads.in_features,
            g.n_classes,
            heads.bias,
            self.generators(self.seed, "head", client),
        )
        device = adapters.R.device
        return {k: v.to(device) for k, v in {**values, **head}.items()}

    def client_width(self, client: int) -> int:
        """The columns of A and rows of B ``client`` uses (default: its resource rank r_k, so
        the baselines train plain LoRA of rank r_k)."""
        return int(self.group(client).rank)

    def phi(self, client: int) -> torch.Tensor:
        """Client ``client``'s fixed sparsity mask Phi_k (all ones but for H2Tune)."""
        adapters = self.adapters[self.group(client).model_key]
        return torch.ones_like(adapters.phi)

    def load_client(self, client: int, values: State) -> None:
        """Put ``client``'s values (adapters and head) into its group's shared model."""
        g = self.group(client)
        adapters = self.adapters[g.model_key]
        adapters.set_client(self.phi(client), self.client_width(client))
        adapters.load_values({k: v for k, v in values.items() if not k.startswith("head.")})
        head = g.heads.use(g.n_classes)
        with torch.no_grad():
            head.weight.copy_(values["head.weight"])
            if head.bias is not None:
                head.bias.copy_(values["head.bias"])

    def read_client(self, client: int) -> State:
        """The values in ``client``'s group model (detached copies)."""
        g = self.group(client)
        head = g.heads.use(g.n_classes)
        out = dict(self.adapters[g.model_key].values())
        out["head.weight"] = head.weight.detach().clone()
        if head.bias is not None:
            out["head.bias"] = head.bias.detach().clone()
        return out

    def trainable(self, client: int) -> list[torch.Tensor]:
        """The tensors a client trains (default: its A, B and head)."""
        g = self.group(client)
        head = g.heads.use(g.n_classes)
        adapters = self.adapters[g.model_key]
        return [*adapters.specific_parameters(), *head.parameters()]

    def kept(self, client: int, private: dict[str, Any]) -> State:
        """What ``client`` holds between rounds: its private values, else fresh ones."""
        return dict(private) if private else self.initial_values(client)

    def client_values(self, client: int, global_state: State, kept: State) -> State:
        """The values ``client``'s model holds at the start of a round, from what it kept and
        the global state (default: what it kept; the federated algorithms overwrite the
        shared part)."""
        return kept

    # ---- steps ------------------------------------------------------------------------------
    def initial_state(self) -> State:
        return {}

    def broadcast(self, plan: ClientPlan, global_state: State) -> Message:
        return Message(shared={})

    def steps_for(self, client: int) -> int:
        """Local steps of ``client``: ``local_steps`` steps or epochs of its rows."""
        lc = self.runtime_or_fail().settings
        if lc.local_unit == "steps":
            return lc.local_steps
        n = len(self.group(client).indices[client])
        return lc.local_steps * math.ceil(n / lc.batch_size)

    def train(
        self,
        plans: list[ClientPlan],
        starts: list[State],
        private: PrivateState,
        *,
        record_grad_norms: bool = False,
    ) -> list[LocalResult]:
        """Every planned client: load its values, train them in its group model, read them."""
        results = []
        for plan, start in zip(plans, starts, strict=True):
            c, t = plan.client, plan.round_index
            global_view = dict(start)
            values = self.client_values(c, global_view, self.kept(c, private.get(c)))
            self.load_client(c, values)
            with seeded(self._dropout_seed(c, t)):
                loss = self.train_client(c, t, global_view)
            results.append(LocalResult(local=self.read_client(c), mean_loss=loss))
        return results

    def _dropout_seed(self, client: int, round_index: int) -> int:
        return stream_seed(self.seed, "dropout", client, round_index)

    def train_client(self, client: int, round_index: int, downloaded: State) -> float:
        """Train ``client``'s loaded values; returns the mean task loss (default: plain LoRA
        of rank r_k and the head on the task loss)."""
        runtime = self.runtime_or_fail()
        lc = runtime.settings
        g = self.group(client)
        return train_lora(
            g.bundle.model,
            g.bundle.loss_and_logits,
            self.trainable(client),
            g.client_data(client),
            steps=self.steps_for(client),
            batch_size=lc.batch_size,
            generator=self.generators(self.seed, "batches", client, round_index),
            optimizer=lc.optimizer,
            lr=lc.lr,
        )

    def client_message(
        self, plan: ClientPlan, start: Message, result: LocalResult, private: dict[str, Any]
    ) -> Message:
        """Default: nothing up (no federation), everything trained kept."""
        return Message(shared={}, private=dict(result.local))

    def aggregate(
        self,
        global_state: State,
        messages: dict[int, Message],
        plans: dict[int, ClientPlan],
        round_plan: RoundPlan,
    ) -> State:
        return global_state

    def client_flops(self, plan: ClientPlan) -> float:
        """The client's own model's measured step x its steps x passes per step."""
        key = self.group(plan.client).model_key
        steps = self.steps_for(plan.client)
        return float(self.step_flops[key] * steps * self.passes_per_step)

    def expected_flops(self) -> float:
        """The median over all clients of their round's FLOPs."""
        n = self.scenario.n_clients
        return float(np.median([self.client_flops(ClientPlan(c, 0, 1, 1.0)) for c in range(n)]))

    # ---- evaluation ----------------------------------------------------------------------------
    def evaluate(
        self, global_state: State, private: PrivateState | None = None
    ) -> dict[str, float]:
        """Personalised: every client's model on its group's test split; ``accuracy`` and
        ``test_loss`` are the means over the clients (each client counts once)."""
        runtime = self.runtime_or_fail()
        size = runtime.settings.eval_batch_size
        accuracies, losses = [], []
        with torch.no_grad():
            for c in range(self.scenario.n_clients):
                kept = self.kept(c, private.get(c) if private is not None else {})
                self.load_client(c, self.client_values(c, global_state, kept))
                g = self.group(c)
                model = g.bundle.model
                model.eval()
                correct, loss_sum, n = 0, 0.0, len(g.test)
                for first in range(0, n, size):
                    batch = g.test.batch(torch.arange(first, min(n, first + size)))
                    loss, logits = g.bundle.loss_and_logits(model, batch)
                    correct += int((logits.argmax(-1) == batch["y"].to(logits.device)).sum())
                    loss_sum += float(loss) * len(batch["y"])
                model.train()
                accuracies.append(correct / n)
                losses.append(loss_sum / n)
        return {"accuracy": float(np.mean(accuracies)), "test_loss": float(np.mean(losses))}
