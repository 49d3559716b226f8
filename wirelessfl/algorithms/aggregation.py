"""Aggregation weight rules (docs/training.md): pure functions of the arrived clients' p_k.

A rule maps ``(p, n_clients, n_scheduled)`` to one weight per arrived client, with
``p_k = |D_k| / |D|``. The server then adds ``sum_k w_k Delta_k`` to the global state.

- ``weighted_mean`` (default): ``w_k = p_k / sum_j p_j`` over the arrived clients, i.e.
  ``theta <- theta + sum_k p_k Delta_k / sum_k p_k``;
- ``unbiased``: Algorithm 3, lines 15-16, ``w_k = (N / K) p_k`` with K the scheduled count.

They coincide for equal p_k when all K scheduled clients arrive. Registered in
``wirelessfl.registries.AGGREGATIONS``; a new rule is one function plus one line there.

A rule whose weight of a client does not depend on who else arrived has a *fixed
denominator* (``unbiased``, McMahan et al.'s estimator, arXiv:1710.06963): it says so with
:func:`fixed_denominator`, and client-level DP reads it
(:func:`wirelessfl.config.privacy.has_fixed_denominator`) (docs/privacy.md, "Adjacency"): one
client absent then removes its own term and nothing else.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from wirelessfl.config.schema import option
from wirelessfl.registries import AGGREGATIONS

__all__ = [
    "aggregation_option",
    "fixed_denominator",
    "unbiased_weights",
    "weighted_mean_weights",
]

Rule = Callable[[Sequence[float], int, int], list[float]]


def fixed_denominator(rule: Rule) -> Rule:
    """Mark ``rule`` as one whose w_k depends on p_k, N and K alone (not on who else arrived)."""
    rule.fixed_denominator = True  # type: ignore[attr-defined]
    return rule


def aggregation_option(weights_of: str = "") -> Any:
    """The ``strategy.aggregation`` setting of an algorithm: a rule of ``AGGREGATIONS``,
    ``weighted_mean`` by default; ``weights_of`` says what the weights multiply."""
    prefix = f"{weights_of}: " if weights_of else ""
    return option(
        "weighted_mean",
        choices=AGGREGATIONS,
        doc=f"{prefix}weighted_mean (p_k of the arrived) | unbiased (Algorithm 3's (N/K) p_k)",
    )


def weighted_mean_weights(p: Sequence[float], n_clients: int, n_scheduled: int) -> list[float]:
    """p_k / sum of the arrived p_k; ``[]`` when they sum to 0."""
    total = float(sum(p))
    return [x / total for x in p] if total > 0 else []


@fixed_denominator
def unbiased_weights(p: Sequence[float], n_clients: int, n_scheduled: int) -> list[float]:
    """(N / K) p_k: Algorithm 3, lines 15-16."""
    return [n_clients / n_scheduled * x for x in p]
