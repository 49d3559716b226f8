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
]


def make_algorithm(scenario: Any) -> FederatedAlgorithm:
    """The algorithm named by ``algorithm.name``, with the scenario's ``strategy`` settings."""
    return ALGORITHMS.load(scenario.algorithm.name)(scenario.strategy, scenario=scenario)
