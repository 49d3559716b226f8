"""A3 handover: the hysteresis margin, the time-to-trigger and its reset."""

from __future__ import annotations

import numpy as np

from channels.handover import HandoverState, handover_step


def _check(state, losses, time_s, hysteresis_db=3.0, ttt_s=0.0):
    return handover_step(
        state,
        np.asarray(losses, float),
        time_s,
        hysteresis_db=hysteresis_db,
        time_to_trigger_s=ttt_s,
    ).tolist()


def test_hysteresis_margin():
    state = HandoverState.start(np.array([0, 0]))
    # client 0: cell 1 better by 2 dB (within the margin); client 1: by 4 dB
    assert _check(state, [[100, 98], [100, 96]], 0.0) == [1]
    assert state.serving.tolist() == [0, 1]
    # now client 1 is back near cell 0 by 2 dB: it stays (no ping-pong inside the margin)
    assert _check(state, [[100, 98], [98, 100]], 1.0) == []
    assert state.serving.tolist() == [0, 1]


def test_time_to_trigger_and_its_reset():
    state = HandoverState.start(np.array([0]))
    better = [[100, 95]]
    assert _check(state, better, 0.0, ttt_s=1.0) == []
    assert state.candidate.tolist() == [1] and state.since_s.tolist() == [0.0]
    assert _check(state, better, 0.5, ttt_s=1.0) == []
    assert _check(state, better, 1.0, ttt_s=1.0) == [0]  # held for 1 s: hands over
    assert state.serving.tolist() == [1] and state.candidate.tolist() == [-1]
    # a check where the condition fails starts the count again
    state = HandoverState.start(np.array([0]))
    _check(state, better, 0.0, ttt_s=1.0)
    _check(state, [[100, 99]], 0.6, ttt_s=1.0)
    assert state.candidate.tolist() == [-1]
    assert _check(state, better, 1.2, ttt_s=1.0) == []  # counting from 1.2 s
    assert _check(state, better, 2.2, ttt_s=1.0) == [0]


def test_a_new_best_cell_restarts_the_count_and_state_round_trips():
    state = HandoverState.start(np.array([0]))
    _check(state, [[100, 95, 99]], 0.0, ttt_s=1.0)
    assert _check(state, [[100, 99, 94]], 0.8, ttt_s=1.0) == []  # cell 2 now: from 0.8 s
    assert state.candidate.tolist() == [2] and state.since_s.tolist() == [0.8]
    saved = state.state()
    other = HandoverState.start(np.array([0]))
    other.restore(saved)
    assert other.state() == saved
    assert _check(other, [[100, 99, 94]], 1.8, ttt_s=1.0) == [0]
    assert other.serving.tolist() == [2]
