"""H2Tune: triple-matrix adaptors, relation-guided layer alignment and alternating
disentanglement, for clients with different base models and tasks.

"H2Tune: Federated Foundation Model Fine-Tuning with Hybrid Heterogeneity" (Guo, Lu, Tong, Hu,
Zhuang, Zhang, Fan, Dong, arXiv 2507.22633), §4 and Algorithm 1. On every adapted layer of
client k (eq. (3), row-vector convention)

    Delta W_k^l = A_k^l (I + Phi_k^l o R_k^l) B_k^l,

with A (d_in x r_g) and B (r_g x d_out) private, R_k^l (r_g x r_g) the task-shared part (one
per transformer block, shared by the block's adapted modules) and Phi_k a fixed 0/1 mask with
ceil(beta_k r_g^2) ones, beta_k = r_k / r_g (the client's resource rank over the global rank).
Client k's stack R_k (L_k x r_g x r_g) maps to L_g global slots through its private relation
matrix Omega_k (L_k x L_g): R_k Omega_k (eq. (4)) goes up, R_g Omega_k^T (eq. (5)) comes back.
Each round every client runs Algorithm 1's alternating steps on every minibatch
(:func:`~wirelessfl.algorithms.h2tune.hetero_trainer.train_h2tune`: R, Omega on eq. (6), then
A, B and the head on eq. (7)), uploads (Phi_k o R_k) Omega_k (L_g r_g^2 values: the uplink)
and keeps A, B, R_k, Omega_k and its head. The server's R_g is the unweighted mean of the arrived
clients' aligned stacks (§4.3, Algorithm 1) and is broadcast (L_g r_g^2 values). R_k is kept
between rounds and pulled towards R_g Omega_k^T by the KL term (Algorithm 2: R_t^0 =
R_{t-1}^tau); ``strategy.local_start: global`` starts it from Phi_k o R_g Omega_k^T instead.
Every reading of an ambiguous point is in ``docs/algorithms/h2tune.md``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import torch

from wirelessfl.algorithms.base import State
from wirelessfl.algorithms.h2tune.cost import H2TuneCost
from wirelessfl.algorithms.h2tune.hetero import HeteroAlgorithm
from wirelessfl.algorithms.h2tune.hetero_trainer import DisentangleWeights, train_h2tune
from wirelessfl.algorithms.h2tune.layer_alignment import to_global, to_local
from wirelessfl.algorithms.h2tune.settings import H2TuneSettings
from wirelessfl.algorithms.h2tune.trilora import sparsity_mask
from wirelessfl.algorithms.message import Message
from wirelessfl.errors import ConfigError
from wirelessfl.plans import ClientPlan, RoundPlan

if TYPE_CHECKING:
    from wirelessfl.training.local import LocalResult

__all__ = ["GLOBAL", "UPLOAD", "H2Tune"]

#: Global-state entry: R_g, (L_g, r_g, r_g).
GLOBAL = "R_global"
#: Message entry: a client's aligned stack (Phi_k o R_k) Omega_k, (L_g, r_g, r_g).
UPLOAD = "R_aligned"


class H2Tune(HeteroAlgorithm):
    """H2Tune (module docstring)."""

    Settings = H2TuneSettings
    CostModel = H2TuneCost
    METRICS = {
        "r_global_norm": "Frobenius norm of the server's R_g after aggregation",
        "alignment_drift": "mean over the arrived clients of ||Omega_k Omega_k^T - I||_F",
    }
    passes_per_step = 2
    use_shared = True

    def adapter_width(self, ranks: list[int]) -> int:
        return int(self.settings.global_rank)

    def check_width(self, group: Any, width: int, limit: int) -> None:
        """r_k <= r_g <= the smallest adapted dimension of every model (§4.2)."""
        if group.rank > width:
            raise ConfigError(
                f"strategy.groups[{group.index}].rank: rank {group.rank} is larger than "
                f"strategy.global_rank ({width}); beta_k = r_k / r_g must be at most 1"
            )
        if width > limit:
            raise ConfigError(
                f"strategy.global_rank: {width} is larger than {limit}, the smallest adapted "
                f"dimension of {group.bundle.name!r} (groups[{group.index}])"
            )

    def global_layers(self, layer_counts: list[int]) -> int:
        return int(self.settings.global_layers or max(layer_counts))

    def client_width(self, client: int) -> int:
        """r_g: every client's A and B are r_g wide (§4.2); r_k acts through Phi_k's density
        beta_k alone (eq. (3))."""
        return int(self.settings.global_rank)

    def federated_values(self, client: int) -> int:
        """L_g r_g^2: the aligned stack up, R_g down."""
        return int(self.n_global * self.settings.global_rank**2)

    def phi(self, client: int) -> torch.Tensor:
        """Phi_k: ceil(beta_k r_g^2) ones per block, beta_k = ``density`` or r_k / r_g, fixed
        for the run."""
        g = self.group(client)
        adapters = self.adapters[g.model_key]
        beta = self.settings.density or g.rank / self.settings.global_rank
        mask = sparsity_mask(
            adapters.n_layers,
            self.settings.global_rank,
            beta,
            self.generators(self.seed, "phi", client),
        )
        return mask.to(adapters.R.device)

    def trainable(self, client: int) -> list[torch.Tensor]:
        adapters = self.adapters[self.group(client).model_key]
        return [*super().trainable(client), *adapters.shared_parameters()]

    # ---- steps ------------------------------------------------------------------------------
    def initial_state(self) -> State:
        """R_g = 0 (every client's R_k starts at 0)."""
        device = next(iter(self.adapters.values())).R.device
        return {
            GLOBAL: torch.zeros(
                self.n_global, self.settings.global_rank, self.settings.global_rank, device=device
            )
        }

    def broadcast(self, plan: ClientPlan, global_state: State) -> Message:
        """R_g: L_g r_g^2 values down."""
        return Message(shared={GLOBAL: global_state[GLOBAL]})

    def client_values(self, client: int, global_state: State, kept: State) -> State:
        """What the client kept; with ``local_start: global`` its R_k <- Phi_k o R_g Omega_k^T."""
        if self.settings.local_start == "carry" or GLOBAL not in global_state:
            return kept
        out = dict(kept)
        out["R"] = self.phi(client) * to_local(global_state[GLOBAL], kept["omega"])
        return out

    def train_client(self, client: int, round_index: int, downloaded: State) -> float:
        runtime = self.runtime_or_fail()
        lc, s = runtime.settings, self.settings
        g = self.group(client)
        head = g.heads.use(g.n_classes)
        return train_h2tune(
            g.bundle.model,
            g.bundle.loss_and_logits,
            self.adapters[g.model_key],
            list(head.parameters()),
            g.client_data(client),
            downloaded[GLOBAL],
            DisentangleWeights(s.shared_kl, s.specific_kl, s.kl_cap, s.l2),
            steps=self.steps_for(client),
            batch_size=lc.batch_size,
            generator=self.generators(self.seed, "batches", client, round_index),
            optimizer=lc.optimizer,
            lr=lc.lr,
            shared_lr=s.shared_lr,
        )

    def client_message(
        self, plan: ClientPlan, start: Message, result: LocalResult, private: dict[str, Any]
    ) -> Message:
        """(Phi_k o R_k) Omega_k up (eq. (4)); A, B, R_k, Omega_k and the head kept."""
        local = result.local
        aligned = to_global(self.phi(plan.client) * local["R"], local["omega"])
        return Message(shared={UPLOAD: aligned}, private=dict(local))

    def aggregate(
        self,
        global_state: State,
        messages: dict[int, Message],
        plans: dict[int, ClientPlan],
        round_plan: RoundPlan,
    ) -> State:
        """R_g = (1/|arrived|) sum_k R_k Omega_k (§4.3, Algorithm 1: unweighted)."""
        stacks = [messages[c].shared[UPLOAD] for c in sorted(messages)]
        return {GLOBAL: torch.stack(stacks).mean(dim=0)}

    def metrics(
        self, global_state: State, messages: dict[int, Message], round_plan: RoundPlan
    ) -> dict[str, float]:
        out = {"r_global_norm": float(torch.linalg.norm(global_state[GLOBAL]))}
        drifts = []
        for c in sorted(messages):
            omega = messages[c].private["omega"]
            eye = torch.eye(omega.shape[0], device=omega.device, dtype=omega.dtype)
            drifts.append(float(torch.linalg.norm(omega @ omega.T - eye)))
        out["alignment_drift"] = sum(drifts) / len(drifts) if drifts else math.nan
        return out
