"""Learner registry: the surrogate (network-only) and real federated LoRA training."""

from __future__ import annotations

from wirelessfl.config.scenario import Scenario
from wirelessfl.errors import UserError
from wirelessfl.learners.base import ClientUpload, Learner, ModelGeometry, RoundPlan
from wirelessfl.learners.surrogate import SurrogateLearner


def _surrogate(scenario: Scenario) -> Learner:
    lc = scenario.learner
    geometry = ModelGeometry(
        layer_shapes=tuple((int(d), int(ell)) for d, ell in lc.shape.layer_shapes),
        base_params=lc.shape.base_params,
        batch_size=lc.shape.batch_size,
        seq_len=lc.shape.seq_len,
    )
    return SurrogateLearner(
        geometry=geometry,
        initial_loss=lc.initial_loss,
        progress_rate=lc.progress_rate,
        bound_half=lc.bound_half,
        n_classes=lc.n_classes,
        local_steps=scenario.constants.E,
    )


def _lora(scenario: Scenario) -> Learner:
    try:
        from wirelessfl.training.learner import LoraLearner
    except ImportError as err:  # torch/peft missing on a base install
        raise UserError(
            f"learner.kind: 'lora' needs the training extra (pip install '.[train]'): {err}"
        ) from None
    return LoraLearner(scenario)


LEARNERS = {"surrogate": _surrogate, "lora": _lora}


def make_learner(scenario: Scenario) -> Learner:
    """Build the learner named by ``learner.kind``."""
    return LEARNERS[scenario.learner.kind](scenario)


__all__ = ["LEARNERS", "ClientUpload", "Learner", "ModelGeometry", "RoundPlan", "make_learner"]
