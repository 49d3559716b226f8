"""Availability and faults in the event-driven modes: who may be dispatched, and which updates
are lost (docs/simulator.md, "Availability and faults under asynchrony").

The synchronous round's rules (``Simulator._observe`` and ``_mark_faults``), applied per
dispatch instead of per round; t is the aggregation being waited for:

- *eligible*: the idle clients, or with ``selection.available_only`` the idle clients that the
  availability model says are available (round t, at the dispatch time);
- *at its dispatch*, in the synchronous round's order of precedence, a client that is not
  available (round t, at the dispatch time) is ``unavailable``; else one whose SNR is below
  ``faults.outage_snr_db`` is in ``outage``; else it drops (``drop``) if
  ``Generator(seed, "faults", j).random() < faults.dropout_prob`` for the run's j-th dispatch
  (``channels.streams.round_generator``);
- *in flight*: a client that is not available (round t, at that instant) when its download,
  compute or upload ends has left: its update is lost there (``unavailable``).
"""

from __future__ import annotations

import numpy as np

from channels.streams import round_generator
from wirelessfl.sim.engine_host import EngineHost
from wirelessfl.sim.events import Kind

__all__ = ["DispatchChecks"]


class DispatchChecks:
    """The scenario's availability model and faults, asked per dispatch (module docstring)."""

    def __init__(self, sim: EngineHost) -> None:
        """``sim``: the simulator (its scenario and availability model;
        :class:`~wirelessfl.sim.engine_host.EngineHost`)."""
        sc = sim.scenario
        self.seed = sc.seed
        #: None: everyone is available at every instant (``availability.model: always``)
        self.availability = None if sc.availability.model == "always" else sim.availability
        self.available_only = sc.selection.available_only
        db = sc.faults.outage_snr_db
        self.outage_snr = None if db is None else 10.0 ** (db / 10.0)  # linear
        self.dropout_prob = sc.faults.dropout_prob

    def available(self, t: int, now_s: float) -> np.ndarray | None:
        """(N,) bool: who is available in round t at ``now_s`` (None: everyone)."""
        if self.availability is None:
            return None
        return self.availability.available(t, now_s)

    def eligible(self, idle: list[int], available: np.ndarray | None) -> list[int]:
        """The sorted ids a dispatch draws from: ``idle`` itself, or its available clients with
        ``selection.available_only``."""
        if available is None or not self.available_only:
            return idle
        return [c for c in idle if available[c]]

    def at_dispatch(
        self, j: int, client: int, snr: float, available: np.ndarray | None
    ) -> Kind | None:
        """Why the j-th dispatch (``client``, its linear ``snr``) does not train, or None."""
        if available is not None and not available[client]:
            return Kind.UNAVAILABLE
        if self.outage_snr is not None and snr < self.outage_snr:
            return Kind.OUTAGE
        if self.dropout_prob > 0:
            rng = round_generator(self.seed, stream="faults", round_index=j)
            if rng.random() < self.dropout_prob:
                return Kind.DROP
        return None

    def has_left(self, client: int, t: int, now_s: float) -> bool:
        """Whether ``client``, in flight, is not available in round t at ``now_s``."""
        if self.availability is None:
            return False
        return not bool(self.availability.available(t, now_s)[client])
