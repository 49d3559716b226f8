"""LyapunovController: the queue of eq. (21), persistence, and the O(1/V)-O(V) trade-off."""

from __future__ import annotations

import json

import numpy as np
import pytest

from optim import BoundConstants, LyapunovController, queue_update, solve_slot

P = 36_864
N, K = 100, 10
D_TH = 10.0
SNR_BAR = 10.0  # 10 dB mean SNR
OUTAGE = 0.5  # clients below -3 dB are in outage and not scheduled (the simulator filters them)


def _controller(V: float, method: str = "exact", **over) -> LyapunovController:
    kw = dict(
        V=V,
        d_th_s=D_TH,
        rank=8,
        n_clients=N,
        params_per_rank=P,
        bits_per_value=32,
        bandwidth_hz=1e6,
        o_min=0.05,
        constants=BoundConstants(),
        method=method,
    )
    kw.update(over)
    return LyapunovController(**kw)


def _rayleigh_rounds(seed: int, n_rounds: int):
    """i.i.d. Rayleigh block fading: |h|^2 ~ Exp(1), SNR = SNR_bar |h|^2, outage filtered."""
    rng = np.random.default_rng(seed)
    for _ in range(n_rounds):
        snr = SNR_BAR * rng.exponential(size=K)
        yield snr[snr >= OUTAGE]


def test_queue_recursion_eq21():
    ctl = _controller(1e-3)
    rng = np.random.default_rng(1)
    delays = rng.uniform(0, 2 * D_TH, size=200)
    q = 0.0
    assert ctl.queue == 0.0
    for d in delays:
        q = max(q + d - D_TH, 0.0)
        assert ctl.update(float(d)) == q
        assert ctl.queue == q
    assert queue_update(2.0, 3.0, 4.0) == 1.0 and queue_update(2.0, 1.0, 4.0) == 0.0
    h = ctl.history
    assert h["queue"].shape == (200,) and np.isnan(h["sparsification"]).all()
    np.testing.assert_array_equal(h["delay_s"], delays)


def test_decide_leaves_queue_and_step_reports_queue_after():
    ctl = _controller(1e-3)
    ctl.update(25.0)  # Q = 15
    snr = np.array([3.0, 20.0, 7.0])
    before = ctl.queue
    sol = ctl.decide(snr)
    assert ctl.queue == before and sol.queue_before == before and sol.queue_after is None
    ref = solve_slot(
        queue=before,
        V=1e-3,
        snr=snr,
        rank=8,
        n_clients=N,
        params_per_rank=P,
        bits_per_value=32,
        bandwidth_hz=1e6,
        o_min=0.05,
        constants=BoundConstants(),
    )
    assert sol.sparsification == ref.sparsification and sol.delay_s == ref.delay_s
    q_after = ctl.update(sol.delay_s * 1.5)  # a fault made the round slower than planned
    assert q_after == max(before + 1.5 * sol.delay_s - D_TH, 0.0)
    step = ctl.step(snr)
    assert step.queue_before == q_after
    assert step.queue_after == ctl.queue == max(q_after + step.delay_s - D_TH, 0.0)
    h = ctl.history
    assert ctl.rounds == 3 and len(h["bound"]) == 3
    assert h["planned_delay_s"][1] == sol.delay_s and h["delay_s"][1] == 1.5 * sol.delay_s
    assert h["queue_after"][2] == step.queue_after


def test_state_dict_roundtrip_through_json_resumes_bit_for_bit():
    full = _controller(1e-2)
    rounds = list(_rayleigh_rounds(5, 120))
    for snr in rounds:
        full.step(snr)

    first = _controller(1e-2)
    for snr in rounds[:60]:
        first.step(snr)
    blob = json.dumps(first.state_dict())
    resumed = _controller(1e-2)
    resumed.load_state_dict(json.loads(blob))
    assert resumed.queue == first.queue
    for snr in rounds[60:]:
        resumed.step(snr)
    assert resumed.queue == full.queue
    for key, arr in full.history.items():
        np.testing.assert_array_equal(resumed.history[key], arr)


