"""The round's event log, as columns, and the per-round record derived from it.

Events sort by (time, kind order, client), so simultaneous events break ties the same way in
every run (the order below is the causal order within a round). A round's events are numpy
columns (:class:`EventTable`): a round of K = 1,000 clients logs ~4,000 events, and building,
sorting and reading them as arrays keeps the log complete at a small fraction of a Python
object per event.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

import numpy as np
from numpy.typing import ArrayLike


class Kind(IntEnum):
    """Event kinds in causal order (the tie-break for equal virtual times)."""

    BROADCAST = 0
    DROP = 1
    OUTAGE = 2
    UNAVAILABLE = 3
    DOWNLOAD_START = 4  # the event-driven modes only (the synchronous round logs none)
    DOWNLOAD_END = 5
    COMPUTE_START = 6
    COMPUTE_END = 7
    UPLOAD_START = 8
    UPLOAD_END = 9
    STRAGGLER = 10
    AGGREGATE = 11
    HANDOVER = 12  # a network of cells: a client changes cell before the round (value: to)


SERVER = -1

_KIND_NAMES = [k.name.lower() for k in sorted(Kind)]


@dataclass(frozen=True)
class EventTable:
    """One round's events as columns, sorted by (time, kind, client).

    Fields (all shape (n,)): ``time_s`` float64 virtual time [s]; ``kind`` int64
    :class:`Kind`; ``client`` int64 client id (-1: server); ``value`` float64, kind-specific
    (bits for ``upload_end``, clients for ``broadcast`` and ``aggregate``).
    """

    time_s: np.ndarray
    kind: np.ndarray
    client: np.ndarray
    value: np.ndarray

    def __len__(self) -> int:
        return int(self.time_s.size)

    def of(self, kind: Kind) -> np.ndarray:
        """(n,) bool mask of the events of one kind."""
        return self.kind == int(kind)

    def with_event(self, time_s: float, kind: Kind, client: int, value: float) -> EventTable:
        """This table with one more event that sorts last (the round's aggregation)."""
        return EventTable(
            np.append(self.time_s, time_s),
            np.append(self.kind, int(kind)),
            np.append(self.client, client),
            np.append(self.value, value),
        )

    @classmethod
    def merged(cls, tables: list[EventTable]) -> EventTable:
        """The events of several servers' tables (a network's cells), sorted by time (a
        stable sort: at one time, in the order of ``tables``)."""
        time_s = np.concatenate([t.time_s for t in tables])
        order = np.argsort(time_s, kind="stable")
        return cls(
            time_s[order],
            np.concatenate([t.kind for t in tables])[order],
            np.concatenate([t.client for t in tables])[order],
            np.concatenate([t.value for t in tables])[order],
        )


class EventLog:
    """Collects a round's events, one or a column at a time; :meth:`table` sorts them."""

    def __init__(self) -> None:
        self._parts: list[tuple[np.ndarray, int, np.ndarray, np.ndarray]] = []

    def add(self, time_s: float, kind: Kind, client: int, value: float = 0.0) -> None:
        """One event."""
        self.add_many(np.array([time_s]), kind, np.array([client]), np.array([value]))

    def add_many(
        self, time_s: ArrayLike, kind: Kind, clients: ArrayLike, value: ArrayLike = 0.0
    ) -> None:
        """Events of one kind for several clients: ``time_s`` and ``value`` broadcast to
        ``clients`` (n,)."""
        clients = np.asarray(clients, dtype=np.int64)
        n = clients.size
        if n == 0:
            return
        times = np.full(n, time_s) if np.ndim(time_s) == 0 else np.asarray(time_s, np.float64)
        values = np.full(n, value) if np.ndim(value) == 0 else np.asarray(value, np.float64)
        self._parts.append((times, int(kind), clients, values))

    def table(self) -> EventTable:
        """The events so far, sorted by (time, kind, client)."""
        if not self._parts:
            empty = np.zeros(0)
            return EventTable(empty, empty.astype(np.int64), empty.astype(np.int64), empty)
        time_s = np.concatenate([p[0] for p in self._parts])
        kind = np.concatenate([np.full(p[2].size, p[1], dtype=np.int64) for p in self._parts])
        client = np.concatenate([p[2] for p in self._parts])
        value = np.concatenate([p[3] for p in self._parts])
        order = np.lexsort((client, kind, time_s))
        return EventTable(time_s[order], kind[order], client[order], value[order])


def event_lines(round_index: int, events: EventTable) -> list[str]:
    """CSV lines for ``events.csv`` (columns: round, time_s, kind, client, value)."""
    names = _KIND_NAMES
    return [
        f"{round_index},{t!r},{names[k]},{c},{v!r}"
        for t, k, c, v in zip(
            events.time_s.tolist(),
            events.kind.tolist(),
            events.client.tolist(),
            events.value.tolist(),
            strict=True,
        )
    ]


def compute_upload_s(events: EventTable) -> float:
    """The round's longest compute + upload [s]: from a client's ``compute_start`` to its
    ``upload_end`` (or its ``straggler`` cut), the round time D of the joint step (J2), which
    the delay queue takes with ``controller.radio: joint``; 0 when no client computed."""
    started = events.of(Kind.COMPUTE_START)
    ended = events.of(Kind.UPLOAD_END) | events.of(Kind.STRAGGLER)
    start_s = dict(
        zip(events.client[started].tolist(), events.time_s[started].tolist(), strict=True)
    )
    spans = [
        t - start_s[k]
        for k, t in zip(events.client[ended].tolist(), events.time_s[ended].tolist(), strict=True)
        if k in start_s
    ]
    return max(spans, default=0.0)


def round_timing(events: EventTable) -> dict[str, float]:
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
    t_start = float(events.time_s[events.of(Kind.BROADCAST)][0])
    t_end = float(events.time_s[events.of(Kind.AGGREGATE)][0])
    started = events.of(Kind.UPLOAD_START)
    start_clients, start_times = events.client[started], events.time_s[started]
    ends = events.of(Kind.UPLOAD_END)
    delay_s = 0.0
    if start_clients.size:  # every upload that started ends or is cut: the longest span
        order = np.argsort(start_clients)
        ended = ends | events.of(Kind.STRAGGLER)
        ids = events.client[ended]
        where = order[np.minimum(np.searchsorted(start_clients, ids, sorter=order), order.size - 1)]
        began = start_clients[where] == ids
        delay_s = float(np.max(events.time_s[ended][began] - start_times[where[began]]))
    count = np.bincount(events.kind, minlength=len(Kind))
    return {
        "t_start_s": t_start,
        "t_end_s": t_end,
        "delay_s": delay_s,
        "completion_s": t_end - t_start,
        "n_arrived": int(count[Kind.UPLOAD_END]),
        "n_dropped": int(count[Kind.DROP]),
        "n_outage": int(count[Kind.OUTAGE]),
        "n_unavailable": int(count[Kind.UNAVAILABLE]),
        "n_stragglers": int(count[Kind.STRAGGLER]),
        "bits_up": float(sum(events.value[ends].tolist())),  # in event order, as logged
    }


def arrived_clients(events: EventTable) -> np.ndarray:
    """Ids of the clients whose upload arrived, ascending."""
    return np.sort(events.client[events.of(Kind.UPLOAD_END)])
