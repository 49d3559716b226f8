"""FFA-LoRA's settings (``strategy.ffa_lora``); no torch."""

from __future__ import annotations

from dataclasses import dataclass

from wirelessfl.algorithms.aggregation import aggregation_option

__all__ = ["FFALoRASettings"]


@dataclass
class FFALoRASettings:
    """FFA-LoRA: how the server weighs the clients' B updates."""

    aggregation: str = aggregation_option("the B updates")
