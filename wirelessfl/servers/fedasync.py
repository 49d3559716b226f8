"""``server.mode: async``: FedAsync ("Asynchronous Federated Optimization", C. Xie, S. Koyejo,
I. Gupta, arXiv:1903.03934, Algorithm 1).

Every arrival is mixed into the global model, ``x_t = (1 - alpha_t) x_{t-1} + alpha_t x_new``
with ``alpha_t = alpha s(tau)``, where ``x_new = x_start + Delta`` is the client's model. That is
``w = alpha_t``, ``m = 1``: ``(1 - w) x + w (x_start + Delta) = x + w (Delta + x_start - x)``.
"""

from __future__ import annotations

from collections.abc import Sequence

from wirelessfl.servers.base import ServerMode

__all__ = ["FedAsync"]


class FedAsync(ServerMode):
    """One update per aggregation, mixed at alpha s(tau)."""

    NAME = "async"
    READS = ("concurrency", "dispatch", "staleness", "alpha")
    MIXES_START = True

    def updates_per_aggregation(self) -> int:
        return 1

    def aggregates_on_arrival(self, n_buffered: int) -> bool:
        return True

    def weights(self, taus: Sequence[int]) -> tuple[list[float], float]:
        """[alpha s(tau)] and m = 1 for the one update."""
        return [self.server.alpha * self.staleness(tau) for tau in taus], 1.0
