"""``server.mode: buffered``: FedBuff ("Federated Learning with Buffered Asynchronous
Aggregation", J. Nguyen et al., AISTATS 2022, arXiv:2106.06639, Algorithm 1).

The server sums the M buffered updates, each scaled by s(tau), divides by M and takes a server
step of rate eta_g, ``x <- x + eta_g (1/M) sum_k s(tau_k) Delta_k``: ``w_k = eta_g s(tau_k) / M``,
``m = 0`` (the paper's clients send y_0 - y_Q and the server subtracts; here Delta = y_Q - y_0
is added, the same step). FedBuff scales by 1/sqrt(1 + tau), the polynomial staleness with
a = 0.5 (the default of ``server.staleness``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from wirelessfl.errors import ConfigError
from wirelessfl.servers.base import ServerMode

__all__ = ["FedBuff", "fedbuff_weights"]


def fedbuff_weights(mode: ServerMode, taus: Sequence[int]) -> tuple[list[float], float]:
    """eta_g s(tau_k) / n for each of the n taken updates, and m = 0."""
    n = len(taus)
    return [mode.server.server_lr * mode.staleness(tau) / n for tau in taus], 0.0


class FedBuff(ServerMode):
    """An aggregation every M = ``server.buffer_size`` arrivals."""

    NAME = "buffered"
    READS = ("concurrency", "dispatch", "staleness", "buffer_size", "server_lr")

    @classmethod
    def check_scenario(cls, scenario: Any) -> None:
        """A buffer no run can fill: more than the N clients (a buffered client is not
        dispatched again before the aggregation)."""
        sv = scenario.server
        if sv.buffer_size > scenario.n_clients:
            raise ConfigError(
                f"server.buffer_size: must be <= n_clients ({scenario.n_clients:,}), got "
                f"{sv.buffer_size:,} (a client whose update waits in the buffer is dispatched "
                "again only after the aggregation, so at most n_clients updates fill it)"
            )

    def updates_per_aggregation(self) -> int:
        return int(self.server.buffer_size)

    def aggregates_on_arrival(self, n_buffered: int) -> bool:
        return n_buffered >= self.server.buffer_size

    def weights(self, taus: Sequence[int]) -> tuple[list[float], float]:
        return fedbuff_weights(self, taus)
