"""``server.mode: sync``: rounds of K clients, aggregated when the last upload arrives (or at
``faults.deadline_s``), by the simulator's own round (``wirelessfl.sim.simulator``)."""

from __future__ import annotations

from wirelessfl.servers.base import ServerMode

__all__ = ["Sync"]


class Sync(ServerMode):
    """The synchronous round: K updates per aggregation, none stale."""

    NAME = "sync"
    EVENT_DRIVEN = False
