"""The SOFT family's settings (``strategy.*`` for ``algorithm.name: soft``) and its zeta.

The orthogonality regularizer of eq. (2) is part of SOFT: ``strategy.zeta`` left null resolves,
when the scenario is loaded, to :data:`SOFT_ZETA` for ``soft`` and to 0 for the baselines
(TLoRA, RLoRA, SLoRA and ILoRA train on the task loss alone), and ``config.yaml`` records the
number; a number given explicitly applies to whichever sparsifier is chosen. This module does
not import torch.
"""

from __future__ import annotations

from dataclasses import dataclass

from wirelessfl.algorithms.aggregation import aggregation_option
from wirelessfl.config.schema import option
from wirelessfl.registries import SPARSIFIERS

__all__ = ["DENSE", "SOFT_ZETA", "SoftSettings", "paper_zeta"]

#: The member that sends its update dense (ILoRA).
DENSE = "none"

#: zeta of eq. (2) that ``strategy.zeta: null`` gives SOFT (``sparsifier: soft``): the value the
#: shipped scenarios trained SOFT with before zeta became an algorithm setting. The baselines
#: (every other sparsifier, plug-ins included) get 0: the regularizer is part of SOFT.
SOFT_ZETA = 1.0e-3


def paper_zeta(sparsifier: str) -> float:
    """The paper's reading of zeta for ``sparsifier``: :data:`SOFT_ZETA` for SOFT, else 0."""
    return SOFT_ZETA if sparsifier == "soft" else 0.0


@dataclass
class SoftSettings:
    """SOFT family: what clients send and how the server aggregates (``strategy.*``)."""

    sparsifier: str = option(
        "soft",
        choices=SPARSIFIERS,
        doc="soft (SOFT) | topk (TLoRA) | random (RLoRA) | structured (SLoRA) | none (ILoRA)",
    )
    error_feedback: bool = option(True, doc="eqs. (4)-(7) error memory")
    aggregation: str = aggregation_option()
    zeta: float | None = option(
        None,
        ge=0.0,
        doc=f"eq. (2) orthogonality regularizer weight in local training; null: {SOFT_ZETA:g} "
        "for soft (SOFT), 0 for the baselines (resolved when loaded)",
    )
    importance: str = option(
        "update",
        choices=("update", "factors"),
        doc="soft only: eq. (3) weights from update (u = m + Delta, the sparsified matrices) | "
        "factors (the local theta_B, theta_A after training)",
    )

    def __post_init__(self) -> None:
        if self.zeta is None:  # the paper's reading: SOFT trains with eq. (2), baselines without
            self.zeta = paper_zeta(self.sparsifier)
