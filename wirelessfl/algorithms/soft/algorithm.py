"""The SOFT family: SOFT, TLoRA, RLoRA, SLoRA and ILoRA, with error feedback.

"Sparsified Orthogonal Fine-Tuning ... Two-Stage Federated Adaptation" (SOFT/TSFA), sections
III-B/C and V: a client trains the global LoRA factors (eq. 2 regularizer, added by the
runtime's loss), then sends the sparsified update ``S(m + Delta)`` of every adapted layer and
keeps ``m' = m + Delta - S(m + Delta)`` (eqs. 4-7). The members differ only in the compression
stage (``compression.sparsifier``, a ``wirelessfl.compress`` registry name), which the learner
applies to the update this algorithm names (:mod:`wirelessfl.algorithms.compression_stage`):

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
(``strategy.soft.aggregation``, the base class's aggregate), then measures the covariance term
of eq. (12) over the arrived clients' local factors and the orthogonality residual of the
global factors (Fig. 2).

The orthogonality regularizer of eq. (2) is part of SOFT: ``strategy.soft.zeta`` left null
resolves, when the scenario is loaded, to
:data:`~wirelessfl.algorithms.soft.settings.SOFT_ZETA` with the soft sparsifier and to 0 for the
baselines, and ``config.yaml`` records the number; a number given explicitly applies whatever
the stage. The runtime reads it through :meth:`SoftFamily.orthogonality_weight`.

SOFT's importance weights (eq. 3) are computed, by default (``compression.importance:
update``), from the matrices being sparsified, ``u = m + Delta``; ``factors`` computes them
from the client's local factors ``(theta_B, theta_A)`` after training, which this algorithm's
message carries (see :mod:`wirelessfl.compress.soft` for the two readings).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from wirelessfl.algorithms.base import FederatedAlgorithm, State
from wirelessfl.algorithms.message import Message
from wirelessfl.algorithms.soft.cost import SoftCost
from wirelessfl.algorithms.soft.lora_metrics import covariance_norm_over, orthogonality_of
from wirelessfl.algorithms.soft.settings import SOFT_SPARSIFIER, SoftSettings, paper_zeta
from wirelessfl.plans import ClientPlan, RoundPlan

if TYPE_CHECKING:
    from wirelessfl.training.local import LocalResult

__all__ = ["SoftFamily"]


class SoftFamily(FederatedAlgorithm):
    """SOFT and its section-V baselines as one algorithm (see the module docstring)."""

    Settings = SoftSettings
    CostModel = SoftCost
    METRICS = {
        "cov_norm": "||Cov(theta_B, theta_A)||_F over the arrived clients (eq. 12)",
        "orth_residual": "normalised orthogonality residual of the global LoRA (Fig. 2)",
    }

    # ---- 3. train: the loss the runtime minimises ----------------------------------------------
    def orthogonality_weight(self) -> float:
        """zeta of eq. (2): ``strategy.soft.zeta`` (resolved by the sparsifier when null)."""
        zeta = getattr(self.settings, "zeta", None)
        if zeta is not None:
            return float(zeta)
        return paper_zeta(self.scenario.compression.sparsifier or SOFT_SPARSIFIER)

    # ---- 4. the client's message ---------------------------------------------------------------
    def client_message(
        self, plan: ClientPlan, start: Message, result: LocalResult, private: dict[str, Any]
    ) -> Message:
        """The update of every layer and the head (the stage sparsifies the layers), and the
        local factors (eq. 12's covariance, eq. 3's ``importance: factors``)."""
        message = super().client_message(plan, start, result, private)
        state = self.runtime_or_fail().state
        factors = {  # the local factors in the paper's orientation (theta_B, theta_A)
            layer.name: state.paper_factors(result.local, layer) for layer in state.layers
        }
        message.diagnostics["local_factors"] = factors
        message.diagnostics["factors"] = [factors[layer.name] for layer in state.layers]
        return message

    # ---- 6. metrics ----------------------------------------------------------------------------
    def metrics(
        self, global_state: State, messages: dict[int, Message], round_plan: RoundPlan
    ) -> dict[str, float]:
        """Cov term (eq. 12) and orthogonality residual (the stage measures the rest)."""
        runtime = self.runtime_or_fail()
        ids = list(messages)
        p = [float(runtime.data_fractions[c]) for c in ids]
        return {
            "cov_norm": covariance_norm_over([messages[c].diagnostics["factors"] for c in ids], p),
            "orth_residual": orthogonality_of(global_state, runtime.state),
        }
