"""A scenario's Theorem 1 constants as ``optim.BoundConstants`` (the controllers' bound and the
network-only learner's AirComp term read the same numbers)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from optim import BoundConstants

if TYPE_CHECKING:
    from wirelessfl.config.scenario import Scenario

__all__ = ["bound_constants"]


def bound_constants(scenario: Scenario) -> BoundConstants:
    """Theorem 1 constants of the scenario (``constants.*`` and ``controller.r_max``).

    ``constants.eta`` and ``constants.E`` are the learner's ``lr`` and ``local_steps`` unless
    the scenario gives them (``ConstantsConfig.resolve``, run when the scenario is loaded; a
    scenario built without loading is resolved here, on a copy).
    """
    k = scenario.constants
    if k.eta is None or k.E is None:
        k = dataclasses.replace(k)
        k.resolve(scenario.learner)
    assert k.eta is not None and k.E is not None
    return BoundConstants(
        S=k.S, H=k.H, W=k.W, phi=k.phi, G=k.G, eta=k.eta, E=k.E, r_max=scenario.controller.r_max
    )
