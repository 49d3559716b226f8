"""FedAvg-LoRA's settings (``strategy.*`` for ``fedit`` and ``fedit_topk``); no torch."""

from __future__ import annotations

from dataclasses import dataclass

from wirelessfl.algorithms.aggregation import aggregation_option
from wirelessfl.config.schema import option

__all__ = ["FedITSettings", "FedITTopKSettings"]


@dataclass
class FedITSettings:
    """FedAvg-LoRA: how the server aggregates and how much of its update a client sends."""

    aggregation: str = aggregation_option()
    topk_ratio: float = option(
        1.0,
        gt=0.0,
        le=1.0,
        doc="fraction of each layer's LoRA update sent, by magnitude over B and A together "
        "(App. C.2 top-k, no error feedback); 1: dense",
    )


@dataclass
class FedITTopKSettings(FedITSettings):
    """FedAvg-LoRA with top-k compression of the upload (App. C.2's ratio 0.5 by default)."""

    topk_ratio: float = option(
        0.5,
        gt=0.0,
        le=1.0,
        doc="fraction of each layer's LoRA update sent, by magnitude over B and A together "
        "(App. C.2 top-k, no error feedback); 1: dense",
    )
