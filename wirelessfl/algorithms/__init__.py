"""Federated algorithms: one folder per family, registered in ``wirelessfl.registries.ALGORITHMS``.

See :mod:`wirelessfl.algorithms.base` for the steps an algorithm defines,
:mod:`wirelessfl.algorithms.message` for what it sends and :mod:`wirelessfl.algorithms.spec`
for its registry entry. A family is one folder (``soft/``, ``fedit/``, ``fslora/``,
``hetero_rank/``, ``floral/``, ``h2tune/``): a torch-free ``settings.py`` and ``__init__.py``
(the family's :class:`~wirelessfl.algorithms.spec.AlgorithmSpec` entries), its algorithm
modules and its own model, layer, loss and trainer pieces. What several families share stays
here (``aggregation.py``, ``client_ranks.py``, ``state_ops.py``, ``finite.py``); the training
runtime every algorithm uses is ``wirelessfl.training``. Importing this package does not
import torch.
"""

from typing import Any

from wirelessfl.algorithms.base import FederatedAlgorithm, State
from wirelessfl.algorithms.message import IndexSpace, Message
from wirelessfl.algorithms.spec import AlgorithmSpec, algorithm_class
from wirelessfl.plans import ClientPlan, RoundPlan
from wirelessfl.registries import ALGORITHMS

__all__ = [
    "ALGORITHMS",
    "AlgorithmSpec",
    "ClientPlan",
    "FederatedAlgorithm",
    "IndexSpace",
    "Message",
    "RoundPlan",
    "State",
    "algorithm_class",
    "make_algorithm",
    "started_algorithm",
]

_class_of = algorithm_class  # started_algorithm's parameter of that name hides it there


def make_algorithm(scenario: Any) -> FederatedAlgorithm:
    """The algorithm named by ``algorithm.name``, with the scenario's ``strategy`` settings."""
    return algorithm_class(scenario.algorithm.name)(scenario.strategy, scenario=scenario)


def started_algorithm(
    scenario: Any, *, rank: int, seed: int, algorithm_class: type | None = None
) -> FederatedAlgorithm:
    """The scenario's algorithm (or ``algorithm_class``'s) bound to a training runtime of its
    own and started at model rank ``rank``: what a process that trains clients for a run held
    elsewhere (a Ray actor, a Flower node) builds once, as the run's own process does."""
    from wirelessfl.training.runtime import Runtime

    cls = algorithm_class or _class_of(scenario.algorithm.name)
    algorithm = cls(scenario.strategy, scenario=scenario)
    algorithm.bind(Runtime(scenario))
    algorithm.start(rank=rank, seed=seed)
    return algorithm
