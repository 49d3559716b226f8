"""A learner kind's registry entry: its settings class and where its implementation lives.

``wirelessfl.registries.LEARNERS`` maps every built-in ``learner.kind`` to a
:class:`LearnerSpec` (``flower``'s is in ``wirelessfl.bridges.flower_settings``): the scenario
schema reads ``spec.Settings`` (the ``learner`` section) without importing the learner, and
:func:`learner_factory` imports the implementation (which may import torch or flwr) when a run
builds its learner. A plug-in may register its factory ``(scenario) -> Learner`` directly; it
then reads the base settings (:class:`~wirelessfl.config.learner.LearnerSettings`), or its own
where the factory (or the class it is bound to) has a ``Settings`` attribute. This module does
not import torch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

from channels.registry import resolve_target
from wirelessfl.learners.lora_settings import LoraSettings
from wirelessfl.learners.surrogate_settings import SurrogateSettings
from wirelessfl.registries import LEARNERS

__all__ = ["LORA", "SURROGATE", "LearnerSpec", "learner_factory"]


@dataclass(frozen=True)
class LearnerSpec:
    """A learner kind: ``Settings`` (its keys of the ``learner`` section) and
    ``implementation``, the ``"module:attribute"`` of its ``(scenario) -> Learner`` factory."""

    Settings: type
    implementation: str

    def load(self) -> Callable[[Any], Any]:
        """The factory named by :attr:`implementation` (imported once)."""
        return _resolve(self.implementation)


@cache
def _resolve(target: str) -> Any:
    return resolve_target(target)


def learner_factory(kind: str) -> Callable[[Any], Any]:
    """The ``(scenario) -> Learner`` factory of ``learner.kind`` ``kind``: a spec's
    implementation, or the factory a plug-in registered."""
    entry = LEARNERS.load(kind)
    return entry.load() if isinstance(entry, LearnerSpec) else entry


SURROGATE = LearnerSpec(
    SurrogateSettings, "wirelessfl.learners.surrogate:SurrogateLearner.from_scenario"
)
LORA = LearnerSpec(LoraSettings, "wirelessfl.learners.federated:FederatedLearner")
