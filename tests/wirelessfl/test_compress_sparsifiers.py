"""Sparsifiers (SOFT eq. 3 and the section-V baselines) against brute-force references."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
import torch

from wirelessfl.compress import (
    SPARSIFIERS,
    Sparsifier,
    get_sparsifier,
    sparsify,
    sparsify_masks,
)
from wirelessfl.compress.base import apply_masks
from wirelessfl.compress.soft import SoftSparsifier

NAMES = ["soft", "topk", "random", "structured", "none"]

# ----------------------------------------------------------------------------- references
# Positions are ("B", row, col) or ("A", row, col); the tie order "lower index first" is
# B before A, then row-major for the flat order, and B-part-then-A-part within a component.


def ref_topk(B: np.ndarray, A: np.ndarray, k: int) -> set:
    entries = []
    pos = 0
    for j in range(B.shape[0]):
        for i in range(B.shape[1]):
            entries.append((abs(B[j, i]), pos, ("B", j, i)))
            pos += 1
    for i in range(A.shape[0]):
        for c in range(A.shape[1]):
            entries.append((abs(A[i, c]), pos, ("A", i, c)))
            pos += 1
    entries.sort(key=lambda e: (-e[0], e[1]))
    return {e[2] for e in entries[:k]}


def ref_component_top(B: np.ndarray, A: np.ndarray, i: int, k: int) -> set:
    cands = [(abs(B[j, i]), j, ("B", j, i)) for j in range(B.shape[0])]
    cands += [(abs(A[i, c]), B.shape[0] + c, ("A", i, c)) for c in range(A.shape[1])]
    cands.sort(key=lambda e: (-e[0], e[1]))
    return {e[2] for e in cands[:k]}


def ref_budget(weights: list[float], total: int, capacity: int) -> list[int]:
    """Capped largest-remainder allocation in exact rational arithmetic."""
    w = [Fraction(x) for x in weights]
    n = len(w)
    capped = [False] * n
    while True:
        free = [i for i in range(n) if not capped[i]]
        if not free:
            return [capacity] * n
        rem = total - capacity * (n - len(free))
        s = sum((w[i] for i in free), Fraction(0))
        q = {i: (Fraction(rem, len(free)) if s == 0 else rem * w[i] / s) for i in free}
        over = [i for i in free if q[i] > capacity]
        if not over:
            break
        for i in over:
            capped[i] = True
    out = [capacity if capped[i] else math.floor(q[i]) for i in range(n)]
    order = sorted(free, key=lambda i: (-(q[i] - math.floor(q[i])), i))
    for i in order[: total - sum(out)]:
        out[i] += 1
    return out


def ref_soft(B: np.ndarray, A: np.ndarray, k: int) -> tuple[set, list[int]]:
    d, r = B.shape
    l = A.shape[1]
    weights = []
    for i in range(r):
        nb = sum(float(B[j, i]) ** 2 for j in range(d))
        na = sum(float(A[i, c]) ** 2 for c in range(l))
        weights.append(nb * na)
    counts = ref_budget(weights, k, d + l)
    kept = set()
    for i in range(r):
        kept |= ref_component_top(B, A, i, counts[i])
    return kept, counts


def ref_structured(B: np.ndarray, A: np.ndarray, k: int) -> set:
    d, r = B.shape
    l = A.shape[1]
    kept = set()
    left = k
    for i in range(r):
        take = min(left, d + l)
        kept |= ref_component_top(B, A, i, take)
        left -= take
    return kept


def mask_set(mB: torch.Tensor, mA: torch.Tensor) -> set:
    s = {("B", int(j), int(i)) for j, i in torch.nonzero(mB).tolist()}
    s |= {("A", int(i), int(c)) for i, c in torch.nonzero(mA).tolist()}
    return s


def rand_pair(rng: np.random.Generator, d: int, r: int, l: int, dtype=torch.float64):
    B = torch.from_numpy(rng.standard_normal((d, r))).to(dtype)
    A = torch.from_numpy(rng.standard_normal((r, l))).to(dtype)
    return B, A


SHAPES = [(1, 1, 1), (4, 2, 4), (5, 3, 2), (2, 4, 7), (8, 1, 3), (3, 6, 3), (16, 4, 12)]
RATIOS = [0.0, 1.0, 1e-9, 0.01, 0.1, 0.25, 0.5, 0.73, 0.999]


# ----------------------------------------------------------------------------- counts


@pytest.mark.parametrize("name", NAMES)
def test_exact_count_many_shapes(name):
    rng = np.random.default_rng(1)
    gen = torch.Generator().manual_seed(3)
    for d, r, l in SHAPES:
        for ratio in [*RATIOS, float(rng.random())]:
            B, A = rand_pair(rng, d, r, l, torch.float32)
            Bs, As = sparsify(name, B, A, ratio, gen)
            n_total = r * (d + l)
            expected = n_total if name == "none" else round(ratio * n_total)
            assert int((Bs != 0).sum() + (As != 0).sum()) == expected, (name, d, r, l, ratio)
            assert Bs.dtype == B.dtype and As.dtype == A.dtype
            assert Bs.shape == B.shape and As.shape == A.shape
            # kept entries carry the original values
            assert torch.equal(Bs[Bs != 0], B[Bs != 0]) and torch.equal(As[As != 0], A[As != 0])


def test_tiny_ratio_keeps_one():
    B, A = rand_pair(np.random.default_rng(2), 5, 3, 5)
    ratio = 0.6 / 30  # round(0.6) = 1
    for name in ["soft", "topk", "random", "structured"]:
        Bs, As = sparsify(name, B, A, ratio, torch.Generator().manual_seed(0))
        assert int((Bs != 0).sum() + (As != 0).sum()) == 1


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
@pytest.mark.parametrize("name", NAMES)
def test_dtype_preserved_and_mask_count(name, dtype):
    B, A = rand_pair(np.random.default_rng(3), 6, 3, 5, dtype)
    mB, mA = sparsify_masks(name, B, A, 0.4, torch.Generator().manual_seed(0))
    assert mB.dtype == torch.bool and mA.dtype == torch.bool
    assert int(mB.sum() + mA.sum()) == (33 if name == "none" else round(0.4 * 33))
    Bs, As = sparsify(name, B, A, 0.4, torch.Generator().manual_seed(0))
    assert Bs.dtype == dtype and As.dtype == dtype


# ----------------------------------------------------------------------------- references


def test_topk_matches_reference():
    rng = np.random.default_rng(4)
    for d, r, l in SHAPES:
        for ratio in RATIOS:
            B, A = rand_pair(rng, d, r, l)
            mB, mA = sparsify_masks("topk", B, A, ratio)
            k = round(ratio * r * (d + l))
            assert mask_set(mB, mA) == ref_topk(B.numpy(), A.numpy(), k)


def test_soft_matches_reference():
    rng = np.random.default_rng(5)
    for d, r, l in SHAPES:
        for ratio in RATIOS:
            B, A = rand_pair(rng, d, r, l)
            k = round(ratio * r * (d + l))
            mB, mA = sparsify_masks("soft", B, A, ratio)
            kept, counts = ref_soft(B.numpy(), A.numpy(), k)
            assert mask_set(mB, mA) == kept, (d, r, l, ratio)
            per_comp = (mB.sum(0) + mA.sum(1)).tolist()
            assert per_comp == counts
            assert SoftSparsifier().component_budget(B, A, k).tolist() == counts


def test_soft_overflow_redistribution():
    """A dominant component would get more than d+l entries: capped, rest redistributed."""
    rng = np.random.default_rng(6)
    d, r, l = 3, 4, 2  # d + l = 5 candidates per component, 20 in all
    seen_cap = 0
    for trial in range(30):
        B, A = rand_pair(rng, d, r, l)
        B[:, 0] *= 50.0  # component 0 dominates
        A[1, :] *= 8.0  # component 1 is large too
        ratio = [0.5, 0.6, 0.75, 0.9][trial % 4]
        k = round(ratio * r * (d + l))
        w = (B.square().sum(0) * A.square().sum(1)).tolist()
        unconstrained = k * w[0] / sum(w)
        mB, mA = sparsify_masks("soft", B, A, ratio)
        counts = (mB.sum(0) + mA.sum(1)).tolist()
        kept, ref_counts = ref_soft(B.numpy(), A.numpy(), k)
        assert counts == ref_counts and mask_set(mB, mA) == kept
        assert sum(counts) == k and max(counts) <= d + l
        if unconstrained > d + l:
            seen_cap += 1
            assert counts[0] == d + l
    assert seen_cap >= 10  # the redistribution path was exercised


def test_soft_all_zero_spreads_uniformly():
    B = torch.zeros(4, 3)
    A = torch.zeros(3, 2)
    mB, mA = sparsify_masks("soft", B, A, 0.5)  # k = 9, capacity 6 -> 3, 3, 3
    assert (mB.sum(0) + mA.sum(1)).tolist() == [3, 3, 3]
    # ties: within a component, the B part first (rows 0, 1, 2)
    assert mB[:3].all() and not mB[3].any() and not mA.any()


def test_soft_zero_component_gets_nothing():
    rng = np.random.default_rng(7)
    B, A = rand_pair(rng, 5, 3, 4)
    B[:, 1] = 0.0  # component 1 has zero importance
    mB, mA = sparsify_masks("soft", B, A, 0.5)
    counts = (mB.sum(0) + mA.sum(1)).tolist()
    assert counts[1] == 0 and sum(counts) == round(0.5 * 27)


def test_structured_matches_reference():
    rng = np.random.default_rng(8)
    for d, r, l in SHAPES:
        for ratio in RATIOS:
            B, A = rand_pair(rng, d, r, l)
            k = round(ratio * r * (d + l))
            mB, mA = sparsify_masks("structured", B, A, ratio)
            assert mask_set(mB, mA) == ref_structured(B.numpy(), A.numpy(), k)


def test_structured_keeps_low_indices():
    B, A = rand_pair(np.random.default_rng(9), 4, 4, 4)
    mB, mA = sparsify_masks("structured", B, A, 0.5)  # 16 of 32: components 0 and 1
    assert mB[:, :2].all() and mA[:2].all() and not mB[:, 2:].any() and not mA[2:].any()


def test_ties_lower_index_first():
    B = torch.ones(3, 2)
    A = torch.ones(2, 3)
    mB, mA = sparsify_masks("topk", B, A, 4 / 12)  # k = 4 -> B[0,0], B[0,1], B[1,0], B[1,1]
    assert mB.tolist() == [[True, True], [True, True], [False, False]] and not mA.any()
    assert mask_set(mB, mA) == ref_topk(B.numpy(), A.numpy(), 4)
    mB, mA = sparsify_masks("soft", B, A, 5 / 12)  # equal weights: 3, 2
    assert mask_set(mB, mA) == ref_soft(B.numpy(), A.numpy(), 5)[0]
    assert (mB.sum(0) + mA.sum(1)).tolist() == [3, 2]


def test_none_keeps_everything():
    B, A = rand_pair(np.random.default_rng(10), 4, 2, 3)
    for ratio in [0.0, 0.3, 1.0]:
        Bs, As = sparsify("none", B, A, ratio)
        assert torch.equal(Bs, B) and torch.equal(As, A)


def test_inputs_not_modified():
    B, A = rand_pair(np.random.default_rng(11), 4, 2, 3)
    B0, A0 = B.clone(), A.clone()
    for name in NAMES:
        sparsify(name, B, A, 0.5, torch.Generator().manual_seed(0))
        assert torch.equal(B, B0) and torch.equal(A, A0)


def test_apply_masks_zeroes_nonfinite_outside_mask():
    B = torch.tensor([[float("inf")], [2.0]])
    A = torch.tensor([[float("nan"), 3.0]])
    Bs, As = apply_masks(B, A, torch.tensor([[False], [True]]), torch.tensor([[False, True]]))
    assert Bs.tolist() == [[0.0], [2.0]] and As.tolist() == [[0.0, 3.0]]


# ----------------------------------------------------------------------------- random


def test_random_reproducible_and_generator_dependent():
    B, A = rand_pair(np.random.default_rng(12), 16, 4, 12)
    m1 = sparsify_masks("random", B, A, 0.3, torch.Generator().manual_seed(42))
    m2 = sparsify_masks("random", B, A, 0.3, torch.Generator().manual_seed(42))
    m3 = sparsify_masks("random", B, A, 0.3, torch.Generator().manual_seed(43))
    assert torch.equal(m1[0], m2[0]) and torch.equal(m1[1], m2[1])
    assert not (torch.equal(m1[0], m3[0]) and torch.equal(m1[1], m3[1]))
    # masks do not depend on the values
    m4 = sparsify_masks("random", B * 7 + 1, A - 3, 0.3, torch.Generator().manual_seed(42))
    assert torch.equal(m1[0], m4[0]) and torch.equal(m1[1], m4[1])


def test_random_is_uniform():
    d, r, l = 3, 2, 2  # 10 positions, keep 3
    B, A = torch.ones(d, r), torch.ones(r, l)
    gen = torch.Generator().manual_seed(0)
    n_draws = 3000
    freq = np.zeros(10)
    for _ in range(n_draws):
        mB, mA = sparsify_masks("random", B, A, 0.3, gen)
        freq += np.concatenate([mB.numpy().ravel(), mA.numpy().ravel()])
    p = 0.3
    sd = math.sqrt(n_draws * p * (1 - p))
    assert np.all(np.abs(freq - n_draws * p) < 5 * sd)


# ----------------------------------------------------------------------------- registry/errors


def test_registry_contents():
    assert set(NAMES) <= set(SPARSIFIERS)
    for name in NAMES:
        sp = get_sparsifier(name)
        assert isinstance(sp, Sparsifier) and sp.name == name


def test_unknown_name_lists_accepted():
    B, A = torch.ones(2, 1), torch.ones(1, 2)
    with pytest.raises(ValueError) as info:
        sparsify("nope", B, A, 0.5)
    for name in NAMES:
        assert repr(name) in str(info.value)
    with pytest.raises(ValueError):
        get_sparsifier("nope")


@pytest.mark.parametrize("ratio", [-0.1, 1.0001, float("nan"), float("inf"), "half"])
def test_bad_ratio(ratio):
    B, A = torch.ones(2, 1), torch.ones(1, 2)
    with pytest.raises(ValueError, match="ratio"):
        sparsify("topk", B, A, ratio)


def test_shape_mismatch():
    with pytest.raises(ValueError):
        sparsify("soft", torch.ones(4, 2), torch.ones(3, 4), 0.5)
    with pytest.raises(ValueError):
        sparsify("topk", torch.ones(4), torch.ones(1, 4), 0.5)
    with pytest.raises(ValueError):
        get_sparsifier("soft").masks(torch.ones(2, 1), torch.ones(1, 2), 5)


def test_register_custom_sparsifier():
    @SPARSIFIERS.register("_test_first_k")
    class FirstK(Sparsifier):
        def masks(self, B, A, n_keep, generator=None):
            d, r, l = self.check_inputs(B, A, n_keep)
            flat = torch.zeros(r * (d + l), dtype=torch.bool)
            flat[:n_keep] = True
            return flat[: d * r].reshape(d, r), flat[d * r :].reshape(r, l)

    try:
        Bs, As = sparsify("_test_first_k", torch.ones(2, 2), torch.ones(2, 2), 0.75)
        assert Bs.tolist() == [[1, 1], [1, 1]] and As.tolist() == [[1, 1], [0, 0]]

        with pytest.raises(ValueError, match="already registered"):

            @SPARSIFIERS.register("_test_first_k")
            class Other(Sparsifier):
                def masks(self, B, A, n_keep, generator=None):
                    raise NotImplementedError
    finally:
        SPARSIFIERS.unregister("_test_first_k")
