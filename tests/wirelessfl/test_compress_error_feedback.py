"""compress_update: error feedback (eqs. 4-7), budgets per layer, payload bits."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from channels.payload import index_overhead_bits
from wirelessfl.algorithms.message import Message
from wirelessfl.compress import compress_update, sparsify

NAMES = ["soft", "topk", "random", "structured", "none"]
LAYERS = {"q": (6, 3, 5), "v": (4, 2, 4), "fc": (10, 4, 3)}


def make_delta(rng: np.random.Generator, scale: float = 1.0) -> dict:
    return {
        name: (
            torch.from_numpy(scale * rng.standard_normal((d, r))),
            torch.from_numpy(scale * rng.standard_normal((r, l))),
        )
        for name, (d, r, l) in LAYERS.items()
    }


@pytest.mark.parametrize("name", NAMES)
def test_memory_invariant_exact(name):
    rng = np.random.default_rng(0)
    gen = torch.Generator().manual_seed(0)
    memory = None
    for _ in range(4):
        delta = make_delta(rng)
        out = compress_update(delta, memory, sparsifier=name, ratio=0.3, generator=gen)
        for layer, (dB, dA) in delta.items():
            if memory is None:
                mB, mA = torch.zeros_like(dB), torch.zeros_like(dA)
            else:
                mB, mA = memory[layer]
            sB, sA = out.sent[layer]
            nB, nA = out.memory[layer]
            # eq. (4), (5): m' = m + Delta - sent, bit for bit
            assert torch.equal(nB, mB + dB - sB) and torch.equal(nA, mA + dA - sA)
            # sent + m' = u exactly
            assert torch.equal(sB + nB, mB + dB) and torch.equal(sA + nA, mA + dA)
            # each entry is either sent or remembered
            assert not bool(((sB != 0) & (nB != 0)).any())
            assert nB.shape == dB.shape and nA.shape == dA.shape  # LoRA-sized memory
        memory = out.memory


@pytest.mark.parametrize("name", NAMES)
def test_sent_is_sparsify_of_u_and_counts(name):
    rng = np.random.default_rng(1)
    delta = make_delta(rng)
    memory = make_delta(rng, 0.5)
    ratio = 0.45
    out = compress_update(
        delta, memory, sparsifier=name, ratio=ratio, generator=torch.Generator().manual_seed(5)
    )
    gen = torch.Generator().manual_seed(5)
    n_kept = 0
    for layer, (d, r, l) in LAYERS.items():
        uB = memory[layer][0] + delta[layer][0]
        uA = memory[layer][1] + delta[layer][1]
        eB, eA = sparsify(name, uB, uA, ratio, gen)  # same generator stream, same order
        assert torch.equal(out.sent[layer][0], eB) and torch.equal(out.sent[layer][1], eA)
        k = r * (d + l) if name == "none" else round(ratio * r * (d + l))
        assert out.counts[layer].kept == k
        assert int((eB != 0).sum() + (eA != 0).sum()) == k
        n_kept += k
    assert out.n_kept == n_kept
    assert out.n_total == sum(r * (d + l) for d, r, l in LAYERS.values())


def test_feedback_off():
    rng = np.random.default_rng(2)
    delta = make_delta(rng)
    memory = make_delta(rng)
    out = compress_update(delta, memory, sparsifier="topk", ratio=0.2, error_feedback=False)
    assert out.memory is None
    for layer, (dB, dA) in delta.items():
        eB, eA = sparsify("topk", dB, dA, 0.2)  # memory ignored
        assert torch.equal(out.sent[layer][0], eB) and torch.equal(out.sent[layer][1], eA)


def test_error_feedback_transmits_everything_eventually():
    """Sum of what was sent plus the final memory equals the sum of the updates."""
    rng = np.random.default_rng(3)
    memory = None
    total_delta = {k: [torch.zeros(d, r), torch.zeros(r, l)] for k, (d, r, l) in LAYERS.items()}
    total_sent = {k: [torch.zeros(d, r), torch.zeros(r, l)] for k, (d, r, l) in LAYERS.items()}
    for _ in range(6):
        delta = {k: (b.float(), a.float()) for k, (b, a) in make_delta(rng).items()}
        out = compress_update(delta, memory, sparsifier="soft", ratio=0.25)
        for k in delta:
            for j in range(2):
                total_delta[k][j] += delta[k][j]
                total_sent[k][j] += out.sent[k][j]
        memory = out.memory
    for k in LAYERS:
        for j in range(2):
            torch.testing.assert_close(total_sent[k][j] + memory[k][j], total_delta[k][j])


def test_none_has_zero_memory_and_no_index_bits():
    out = compress_update(make_delta(np.random.default_rng(4)), None, sparsifier="none", ratio=0.1)
    assert all(not b.any() and not a.any() for b, a in out.memory.values())
    assert out.n_kept == out.n_total
    assert _message(out).bits(bits_per_value=32, count_index=True) == 32 * out.n_total


def test_random_reproducible():
    delta = make_delta(np.random.default_rng(5))
    a = compress_update(
        delta, None, sparsifier="random", ratio=0.5, generator=torch.Generator().manual_seed(9)
    )
    b = compress_update(
        delta, None, sparsifier="random", ratio=0.5, generator=torch.Generator().manual_seed(9)
    )
    c = compress_update(
        delta, None, sparsifier="random", ratio=0.5, generator=torch.Generator().manual_seed(10)
    )
    assert all(torch.equal(a.sent[k][j], b.sent[k][j]) for k in LAYERS for j in range(2))
    assert not all(torch.equal(a.sent[k][j], c.sent[k][j]) for k in LAYERS for j in range(2))


# ----------------------------------------------------------------------------- payload bits


def test_index_overhead_formula():
    """The formula compress_update relies on (channels.payload), against hand values."""
    assert index_overhead_bits(5, 16) == 16  # bitmask 16 < coordinates 5 * 4 = 20
    assert index_overhead_bits(3, 16) == 12  # coordinates 3 * 4 = 12 < 16
    assert index_overhead_bits(3, 32) == 15  # 3 * ceil(log2 32) = 15
    assert index_overhead_bits(3, 33) == 18  # 3 * ceil(log2 33) = 3 * 6
    assert index_overhead_bits(16, 16) == 0  # dense
    assert index_overhead_bits(0, 16) == 0
    assert index_overhead_bits(1, 1) == 0
    with pytest.raises(ValueError):
        index_overhead_bits(17, 16)


def _message(out) -> Message:
    """The SOFT family's message of ``out``: one index space per layer (eq. 6)."""
    msg = Message()
    for name, (b, a) in out.sent.items():
        c = out.counts[name]
        msg.add_sparse({f"{name}.B": b, f"{name}.A": a}, n_sent=c.kept, n_total=c.total)
    return msg


