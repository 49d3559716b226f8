"""Message: bits counted once, from what is sent (closed forms by hand)."""

from __future__ import annotations

import math

import pytest

from channels.payload import kept_values, planned_payload_bits
from wirelessfl.algorithms.message import IndexSpace, Message

torch = pytest.importorskip("torch")


def test_sparse_and_dense_parts_by_hand():
    msg = Message()
    # one layer, d = l = 4, r = 2: 16 entries, 5 sent -> index min(16, 5 * 4) = 16 bits
    msg.add_sparse({"a": torch.zeros(2, 4), "b": torch.zeros(4, 2)}, n_sent=5, n_total=16)
    msg.shared["head"] = torch.zeros(3, 10)  # dense: 30 values, no index
    msg.private["memory"] = torch.ones(100)  # never counted
    size = msg.payload(bits_per_value=32, count_index=True)
    assert (size.n_values, size.n_total, size.index_bits, size.bits) == (35, 46, 16, 32 * 35 + 16)
    assert msg.bits(bits_per_value=32, count_index=False) == 32 * 35
    assert msg.bits(bits_per_value=32, count_index=True) == 32 * 35 + 16
    assert msg.bits(bits_per_value=4.5, count_index=False) == math.ceil(35 * 4.5)


def test_coordinate_list_beats_bitmask_for_few_values():
    space = IndexSpace(("x",), n_sent=3, n_total=1024)  # 3 coordinates of 10 bits < 1024
    assert space.index_bits == 30
    assert IndexSpace(("x",), n_sent=1024, n_total=1024).index_bits == 0  # dense
    assert IndexSpace((), n_sent=0, n_total=0).index_bits == 0
    with pytest.raises(ValueError, match="n_sent <= n_total"):
        IndexSpace(("x",), n_sent=5, n_total=4)


def test_size_only_message_counts_like_a_real_one():
    sized = Message()
    sized.add_sparse({}, n_sent=kept_values(0.3, 2 * (64 + 32)), n_total=2 * (64 + 32))
    real = Message()
    real.add_sparse({"B": torch.zeros(64, 2), "A": torch.zeros(2, 32)}, n_sent=58, n_total=192)
    assert kept_values(0.3, 192) == 58  # round(57.6)
    assert sized.bits(bits_per_value=16, count_index=True) == real.bits(
        bits_per_value=16, count_index=True
    )


def test_kept_values_rounds_half_to_even_and_checks_the_ratio():
    assert [kept_values(0.5, n) for n in (1, 3, 5)] == [0, 2, 2]
    assert kept_values(1.0, 7) == 7 and kept_values(0.0, 7) == 0
    for bad in (-0.1, 1.5, float("nan")):
        with pytest.raises(ValueError, match="ratio"):
            kept_values(bad, 10)


def test_planned_bits_are_the_papers_payload_plus_dense_values():
    assert planned_payload_bits(0.25, 8, 1536, 32) == 32 * 0.25 * 8 * 1536
    assert planned_payload_bits(0.25, 8, 1536, 32, dense_values=650) == 32 * (3072 + 650)
