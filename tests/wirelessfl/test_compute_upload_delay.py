"""The round time the joint step prices, read off a round's events: the longest span from a
client's compute start to its upload end or its cut (``wirelessfl.sim.events.compute_upload_s``,
docs/solvers.md, "The energy queues' weight")."""

from __future__ import annotations

import pytest

from wirelessfl.sim.events import SERVER, EventLog, Kind, compute_upload_s, round_timing


def _round(*spans: tuple[int, float, float, float, Kind]) -> EventLog:
    """Events of one round: per client (id, compute start, upload start, end, end kind)."""
    log = EventLog()
    log.add(0.0, Kind.BROADCAST, SERVER)
    for client, compute_s, upload_s, end_s, kind in spans:
        log.add(compute_s, Kind.COMPUTE_START, client)
        log.add(upload_s, Kind.COMPUTE_END, client)
        log.add(upload_s, Kind.UPLOAD_START, client)
        log.add(end_s, kind, client)
    log.add(10.0, Kind.AGGREGATE, SERVER)
    return log


def test_the_longest_compute_plus_upload_not_the_longest_upload():
    # client 0 computes 7 s and uploads 0.1 s; client 1 computes 1 s and uploads 3 s
    events = _round((0, 0.2, 7.2, 7.3, Kind.UPLOAD_END), (1, 0.2, 1.2, 4.2, Kind.UPLOAD_END))
    table = events.table()
    assert round_timing(table)["delay_s"] == pytest.approx(3.0)  # eq. (21): the longest upload
    assert compute_upload_s(table) == pytest.approx(7.1)  # (J2): compute + upload of client 0


def test_a_cut_client_counts_up_to_its_cut_and_no_client_gives_zero():
    events = _round((0, 0.0, 1.0, 2.0, Kind.UPLOAD_END), (2, 0.0, 1.5, 5.0, Kind.STRAGGLER))
    assert compute_upload_s(events.table()) == pytest.approx(5.0)
    assert compute_upload_s(_round().table()) == 0.0
