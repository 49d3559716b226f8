"""``learner.kind: surrogate``: the network-only learner's settings (its loss curve and the
model geometry that sizes payloads and compute). Torch-free: the scenario schema reads it."""

from __future__ import annotations

from dataclasses import dataclass, field

from wirelessfl.config.learner import LearnerSettings, ModelShapeConfig
from wirelessfl.config.schema import option


@dataclass
class SurrogateSettings(LearnerSettings):
    """The surrogate learner: loss and accuracy by the bound, no training."""

    initial_loss: float = option(2.3, gt=0.0, doc="surrogate: loss at round 0")
    progress_rate: float = option(0.02, gt=0.0, le=1.0, doc="surrogate: progress per round")
    bound_half: float = option(
        1.0e4, gt=0.0, doc="surrogate: bound gamma at which the loss floor is half the start"
    )
    n_classes: int = option(10, ge=2, doc="surrogate: classes (chance accuracy)")
    shape: ModelShapeConfig = field(default_factory=ModelShapeConfig)
