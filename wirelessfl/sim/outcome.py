"""What one round (or one aggregation of an event-driven mode) hands the runner, and the SimPy
delay that lands exactly on a computed event time."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from wirelessfl.sim.energy import RoundEnergy
from wirelessfl.sim.events import EventTable

__all__ = ["RoundOutcome", "delay_to"]


def delay_to(now_s: float, end_s: float) -> float:
    """The delay d with now_s + d == end_s exactly in floating point (SimPy adds it to now)."""
    delay = end_s - now_s
    for _ in range(64):
        reached = now_s + delay
        if reached == end_s:
            break
        delay = math.nextafter(delay, math.inf if reached < end_s else -math.inf)
    return delay


@dataclass
class RoundOutcome:
    """Everything one round produced: its record, events and per-client rows."""

    record: dict
    events: EventTable
    clients: list[dict] = field(default_factory=list)
    energy: RoundEnergy | None = None  # the training clients' energy
    cells: list[dict] = field(default_factory=list)  # a network's cells.csv rows
