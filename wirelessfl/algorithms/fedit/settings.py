"""FedAvg-LoRA's settings (``strategy.fedit`` and ``strategy.fedit_topk``); no torch."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from wirelessfl.algorithms.aggregation import aggregation_option

__all__ = ["FedITSettings"]


@dataclass
class FedITSettings:
    """FedAvg-LoRA: how the server aggregates (what a client sends: the compression stage)."""

    MOVED_KEYS: ClassVar[dict[str, str]] = {
        "topk_ratio": "moved to compression.ratio: top-k is the compression stage any algorithm "
        "takes (compression: {sparsifier: topk, ratio: 0.5, error_feedback: false} is App. "
        "C.2's; algorithm fedit_topk has it as its own)",
    }

    aggregation: str = aggregation_option()
