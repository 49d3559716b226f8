"""Federated algorithms: one file each, registered in ``wirelessfl.registries.ALGORITHMS``.

See :mod:`wirelessfl.algorithms.base` for the steps an algorithm defines and
:mod:`wirelessfl.algorithms.message` for what it sends. Built in: ``soft`` (the SOFT family,
:mod:`wirelessfl.algorithms.soft`). Importing this package does not import torch.
"""

from typing import Any

from wirelessfl.algorithms.base import FederatedAlgorithm, State
from wirelessfl.algorithms.message import IndexSpace, Message
from wirelessfl.plans import ClientPlan, RoundPlan
from wirelessfl.registries import ALGORITHMS

__all__ = [
    "ALGORITHMS",
    "ClientPlan",
    "FederatedAlgorithm",
    "IndexSpace",
    "Message",
    "RoundPlan",
    "State",
    "make_algorithm",
    "started_algorithm",
]


def make_algorithm(scenario: Any) -> FederatedAlgorithm:
    """The algorithm named by ``algorithm.name``, with the scenario's ``strategy`` settings."""
    return ALGORITHMS.load(scenario.algorithm.name)(scenario.strategy, scenario=scenario)


def started_algorithm(
    scenario: Any, *, rank: int, seed: int, algorithm_class: type | None = None
) -> FederatedAlgorithm:
    """The scenario's algorithm (or ``algorithm_class``'s) bound to a training runtime of its
    own and started at model rank ``rank``: what a process that trains clients for a run held
    elsewhere (a Ray actor, a Flower node) builds once, as the run's own process does."""
    from wirelessfl.training.runtime import Runtime

    cls = algorithm_class or ALGORITHMS.load(scenario.algorithm.name)
    algorithm = cls(scenario.strategy, scenario=scenario)
    algorithm.bind(Runtime(scenario))
    algorithm.start(rank=rank, seed=seed)
    return algorithm