def test_load_state_dict_checks_config_and_format():
    a = _controller(1e-2)
    a.step(np.array([4.0, 9.0]))
    state = a.state_dict()
    b = _controller(1e-1)
    with pytest.raises(ValueError, match="V"):
        b.load_state_dict(state)
    b.load_state_dict(state, strict=False)
    assert b.queue == a.queue
    with pytest.raises(ValueError, match="format"):
        b.load_state_dict({"queue": 1.0})
    bad = dict(state, queue=-1.0)
    with pytest.raises(ValueError, match="queue"):
        a.load_state_dict(bad)


def test_cvxpy_controller_matches_exact_decisions():
    cv = _controller(1e-2, method="cvxpy")
    for snr in _rayleigh_rounds(9, 30):
        s2 = cv.step(snr)
        s1 = solve_slot(
            queue=s2.queue_before,
            V=1e-2,
            snr=snr,
            rank=8,
            n_clients=N,
            params_per_rank=P,
            bits_per_value=32,
            bandwidth_hz=1e6,
            o_min=0.05,
            constants=BoundConstants(),
        )
        assert s2.method == ("exact" if s2.queue_before == 0.0 else "cvxpy")
        assert s2.objective == pytest.approx(s1.objective, rel=1e-6)


def test_drift_plus_penalty_trade_off_on_rayleigh_fading():
    """Larger V: lower time-average bound, higher time-average delay, larger queue (O(V));
    for every V the time-average delay stays at most D_th + Q_T / T with Q_T / T small."""
    n_rounds = 4000
    vs = [1e-4, 1e-3, 1e-2, 5e-2]
    avg_bound, avg_delay, avg_queue = [], [], []
    for V in vs:
        ctl = _controller(V)
        for snr in _rayleigh_rounds(2025, n_rounds):
            ctl.step(snr)
        h = ctl.history
        d_avg = h["delay_s"].mean()
        # eq. (21) telescopes: sum_t D^t <= T D_th + Q^T (equality while the queue never empties)
        assert d_avg <= D_TH + ctl.queue / n_rounds + 1e-9
        assert ctl.queue / n_rounds <= 0.03 * D_TH, "queue not stable"
        assert d_avg == pytest.approx(D_TH, rel=0.03)
        avg_bound.append(h["bound"].mean())
        avg_delay.append(d_avg)
        avg_queue.append(h["queue"].mean())
    assert np.all(np.diff(avg_bound) < 0), avg_bound
    assert np.all(np.diff(avg_delay) > 0), avg_delay
    assert np.all(np.diff(avg_queue) > 0), avg_queue
    # the backlog grows roughly linearly in V once V dominates (O(V) queue)
    assert 2.0 < avg_queue[3] / avg_queue[2] < 10.0


@pytest.mark.parametrize(
    ("over", "name"),
    [
        (dict(V=-1.0), "V"),
        (dict(d_th_s=0.0), "d_th_s"),
        (dict(d_th_s=-3.0), "d_th_s"),
        (dict(rank=0), "rank"),
        (dict(o_min=1.0), "o_min"),
        (dict(n_clients=0), "n_clients"),
        (dict(method="magic"), "method"),
    ],
)
def test_controller_rejects_bad_arguments(over, name):
    with pytest.raises(ValueError, match=name):
        _controller(**{"V": 1e-3, **over})


def test_controller_rejects_bad_round_inputs():
    ctl = _controller(1e-3)
    with pytest.raises(ValueError, match="delay_s"):
        ctl.update(-1.0)
    with pytest.raises(ValueError, match="delay_s"):
        ctl.update(float("nan"))
    with pytest.raises(ValueError, match="snr"):
        ctl.decide(np.array([1.0, 0.0]))
    with pytest.raises(ValueError, match="n_clients"):
        ctl.decide(np.ones(N + 1))
