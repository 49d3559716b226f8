"""The SOFT family's settings (``strategy.soft``) and its zeta. No torch.

SOFT and its section-V baselines (TLoRA, RLoRA, SLoRA, ILoRA) differ in the compression stage
(``compression.sparsifier``: soft, topk, random, structured, none; SOFT's own is soft). The
orthogonality regularizer of eq. (2) is part of SOFT: ``strategy.soft.zeta`` left null
resolves, when the scenario is loaded, to :data:`SOFT_ZETA` when the stage is SOFT's importance
sparsifier and to 0 for the baselines (they train on the task loss alone), and
``config.yaml`` records the number; a number given explicitly applies whatever the stage.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from wirelessfl.algorithms.aggregation import aggregation_option
from wirelessfl.config.schema import option

__all__ = ["SOFT_SPARSIFIER", "SOFT_ZETA", "SoftSettings", "paper_zeta"]

#: SOFT's own sparsifier (eq. 3), what ``compression.sparsifier: null`` gives ``soft``.
SOFT_SPARSIFIER = "soft"

#: zeta of eq. (2) that ``strategy.soft.zeta: null`` gives SOFT (the soft sparsifier): the value
#: the shipped scenarios trained SOFT with before zeta became an algorithm setting. The
#: baselines (every other sparsifier, plug-ins included) get 0: the regularizer is part of SOFT.
SOFT_ZETA = 1.0e-3


def paper_zeta(sparsifier: str) -> float:
    """The paper's reading of zeta for ``sparsifier``: :data:`SOFT_ZETA` for SOFT, else 0."""
    return SOFT_ZETA if sparsifier == SOFT_SPARSIFIER else 0.0


def _moved(key: str) -> str:
    return (
        f"moved to compression.{key}: the compression stage is a section of its own, which any "
        "algorithm takes (SOFT's own is the soft sparsifier with error feedback)"
    )


@dataclass
class SoftSettings:
    """SOFT family: how the server aggregates and the eq. (2) weight (``strategy.soft``)."""

    MOVED_KEYS: ClassVar[dict[str, str]] = {
        key: _moved(key) for key in ("sparsifier", "error_feedback", "importance")
    }

    aggregation: str = aggregation_option()
    zeta: float | None = option(
        None,
        ge=0.0,
        doc=f"eq. (2) orthogonality regularizer weight in local training; null: {SOFT_ZETA:g} "
        "with the soft sparsifier (SOFT), 0 with the others (resolved when loaded)",
    )

    def resolve(self, scenario: Any) -> None:
        """Fill a null zeta from the run's sparsifier (the paper's reading)."""
        if self.zeta is None:
            self.zeta = paper_zeta(scenario.compression.sparsifier or SOFT_SPARSIFIER)
