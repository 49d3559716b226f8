"""Cost models of H2Tune and its baselines: payloads fixed by the client groups. No torch.

"H2Tune: Federated Foundation Model Fine-Tuning with Hybrid Heterogeneity" (Guo et al., arXiv
2507.22633). Per round a client sends and receives, dense:

- H2Tune: its aligned stack (Phi_k o R_k) Omega_k and R_g, L_g r_g^2 values each way;
- FLLM and HetLoRA on the groups: its rank-r_k factors on its own model, r_k (d + l) values
  per adapted layer of that model, each way;
- LOCAL: nothing.

Every client's rank comes from its group (``strategy.groups``), not from the controller, so
no controller knob applies (the ``fixed`` controller only), and no compression stage (H2Tune's
R is averaged whole; the baselines' classes of clients are averaged as FedAvg of dense
factors). In real training the algorithm counts each client's values on the model it built
(:meth:`GroupCost.set_client_values`). Network-only, with no groups every client has the
learner's model (``learner.shape``) at the controller's rank, and H2Tune needs
``strategy.global_layers`` (L_g); with groups the models' sizes are known only once they are
built, so a network-only run is refused in one line. Penalty: NaN (no bound here).
"""

from __future__ import annotations

from typing import Any

from wirelessfl.algorithms.cost import FixedPayloadCost
from wirelessfl.errors import ConfigError
from wirelessfl.plans import ClientPlan

__all__ = ["FederatedLoRAGroupsCost", "GroupCost", "H2TuneCost", "LocalGroupsCost"]


class GroupCost(FixedPayloadCost):
    """A dense payload per client, measured or from ``learner.shape`` (module docstring)."""

    RUNTIME_TRAINER = False  # each group trains its own model (wirelessfl.algorithms.h2tune)

    NO_STAGE_REASON = "its shared tensors are averaged whole, not as sparse LoRA updates"

    def __init__(self, settings: Any, **kwargs: Any) -> None:
        super().__init__(settings, **kwargs)
        self.client_values: dict[int, int] | None = None

    def set_client_values(self, values: dict[int, int]) -> None:
        """Values each client sends (and receives) per round, counted on the built models."""
        self.client_values = {int(c): int(n) for c, n in values.items()}

    def client_profile(self, client: int) -> Any:
        return None if self.client_values is None else self.client_values.get(client)

    def check_network_only(self) -> None:
        if getattr(self.settings, "groups", None):
            raise ConfigError(
                f"learner.kind: network-only runs size messages from learner.shape, and "
                f"algorithm {self.name!r}'s strategy.groups name base models whose sizes are "
                "known only once they are built; use learner.kind: lora, or no groups"
            )

    def values(self, client: int) -> int:
        """Values ``client`` sends and receives in a round."""
        if self.client_values is not None:
            return self.client_values[client]
        return self.shaped_values()

    def shaped_values(self) -> int:
        """What every client federates on ``learner.shape`` (network-only, no groups)."""
        return 0

    def up_values(self, plan: ClientPlan) -> int:
        return self.values(plan.client)


class LocalGroupsCost(GroupCost):
    """LOCAL: nothing is federated."""

    def values(self, client: int) -> int:
        return 0


class FederatedLoRAGroupsCost(GroupCost):
    """FLLM and HetLoRA on the groups: rank-r_k factors of the client's model."""

    def shaped_values(self) -> int:
        rank = self.model_rank or self.scenario.controller.rank
        return int(rank * sum(d + ell for d, ell in self.lora_shapes))


class H2TuneCost(GroupCost):
    """H2Tune: L_g r_g^2 values each way."""

    def check_network_only(self) -> None:
        super().check_network_only()
        if self.settings.global_layers is None:
            raise ConfigError(
                "strategy.global_layers: a network-only H2Tune run needs L_g (the global layer "
                "slots; with real training it is the deepest model's block count); set it"
            )

    def shaped_values(self) -> int:
        return int(self.settings.global_layers * self.settings.global_rank**2)
