"""The SOFT family: SOFT, TLoRA, RLoRA, SLoRA and ILoRA, with error feedback.

"Sparsified Orthogonal Fine-Tuning ... Two-Stage Federated Adaptation" (SOFT/TSFA), sections
III-B/C and V: a client trains the global LoRA factors (eq. 2 regularizer, added by the
runtime's loss), then sends the sparsified update ``S(m + Delta)`` of every adapted layer and
keeps ``m' = m + Delta - S(m + Delta)`` (eqs. 4-7). The members differ only in the
sparsifier (``strategy.sparsifier``, a ``wirelessfl.compress`` registry name):

============  ========  ==========================================================
sparsifier    member    rule
============  ========  ==========================================================
``soft``      SOFT      per-component budget ~ ||B[:,i]||^2 ||A[i,:]||^2 (eq. 3)
``topk``      TLoRA     global top-k by magnitude
``random``    RLoRA     k entries uniformly at random
``structured`` SLoRA    lowest rank indices first
``none``      ILoRA     the dense update (its ratio is 1 whatever O^t)
============  ========  ==========================================================

Each layer keeps ``round(O r (d + l))`` values; the task head (full parameters) is sent dense.
The server adds the weighted sum of the arrived updates to the global state
(``strategy.aggregation``, ``wirelessfl.algorithms.aggregation``), then measures the
covariance term of eq. (12) over the arrived clients' local factors and the orthogonality
residual of the global factors (Fig. 2).

The orthogonality regularizer of eq. (2) is part of SOFT: ``strategy.zeta`` left null resolves,
when the scenario is loaded, to :data:`~wirelessfl.algorithms.soft.settings.SOFT_ZETA` for
``soft`` and to 0 for the baselines (TLoRA, RLoRA, SLoRA and ILoRA train on the task loss
alone), and ``config.yaml`` records the number; a number given explicitly applies to whichever
sparsifier is chosen. The runtime reads it through :meth:`SoftFamily.orthogonality_weight`.

SOFT's importance weights (eq. 3) are computed, by default (``strategy.importance: update``),
from the matrices being sparsified, ``u = m + Delta``; ``factors`` computes them from the
client's local factors ``(theta_B, theta_A)`` after training instead (see
:mod:`wirelessfl.compress.soft` for the two readings). The other sparsifiers ignore the setting.

This module imports without torch: the network-only learner builds :class:`SoftFamily` for its
payload model (:meth:`SoftFamily.sized_message`) on installs without torch, so torch and the
torch-side helpers are imported inside the methods that use them.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from channels.payload import kept_values
from wirelessfl.algorithms.base import FederatedAlgorithm, State
from wirelessfl.algorithms.message import IndexSpace, Message
from wirelessfl.algorithms.soft.settings import DENSE, SoftSettings, paper_zeta
from wirelessfl.plans import ClientPlan, RoundPlan

if TYPE_CHECKING:
    from wirelessfl.training.local import LocalResult

__all__ = ["SoftFamily"]


class SoftFamily(FederatedAlgorithm):
    """SOFT and its section-V baselines as one algorithm (see the module docstring)."""

    Settings = SoftSettings
    METRICS = {
        "cov_norm": "||Cov(theta_B, theta_A)||_F over the arrived clients (eq. 12)",
        "orth_residual": "normalised orthogonality residual of the global LoRA (Fig. 2)",
        "sent_fraction": "values sent / dense values of the arrived LoRA updates (achieved O)",
        "memory_norm": "mean ||m||_F of the arrived clients' error memories after the round",
    }

    # ---- 1. plan ---------------------------------------------------------------------------
    def plan(self, round_plan: RoundPlan) -> list[ClientPlan]:
        """The controller's rank and O^t per client; ILoRA's ratio is 1."""
        plans = super().plan(round_plan)
        if self.settings.sparsifier == DENSE:
            plans = [replace(p, ratio=1.0) for p in plans]
        return plans

    # ---- 3. train: the loss the runtime minimises ----------------------------------------------
    def orthogonality_weight(self) -> float:
        """zeta of eq. (2): ``strategy.zeta`` (resolved by sparsifier when left null)."""
        zeta = getattr(self.settings, "zeta", None)
        return paper_zeta(self.settings.sparsifier) if zeta is None else float(zeta)

    # ---- network-only payload model ----------------------------------------------------------
    def sized_message(self, plan: ClientPlan, layer_shapes: Sequence[tuple[int, int]]) -> Message:
        """round(O_k r_k (d + l)) values per layer, each layer one index space."""
        layers_of_size = Counter(plan.rank * (d + ell) for d, ell in layer_shapes)
        return Message(
            sparse=[
                IndexSpace((), kept_values(plan.ratio, n), n, copies)
                for n, copies in layers_of_size.items()
            ]
        )

    # ---- 4. the client's message ---------------------------------------------------------------
    def client_message(
        self, plan: ClientPlan, start: Message, result: LocalResult, private: dict[str, Any]
    ) -> Message:
        """S(m + Delta) per layer (eqs. 4-7), the dense head update, the new memory."""
        from wirelessfl.compress import compress_update

        runtime = self.runtime_or_fail()
        state, begin = runtime.state, start.shared
        factors = {  # the local factors in the paper's orientation (theta_B, theta_A)
            layer.name: state.paper_factors(result.local, layer) for layer in state.layers
        }
        delta = {  # Delta = local - global
            layer.name: tuple(
                local - glob
                for local, glob in zip(
                    factors[layer.name], state.paper_factors(begin, layer), strict=True
                )
            )
            for layer in state.layers
        }
        sent = compress_update(  # Algorithm 1, lines 8-9; eqs. (4)-(5) for the memory
            delta,
            private.get("memory"),
            sparsifier=self.settings.sparsifier,
            ratio=plan.ratio,
            generator=runtime.generator("sparsify", plan.client, plan.round_index),
            error_feedback=self.settings.error_feedback,
            # eq. (3)'s weights: from u = m + Delta (None) or from the local factors
            importance_from=factors if self.settings.importance == "factors" else None,
        )
        message = Message()
        for layer in state.layers:
            counts = sent.counts[layer.name]
            message.add_sparse(
                state.from_paper(layer, *sent.sent[layer.name]),
                n_sent=counts.kept,
                n_total=counts.total,
            )
        for name in state.full_names:  # the task head, trained and sent in full
            message.shared[name] = result.local[name] - begin[name]
        message.private["memory"] = sent.memory  # None (error feedback off) drops it
        message.diagnostics["factors"] = [factors[layer.name] for layer in state.layers]
        message.diagnostics["sent_fraction"] = sent.ratio
        return message

    # ---- 5. aggregation -----------------------------------------------------------------------
    def aggregate(
        self,
        global_state: State,
        messages: dict[int, Message],
        plans: dict[int, ClientPlan],
        round_plan: RoundPlan,
    ) -> State:
        """theta <- theta + sum_k w_k Delta_k over the arrived clients (docs/training.md)."""
        from wirelessfl.algorithms.state_ops import add_zero_padded

        ids = list(messages)
        updates = [messages[c].shared for c in ids]
        layers = self.runtime_or_fail().state.layers
        add_zero_padded(global_state, updates, layers, self.aggregation_weights(ids, round_plan))
        return global_state

    # ---- 6. metrics ----------------------------------------------------------------------------
    def metrics(
        self, global_state: State, messages: dict[int, Message], round_plan: RoundPlan
    ) -> dict[str, float]:
        """Cov term (eq. 12), orthogonality residual, sent fraction and memory norm."""
        from wirelessfl.algorithms.soft.lora_metrics import (
            covariance_norm_over,
            memory_norm,
            orthogonality_of,
        )

        runtime = self.runtime_or_fail()
        ids = list(messages)
        p = [float(runtime.data_fractions[c]) for c in ids]
        return {
            "cov_norm": covariance_norm_over([messages[c].diagnostics["factors"] for c in ids], p),
            "orth_residual": orthogonality_of(global_state, runtime.state),
            "sent_fraction": (
                sum(messages[c].diagnostics["sent_fraction"] for c in ids) / len(ids)
                if ids
                else math.nan
            ),
            "memory_norm": memory_norm([messages[c].private.get("memory") for c in ids]),
        }
