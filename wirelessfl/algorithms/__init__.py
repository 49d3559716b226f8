"""Federated algorithms: one file each, registered in ``wirelessfl.registries.ALGORITHMS``.

See :mod:`wirelessfl.algorithms.base` for the steps an algorithm defines and
:mod:`wirelessfl.algorithms.message` for what it sends. Built in: ``soft`` (the SOFT family,
:mod:`wirelessfl.algorithms.soft`). Importing this package does not import torch.
"""

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
]
