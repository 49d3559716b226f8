"""The heterogeneous-rank baselines' settings (the ``strategy.<name>`` tables of ``hetlora``,
``flexlora``, ``fedstack``); no torch.

Every one sets the clients' ratios r_i / r like FSLoRA's sketching ratios
(:class:`~wirelessfl.algorithms.client_ranks.HeteroRankSettings`), so one grid compares them.
"""

from __future__ import annotations

from dataclasses import dataclass

from wirelessfl.algorithms.aggregation import aggregation_option
from wirelessfl.algorithms.client_ranks import HeteroRankSettings
from wirelessfl.config.schema import option
from wirelessfl.errors import ConfigError

__all__ = ["FedStackSettings", "FlexLoRASettings", "HetLoRASettings"]


@dataclass
class HetLoRASettings(HeteroRankSettings):
    """HetLoRA (``strategy.hetlora``): the clients' ratios r_i / r, aggregation and self-pruning."""

    aggregation: str = aggregation_option("data weights")
    aggregation_weights: str = option(
        "data",
        choices=("data", "norm"),
        doc="data (strategy.aggregation) | norm (HetLoRA's sparsity weights, "
        "||s(r_i) B_i A_i||_F normalised over the arrived)",
    )
    self_pruning: bool = option(False, doc="HetLoRA's local rank self-pruning")
    pruning_decay: float = option(
        0.9, gt=0.0, lt=1.0, doc="gamma: a pruning client keeps max(1, floor(gamma r_i)) ranks"
    )
    pruning_strength: float = option(
        0.1, ge=0.0, doc="lambda: weight of the tail norm in the local loss when pruning"
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.aggregation_weights == "norm" and self.aggregation != "weighted_mean":
            raise ConfigError(
                "strategy.aggregation_weights: norm normalises the weights itself; use "
                f"strategy.aggregation: weighted_mean, got {self.aggregation!r}"
            )


@dataclass
class FlexLoRASettings(HeteroRankSettings):
    """FlexLoRA (``strategy.flexlora``): the clients' ratios r_i / r and the aggregation weights."""

    aggregation: str = aggregation_option("weights of the products")


@dataclass
class FedStackSettings(HeteroRankSettings):
    """FedStack (``strategy.fedstack``): the clients' ratios r_i / r and the stacking weights."""

    aggregation: str = aggregation_option("stacking weights")
