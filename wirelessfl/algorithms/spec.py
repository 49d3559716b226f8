"""An algorithm's registry entry: its settings class and where its implementation lives.

``wirelessfl.registries.ALGORITHMS`` maps every built-in name to an :class:`AlgorithmSpec`
that a family's torch-free ``__init__.py`` defines next to its ``settings.py``: the scenario
schema reads ``spec.Settings`` (the ``strategy`` section) without importing the algorithm,
and :func:`algorithm_class` imports the implementation (which may import torch) when the
algorithm runs. A plug-in may register its :class:`~wirelessfl.algorithms.base.
FederatedAlgorithm` subclass directly instead (``ALGORITHMS.register("fedavg", FedAvg)``): a
class has a ``Settings`` attribute too, and :func:`algorithm_class` returns it as it is.
This module does not import torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from channels.registry import resolve_target
from wirelessfl.registries import ALGORITHMS

__all__ = ["AlgorithmSpec", "algorithm_class", "cost_model_class"]


@dataclass(frozen=True)
class AlgorithmSpec:
    """What the scenario and the network-only side need of an algorithm, without torch.

    Attributes:
        Settings: the algorithm's settings dataclass (the scenario's ``strategy`` section).
        CostModel: its cost model (:mod:`wirelessfl.algorithms.cost`; no torch): what the
            controllers plan with and network-only runs size with.
        implementation: ``"module:Class"`` of its ``FederatedAlgorithm`` subclass (the module
            may import torch).
    """

    Settings: type
    CostModel: type
    implementation: str

    def load(self) -> type:
        """The ``FederatedAlgorithm`` subclass named by :attr:`implementation` (imported once)."""
        return _resolve(self.implementation)


@cache
def _resolve(target: str) -> type:
    return resolve_target(target)


def algorithm_class(name: str) -> type:
    """The ``FederatedAlgorithm`` subclass registered as ``name`` in ``ALGORITHMS``: a spec's
    implementation, or the class itself for a plug-in that registered one."""
    entry = ALGORITHMS.load(name)
    return entry if isinstance(entry, type) else entry.load()


def cost_model_class(name: str) -> type:
    """The cost model class of algorithm ``name``, without importing its implementation when
    it is a spec (a plug-in class's ``CostModel`` attribute otherwise)."""
    return ALGORITHMS.load(name).CostModel
