"""PrivateState: staged, committed only when the round succeeded, size-capped, saved."""

from __future__ import annotations

import pytest

from wirelessfl.errors import SimulationError

torch = pytest.importorskip("torch")

from wirelessfl.training.private_state import PrivateState, count_values  # noqa: E402


def test_stage_commit_discard_and_removal():
    store = PrivateState()
    store.stage(3, {"memory": torch.ones(4), "optimizer": {"state": {0: torch.zeros(2)}}})
    assert store.get(3) == {} and store.clients() == []  # nothing before the commit
    store.commit()
    assert store.clients() == [3] and store.n_values(3) == 6
    store.stage(3, {"memory": None})
    store.discard()  # a failed round changes nothing
    assert "memory" in store.get(3)
    store.stage(3, {"memory": None})
    store.commit()
    assert set(store.get(3)) == {"optimizer"}
    store.stage(3, {"optimizer": None})
    store.commit()
    assert store.clients() == []  # a client with nothing left holds nothing


def test_a_client_may_not_keep_more_than_the_limit():
    store = PrivateState(limit_values=10)
    store.stage(1, {"router": torch.zeros(11)})
    with pytest.raises(SimulationError, match=r"client 1: private state \['router'\] holds 11"):
        store.commit()


def test_state_dict_round_trip_keeps_types():
    store = PrivateState()
    memory = {"fc1": (torch.ones(2, 1), torch.zeros(1, 3))}
    store.stage(7, {"memory": memory, "step": 4})
    store.commit()
    again = PrivateState()
    again.load_state_dict(store.state_dict(), "cpu")
    assert again.clients() == [7]
    restored = again.get(7)
    assert restored["step"] == 4 and isinstance(restored["memory"]["fc1"], tuple)
    torch.testing.assert_close(restored["memory"]["fc1"][0], memory["fc1"][0])


def test_count_values_walks_containers():
    assert count_values({"a": [torch.zeros(2, 3), (torch.zeros(4),)], "b": 5, "c": None}) == 10
