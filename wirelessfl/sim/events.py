"""Typed event log and the per-round record derived from it.

Events sort by (time, kind order, client), so simultaneous events break ties the same way in
every run (the order below is the causal order within a round).
"""

from __future__ import annotations

from enum import IntEnum
from typing import NamedTuple

import numpy as np


class Kind(IntEnum):
    """Event kinds in causal order (the tie-break for equal virtual times)."""

    BROADCAST = 0
    DROP = 1
    OUTAGE = 2
    COMPUTE_START = 3
    COMPUTE_END = 4
    UPLOAD_START = 5
    UPLOAD_END = 6
    STRAGGLER = 7
    AGGREGATE = 8


SERVER = -1


class Event(NamedTuple):
    """One event: virtual time [s], kind, client id (-1: server), kind-specific value."""

    time_s: float
    kind: Kind
    client: int
    value: float = 0.0


def sort_events(events: list[Event]) -> list[Event]:
    """Deterministic order: time, then causal kind order, then client id."""
    return sorted(events, key=lambda e: (e.time_s, int(e.kind), e.client))


_KIND_NAMES = {k: k.name.lower() for k in Kind}


def event_lines(round_index: int, events: list[Event]) -> list[str]:
    """CSV lines for ``events.csv`` (columns: round, time_s, kind, client, value)."""
    names = _KIND_NAMES
    return [
        f"{round_index},{float(e.time_s)!r},{names[e.kind]},{e.client},{float(e.value)!r}"
        for e in events
    ]


def round_timing(events: list[Event]) -> dict[str, float]:
    """Timing and counts of a round, read off its events (the only place they are computed).

    ``delay_s`` is D^t of eq. (21): the longest time a client spent uploading, from its
    ``upload_start`` to its ``upload_end``, or to its ``straggler`` event when
    ``faults.deadline_s`` cut the upload (the event is at the deadline). Without a cut this is
    the longest upload among the clients that arrived (the paper's D^t). With one, the upload
    that was cut counts up to the deadline: the round lasted until then, and D^t is the
    paper's max_k upload time censored at the deadline, not the arrivals' alone (which would
    make D^t, and so the virtual queue, smallest exactly when the channel is worst). In the
    paper's model (no compute, instant downlink: every upload starts at the broadcast) a cut
    makes D^t = ``faults.deadline_s`` = ``completion_s``. D^t stays upload time, as without a
    deadline: a client cut before its upload started (still downloading or computing) never
    used the uplink and adds nothing to it (``completion_s`` and ``n_stragglers`` show it).
    """
    t_start = next(e.time_s for e in events if e.kind == Kind.BROADCAST)
    t_end = next(e.time_s for e in events if e.kind == Kind.AGGREGATE)
    starts = {e.client: e.time_s for e in events if e.kind == Kind.UPLOAD_START}
    ends = [e for e in events if e.kind == Kind.UPLOAD_END]
    cut = [e for e in events if e.kind == Kind.STRAGGLER and e.client in starts]
    delays = [e.time_s - starts[e.client] for e in ends + cut]
    count = {k: 0 for k in Kind}
    for e in events:
        count[e.kind] += 1
    return {
        "t_start_s": t_start,
        "t_end_s": t_end,
        "delay_s": float(max(delays)) if delays else 0.0,
        "completion_s": t_end - t_start,
        "n_arrived": count[Kind.UPLOAD_END],
        "n_dropped": count[Kind.DROP],
        "n_outage": count[Kind.OUTAGE],
        "n_stragglers": count[Kind.STRAGGLER],
        "bits_up": float(sum(e.value for e in ends)),
    }


def arrived_clients(events: list[Event]) -> np.ndarray:
    """Ids of the clients whose upload arrived, ascending."""
    return np.array(sorted(e.client for e in events if e.kind == Kind.UPLOAD_END), dtype=int)
