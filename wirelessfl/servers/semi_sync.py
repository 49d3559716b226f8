"""``server.mode: semi_sync``: an aggregation every ``server.deadline_s`` of virtual time, of
the updates that arrived by then, with FedBuff's step over them (M = n, the arrivals;
:mod:`wirelessfl.servers.fedbuff`); late updates are carried over, and a freed slot waits
for the next aggregation."""

from __future__ import annotations

from collections.abc import Sequence

from wirelessfl.servers.base import ServerMode
from wirelessfl.servers.fedbuff import fedbuff_weights

__all__ = ["SemiSync"]


class SemiSync(ServerMode):
    """Aggregations ``deadline_s`` apart; at most C updates each."""

    NAME = "semi_sync"
    READS = ("concurrency", "dispatch", "staleness", "server_lr", "deadline_s")
    KEEPS_SLOTS_FULL = False

    def updates_per_aggregation(self) -> int:
        return self.concurrency

    def period_s(self) -> float:
        return float(self.server.deadline_s)

    def weights(self, taus: Sequence[int]) -> tuple[list[float], float]:
        return fedbuff_weights(self, taus)
