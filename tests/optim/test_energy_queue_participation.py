"""Energy queues updated at participation (optim.EnergyQueues(rule="at_participation"), (E1')):

    Z_k <- max(Z_k + E_k - E_bar_k g_k, 0)   in the rounds device k spends (E_k > 0),

g_k the rounds since its last move, this one included; the other rounds only count. Checked
against a hand computation and against the telescoping bound sum_t E_k^t <= E_bar_k T + Z_k^T
written here.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from optim import ENERGY_QUEUE_RULES, EnergyQueues

BUDGET_J = np.array([1.0, 0.5, 2.0])
#: (T, N) energy per round [J]; 0: the device does not take part
SPENT_J = np.array(
    [
        [3.0, 0.0, 0.0],
        [0.0, 0.0, 1.0],
        [0.5, 2.0, 0.0],
        [0.0, 0.0, 5.0],
    ]
)


def test_the_rules():
    assert ENERGY_QUEUE_RULES == ("every_round", "at_participation", "signed")
    with pytest.raises(ValueError, match="rule must be one of"):
        EnergyQueues(BUDGET_J, rule="sometimes")


def test_moves_by_hand_with_gaps():
    """Device 0 moves at rounds 0 and 2 (gaps 1, 2), device 1 at round 2 (gap 3), device 2 at
    rounds 1 and 3 (gaps 2, 2); by hand:
      round 0: Z_0 = max(0 + 3 - 1 * 1, 0) = 2
      round 1: Z_2 = max(0 + 1 - 2 * 2, 0) = 0
      round 2: Z_0 = max(2 + 0.5 - 1 * 2, 0) = 0.5;  Z_1 = max(0 + 2 - 0.5 * 3, 0) = 0.5
      round 3: Z_2 = max(0 + 5 - 2 * 2, 0) = 1
    """
    q = EnergyQueues(BUDGET_J, rule="at_participation")
    after = [q.update(row) for row in SPENT_J]
    np.testing.assert_allclose(after[0], [2.0, 0.0, 0.0])
    np.testing.assert_allclose(after[1], [2.0, 0.0, 0.0])
    np.testing.assert_allclose(after[2], [0.5, 0.5, 0.0])
    np.testing.assert_allclose(after[3], [0.5, 0.5, 1.0])
    np.testing.assert_array_equal(q.idle_rounds, [1, 1, 0])
    # (E1) on the same rounds drains (and cuts) every round: 2, 1, 0.5, 0 for device 0;
    # 0, 0, 1.5, 1 for device 1; 0, 0, 0, 3 for device 2
    every = EnergyQueues(BUDGET_J)
    for row in SPENT_J:
        every.update(row)
    np.testing.assert_allclose(every.value, [0.0, 1.0, 3.0])
    np.testing.assert_array_equal(every.idle_rounds, [0, 0, 0])


def test_both_rules_against_the_reflected_walk():
    """Open loop, 2000 rounds, each device taking part with probability 0.3 and spending
    U(0, 6.6 E_bar) then (about E_bar a round). With S_s = sum_{t<s} (E_t - E_bar) (S_0 = 0),
    (E1) is the walk reflected at 0 (Skorokhod): Z^T = S_T + L, L = max(0, -min_{s<=T} S_s) the
    budget it cut; (E1') is the same walk seen only just after each move m (s = m + 1):
    Z = S_{m_last+1} + L', L' = max(0, -min_m S_{m+1}) <= L. Both give
    sum_t E^t <= E_bar T + Z (telescoping)."""
    rng = np.random.default_rng(7)
    n, t_rounds = 6, 2000
    budget_j = rng.uniform(0.5, 2.0, size=n)
    takes_part = rng.random((t_rounds, n)) < 0.3
    spent_j = np.where(takes_part, rng.uniform(0.0, 6.6, size=(t_rounds, n)) * budget_j, 0.0)
    queues = {rule: EnergyQueues(budget_j, rule=rule) for rule in ENERGY_QUEUE_RULES}
    for row in spent_j:
        for q in queues.values():
            q.update(row)
    walk_j = np.vstack([np.zeros(n), np.cumsum(spent_j - budget_j, axis=0)])  # (T + 1, N)
    for k in range(n):
        cut_j = max(0.0, -walk_j[:, k].min())
        np.testing.assert_allclose(queues["every_round"].value[k], walk_j[-1, k] + cut_j)
        seen = np.flatnonzero(takes_part[:, k]) + 1  # just after each move
        cut_at_moves_j = max(0.0, -walk_j[seen, k].min())
        assert cut_at_moves_j <= cut_j
        z_j = walk_j[seen[-1], k] + cut_at_moves_j
        np.testing.assert_allclose(queues["at_participation"].value[k], z_j, atol=1e-9)
        assert queues["at_participation"].idle_rounds[k] == t_rounds - seen[-1]
        for q in queues.values():
            assert spent_j[:, k].sum() <= budget_j[k] * t_rounds + q.value[k] + 1e-9


def test_the_state_holds_the_idle_rounds_and_resumes_exactly():
    q = EnergyQueues(BUDGET_J, rule="at_participation")
    for row in SPENT_J[:2]:
        q.update(row)
    state = json.loads(json.dumps(q.state_dict()))
    assert state["idle_rounds"] == [1, 2, 0]
    resumed = EnergyQueues(BUDGET_J, rule="at_participation")
    resumed.load_state_dict(state)
    for row in SPENT_J[2:]:
        np.testing.assert_array_equal(resumed.update(row), q.update(row))
    # every_round keeps its old state (no idle rounds), and the rules do not mix
    old = EnergyQueues(BUDGET_J).state_dict()
    assert set(old) == {"format", "budget_j", "value"}
    with pytest.raises(ValueError, match="no idle_rounds"):
        EnergyQueues(BUDGET_J, rule="at_participation").load_state_dict(old)
    with pytest.raises(ValueError, match="has idle_rounds"):
        EnergyQueues(BUDGET_J).load_state_dict(state)
    with pytest.raises(ValueError, match="whole numbers"):
        resumed.load_state_dict({**state, "idle_rounds": [1.5, 0, 0]})