def test_fractional_bits_per_value():
    out = compress_update(
        {"w": (torch.randn(4, 2), torch.randn(2, 4))}, None, sparsifier="topk", ratio=5 / 16
    )
    msg = _message(out)
    assert msg.bits(bits_per_value=2.5, count_index=False) == 13  # ceil(5 * 2.5)
    assert msg.bits(bits_per_value=2.5, count_index=True) == 13 + 16


def test_payload_bits_hand_computed():
    # d = l = 4, r = 2: 16 entries; ratio 5/16 keeps 5 -> min(16, 5 * 4) = 16 index bits.
    B = torch.arange(1.0, 9.0).reshape(4, 2)  # 1..8
    A = torch.arange(9.0, 17.0).reshape(2, 4) / 10  # 0.9..1.6
    out = compress_update({"w": (B, A)}, None, sparsifier="topk", ratio=5 / 16)
    assert out.n_kept == 5 and out.n_total == 16
    msg = _message(out)
    assert msg.payload(bits_per_value=32, count_index=True).index_bits == 16
    assert msg.bits(bits_per_value=32, count_index=False) == 160
    assert msg.bits(bits_per_value=32, count_index=True) == 176
    # topk keeps 8, 7, 6, 5, 4: all in B
    assert out.counts["w"].kept_B == 5 and out.counts["w"].kept_A == 0

    # Two layers: d = l = 8, r = 2 (32 entries) keeping 3 -> 3 * 5 = 15; plus the 16-entry
    # layer keeping round(3/32 * 16) = round(1.5) = 2 -> 2 * 4 = 8.
    B2, A2 = torch.randn(8, 2), torch.randn(2, 8)
    out = compress_update({"a": (B2, A2), "b": (B, A)}, None, sparsifier="soft", ratio=3 / 32)
    assert out.counts["a"].kept == 3 and out.counts["b"].kept == 2
    msg = _message(out)
    assert msg.payload(bits_per_value=16, count_index=True).index_bits == 15 + 8
    assert msg.bits(bits_per_value=16, count_index=False) == 5 * 16
    assert msg.bits(bits_per_value=16, count_index=True) == 80 + 23
    assert out.ratio == pytest.approx(5 / 48)


# ----------------------------------------------------------------------------- errors


def test_errors():
    delta = make_delta(np.random.default_rng(6))
    with pytest.raises(ValueError, match="ratio"):
        compress_update(delta, None, sparsifier="soft", ratio=1.5)
    with pytest.raises(ValueError, match="ratio"):
        compress_update({}, None, sparsifier="soft", ratio=-1)
    with pytest.raises(ValueError, match="accepted"):
        compress_update(delta, None, sparsifier="bogus", ratio=0.5)
    with pytest.raises(ValueError, match="not present"):
        compress_update(delta, {"zzz": delta["q"]}, sparsifier="soft", ratio=0.5)
    bad = {"q": (torch.zeros(2, 2), torch.zeros(2, 2))}
    with pytest.raises(ValueError, match="shapes"):
        compress_update(delta, bad, sparsifier="soft", ratio=0.5)
    with pytest.raises(ValueError):
        compress_update(
            {"x": (torch.ones(3, 2), torch.ones(3, 3))}, None, sparsifier="topk", ratio=1
        )
    with pytest.raises(ValueError, match="bits_per_value"):
        out = compress_update(delta, None, sparsifier="topk", ratio=0.5)
        _message(out).bits(bits_per_value=0, count_index=False)


def test_missing_memory_layer_starts_from_zero():
    rng = np.random.default_rng(7)
    delta = make_delta(rng)
    mem = {"q": make_delta(rng)["q"]}
    out = compress_update(delta, mem, sparsifier="structured", ratio=0.5)
    ref = compress_update({"v": delta["v"]}, None, sparsifier="structured", ratio=0.5)
    assert torch.equal(out.sent["v"][0], ref.sent["v"][0])
    assert torch.equal(out.memory["v"][1], ref.memory["v"][1])
