"""The staleness functions s(tau) that weight stale updates in the event-driven modes
(``server.staleness``, registered in ``wirelessfl.registries.STALENESS``).

tau = (the server's model version when the update is aggregated) - (the version the client
downloaded): the number of aggregations the update missed. Each update is added as
``x <- x + w (Delta + m (x_start - x))`` (:class:`~wirelessfl.plans.WeightedUpdate`), and
each mode chooses ``w`` and ``m`` (:mod:`wirelessfl.servers`).

The staleness functions s (FedAsync, section on the adaptive mixing weight, "Staleness
functions"):

- constant: s(tau) = 1;
- polynomial: s_a(tau) = (tau + 1)^(-a);
- hinge: s_{a,b}(tau) = 1 if tau <= b, else 1 / (a (tau - b) + 1).

A new one is a function ``(tau, a, b) -> float`` and one line in ``registries.STALENESS`` (or
``STALENESS.register`` from a ``--plugin`` file); ``server.staleness`` accepts its name.
"""

from __future__ import annotations

__all__ = ["constant", "hinge", "polynomial", "staleness_weight"]


def constant(tau: int, a: float, b: float) -> float:
    """s(tau) = 1."""
    return 1.0


def polynomial(tau: int, a: float, b: float) -> float:
    """s_a(tau) = (tau + 1)^(-a) (a = 0.5: FedBuff's 1 / sqrt(1 + tau))."""
    return float((tau + 1.0) ** (-a))


def hinge(tau: int, a: float, b: float) -> float:
    """s_{a,b}(tau) = 1 for tau <= b, else 1 / (a (tau - b) + 1)."""
    return 1.0 if tau <= b else 1.0 / (a * (tau - b) + 1.0)


def staleness_weight(tau: int, function: str, a: float, b: float) -> float:
    """s(tau) of the registered ``function`` with parameters a, b; tau >= 0."""
    from wirelessfl.registries import STALENESS

    if tau < 0:
        raise ValueError(f"staleness must be >= 0, got {tau}")
    return float(STALENESS.load(function)(tau, a, b))
