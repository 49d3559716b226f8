"""Learners: the network-only surrogate and real federated training (``learner.kind``).

Both run the scenario's algorithm; they are looked up in ``wirelessfl.registries.LEARNERS``.
"""

from __future__ import annotations

from typing import Any

from wirelessfl.errors import UserError
from wirelessfl.learners.base import ClientPlan, ClientReport, Learner, ModelGeometry, RoundPlan
from wirelessfl.registries import LEARNERS

__all__ = [
    "LEARNERS",
    "ClientPlan",
    "ClientReport",
    "Learner",
    "ModelGeometry",
    "RoundPlan",
    "make_learner",
]


def make_learner(scenario: Any) -> Learner:
    """Build the learner named by ``learner.kind`` for ``scenario``."""
    from wirelessfl.learners.kinds import learner_factory

    kind = scenario.learner.kind
    try:
        build = learner_factory(kind)
    except ModuleNotFoundError as err:  # torch/peft missing on a base install
        raise UserError(
            f"learner.kind: {kind!r} needs the [train] extra: pip install -e '.[train]' "
            f"(missing module {err.name!r})"
        ) from None
    # another ImportError (a library installed but failing to load, e.g. for lack of memory)
    # reaches the command line, which names the library and the reason
    return build(scenario)
