"""The server-mode interface: when the server aggregates, with what weights, and what a
dispatch is (``server.mode``; docs/simulator.md, "Asynchronous rounds").

A :class:`ServerMode` is built from the ``server`` section and the run's K
(:meth:`ServerMode.from_scenario`). The synchronous round is :class:`~wirelessfl.servers.sync.Sync`;
the event-driven engine (``wirelessfl.sim.async_engine``) asks the others

- :meth:`ServerMode.period_s`: the virtual time between aggregations (inf: arrivals decide);
- :meth:`ServerMode.aggregates_on_arrival`: whether the arrivals buffered so far make an
  aggregation now;
- :attr:`ServerMode.KEEPS_SLOTS_FULL`: a freed training slot is refilled at once (else at the
  next aggregation);
- :meth:`ServerMode.weights`: each taken update's weight w and the mix flag m of
  ``x <- x + w (Delta + m (x_start - x))``, from their staleness tau
  (:mod:`wirelessfl.servers.staleness`);

and the scenario asks :attr:`ServerMode.READS` (the ``server`` keys it reads, for the results'
labels), :meth:`ServerMode.updates_per_aggregation` (the privacy stage's count) and
:meth:`ServerMode.check_scenario` (its own refusals, at load). A new mode is one module with a
subclass and one line in ``registries.SERVER_MODES``; the engine holds its state (the uploads
in flight, the buffer), so a mode has none of its own to checkpoint.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar

__all__ = ["ServerMode"]


class ServerMode:
    """One ``server.mode`` (module docstring); ``server``: the ``server`` section, ``n_scheduled``
    the run's K."""

    #: the ``server.mode`` name
    NAME: ClassVar[str] = ""
    #: runs on the event-driven engine (else: synchronous rounds of K clients)
    EVENT_DRIVEN: ClassVar[bool] = True
    #: the ``server`` keys besides ``mode`` it reads (the others do not label its results)
    READS: ClassVar[tuple[str, ...]] = ()
    #: a freed training slot is refilled at once (else at the next aggregation)
    KEEPS_SLOTS_FULL: ClassVar[bool] = True
    #: its weights mix the client's start state (m = 1): the learner keeps it per dispatch
    MIXES_START: ClassVar[bool] = False

    def __init__(self, server: Any, n_scheduled: int) -> None:
        self.server = server
        self.n_scheduled = int(n_scheduled)

    @classmethod
    def from_scenario(cls, scenario: Any) -> ServerMode:
        return cls(scenario.server, scenario.n_scheduled)

    @classmethod
    def check_scenario(cls, scenario: Any) -> None:
        """A one-line ``ConfigError`` for what this mode cannot run (none by default)."""
        return None

    @property
    def concurrency(self) -> int:
        """C: clients training at once (``server.concurrency``, null: K)."""
        return int(self.server.concurrency or self.n_scheduled)

    def updates_per_aggregation(self) -> int:
        """The updates one aggregation is planned to take (adaptive clipping divides its noised
        count by it)."""
        return self.n_scheduled

    def period_s(self) -> float:
        """Virtual time [s] from an aggregation to the next (inf: the arrivals decide)."""
        return math.inf

    def aggregates_on_arrival(self, n_buffered: int) -> bool:
        """Whether the ``n_buffered`` arrivals not yet aggregated make an aggregation now."""
        return False

    def weights(self, taus: Sequence[int]) -> tuple[list[float], float]:
        """Each taken update's weight w_k and the mix flag m, from their staleness ``taus``."""
        raise NotImplementedError(f"server.mode: {self.NAME} has no event-driven weights")

    def staleness(self, tau: int) -> float:
        """s(tau) of ``server.staleness`` with ``staleness_a`` and ``staleness_b``."""
        from wirelessfl.servers.staleness import staleness_weight

        sv = self.server
        return staleness_weight(tau, sv.staleness, sv.staleness_a, sv.staleness_b)
