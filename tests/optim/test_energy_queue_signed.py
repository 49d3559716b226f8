"""The signed energy queue (optim.EnergyQueues(rule="signed"), (E1'')):

    Z_k <- Z_k + E_k - E_bar_k   every round, no max (Z_k < 0: banked credit),

priced at max(Z_k, 0). Checked against a hand computation, against the telescoping identity
sum_t E_k^t = E_bar_k T + Z_k^T written here, and the price against max(Z, 0) by hand.
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


def test_the_update_and_the_clipped_price_by_hand():
    """By hand, Z += E - E_bar:
    round 0: [ 3 - 1, 0 - 0.5, 0 - 2] = [2, -0.5, -2]
    round 1: [2 - 1, -0.5 - 0.5, -2 + 1 - 2] = [1, -1, -3]
    round 2: [1 + 0.5 - 1, -1 + 2 - 0.5, -3 - 2] = [0.5, 0.5, -5]
    round 3: [0.5 - 1, 0.5 - 0.5, -5 + 5 - 2] = [-0.5, 0, -2]
    """
    q = EnergyQueues(BUDGET_J, rule="signed")
    after = [q.update(row) for row in SPENT_J]
    np.testing.assert_allclose(after[0], [2.0, -0.5, -2.0])
    np.testing.assert_allclose(after[1], [1.0, -1.0, -3.0])
    np.testing.assert_allclose(after[2], [0.5, 0.5, -5.0])
    np.testing.assert_allclose(after[3], [-0.5, 0.0, -2.0])
    np.testing.assert_array_equal(q.price_weight_j, [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(q.idle_rounds, [0, 0, 0])
    q.value = after[1]
    np.testing.assert_array_equal(q.price_weight_j, [1.0, 0.0, 0.0])
    # Pi = sum_k max(Z_k, 0) P_k = 1 * 0.2 + 0 * 0.3 + 0 * 0.4 (a negative Z prices 0, not < 0)
    assert q.price(np.array([0, 1, 2]), np.array([0.2, 0.3, 0.4])) == pytest.approx(0.2)
    assert q.price(np.array([1, 2]), np.array([0.3, 0.4])) == 0.0


def test_the_identity_and_the_price_of_every_rule():
    """Open loop, 2000 rounds: under (E1'') sum_t E^t = E_bar T + Z^T (telescoping, nothing
    cut), so sum_t E^t <= E_bar T + max(Z^T, 0); the other rules never go below 0, so their
    price weights are their values."""
    rng = np.random.default_rng(11)
    n, t_rounds = 6, 2000
    budget_j = rng.uniform(0.5, 2.0, size=n)
    takes_part = rng.random((t_rounds, n)) < 0.3
    spent_j = np.where(takes_part, rng.uniform(0.0, 6.6, size=(t_rounds, n)) * budget_j, 0.0)
    queues = {rule: EnergyQueues(budget_j, rule=rule) for rule in ENERGY_QUEUE_RULES}
    went_negative = np.zeros(n, dtype=bool)
    for row in spent_j:
        for rule, q in queues.items():
            q.update(row)
            if rule != "signed":
                np.testing.assert_array_equal(q.price_weight_j, q.value)
        went_negative |= queues["signed"].value < 0.0
    signed = queues["signed"]
    assert went_negative.all()
    total_j = spent_j.sum(axis=0)
    np.testing.assert_allclose(total_j, budget_j * t_rounds + signed.value, rtol=1e-12)
    assert (total_j <= budget_j * t_rounds + np.maximum(signed.value, 0.0) + 1e-9).all()


def test_the_state_keeps_negative_values_and_resumes_exactly():
    q = EnergyQueues(BUDGET_J, rule="signed")
    for row in SPENT_J[:2]:
        q.update(row)
    state = json.loads(json.dumps(q.state_dict()))
    assert set(state) == {"format", "budget_j", "value"}
    assert state["value"] == [1.0, -1.0, -3.0]
    resumed = EnergyQueues(BUDGET_J, rule="signed")
    resumed.load_state_dict(state)
    for row in SPENT_J[2:]:
        np.testing.assert_array_equal(resumed.update(row), q.update(row))
    # a negative queue is not a state of (E1) or (E1'); non-finite values stay refused
    with pytest.raises(ValueError, match=r"finite values >= 0; got -1\.0 at index 1"):
        EnergyQueues(BUDGET_J).load_state_dict(state)
    with pytest.raises(ValueError, match="has idle_rounds"):
        resumed.load_state_dict({**state, "idle_rounds": [0, 0, 0]})
    with pytest.raises(ValueError, match="finite values; got nan"):
        resumed.load_state_dict({**state, "value": [0.0, float("nan"), 0.0]})
