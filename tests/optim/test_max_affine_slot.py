"""P3 over a maximum of lines (optim/max_affine_slot.py): the exact solver against CVXPY and a
dense grid on random instances, the single line against ``solve_affine_slot``, the upper
envelope by hand, and bad input refused."""

from __future__ import annotations

import numpy as np
import pytest

from optim.max_affine_slot import max_affine_delay_s, solve_max_affine_slot, upper_envelope
from optim.online import solve_affine_slot


def _instance(rng: np.random.Generator) -> tuple[dict, np.ndarray, np.ndarray]:
    lines = int(rng.integers(1, 9))
    kw = {
        "queue": float(rng.uniform(0.0, 5.0)),
        "V": float(rng.uniform(1e-3, 1.0)),
        "offset": float(rng.uniform(0.0, 1.0)),
        "a": float(rng.uniform(1e-3, 1.0)),
        "o_min": float(rng.uniform(0.01, 0.5)),
        "energy_price_jw": float(rng.choice([0.0, rng.uniform(0.0, 2.0)])),
        "shares": np.ones(3),
    }
    return kw, rng.uniform(0.0, 2.0, lines), rng.uniform(0.0, 1.0, lines)


def _f(kw: dict, c: np.ndarray, c0: np.ndarray, o: np.ndarray) -> np.ndarray:
    delay = np.max(c0[:, None] + c[:, None] * o[None, :], axis=0)
    w = kw["queue"] + kw["energy_price_jw"]
    return w * delay + kw["V"] * (kw["offset"] + kw["a"] * (1 - o) ** 2 / o**4)


def test_the_exact_solver_agrees_with_cvxpy_and_beats_a_dense_grid():
    pytest.importorskip("cvxpy")
    rng = np.random.default_rng(11)
    gaps = []
    for _ in range(30):
        kw, c, c0 = _instance(rng)
        exact = solve_max_affine_slot(delay_per_ratio_s=c, fixed_delay_s=c0, **kw)
        conic = solve_max_affine_slot(delay_per_ratio_s=c, fixed_delay_s=c0, method="cvxpy", **kw)
        grid = np.linspace(kw["o_min"], 1.0, 20_001)
        best = float(_f(kw, c, c0, grid).min())
        assert exact.objective <= best * (1 + 1e-12) + 1e-15
        assert exact.objective <= conic.objective * (1 + 1e-12)
        gaps.append((conic.objective - exact.objective) / exact.objective)
        assert exact.delay_s == pytest.approx(max_affine_delay_s(c, c0, exact.sparsification))
        assert kw["o_min"] <= exact.sparsification <= 1.0
    assert max(gaps) < 1e-6  # CVXPY reaches the exact optimum to its tolerance


def test_one_line_is_p3_as_solve_affine_slot_solves_it():
    rng = np.random.default_rng(5)
    for _ in range(20):
        kw, c, c0 = _instance(rng)
        one = solve_max_affine_slot(delay_per_ratio_s=c[:1], fixed_delay_s=c0[:1], **kw)
        ref = solve_affine_slot(delay_per_ratio_s=float(c[0]), fixed_delay_s=float(c0[0]), **kw)
        assert one.sparsification == pytest.approx(ref.sparsification, rel=1e-12, abs=1e-15)
        assert one.objective == pytest.approx(ref.objective, rel=1e-12)


def test_the_upper_envelope_by_hand():
    # lines 1, 0.5 + O, 2 O on [0.05, 1]: all three meet at O = 0.5, where 2 O takes over
    pieces = upper_envelope(np.array([0.0, 1.0, 2.0]), np.array([1.0, 0.5, 0.0]), 0.05)
    assert pieces == [(0.05, 0.5, 0), (0.5, 1.0, 2)]
    # a line below another everywhere never appears; equal lines: one piece
    assert upper_envelope(np.array([1.0, 1.0]), np.array([0.2, 0.1]), 0.1) == [(0.1, 1.0, 0)]


def test_a_bent_delay_moves_the_ratio_to_the_kink():
    # D(O) = max(0.3, O): flat until 0.3, so below 0.3 sparsifying buys no time; a heavy queue
    # pushes O down to the kink and no further
    sol = solve_max_affine_slot(
        queue=1e3,
        V=1e-3,
        delay_per_ratio_s=[0.0, 1.0],
        fixed_delay_s=[0.3, 0.0],
        offset=0.0,
        a=1.0,
        o_min=0.05,
        shares=[1.0],
    )
    assert sol.sparsification == pytest.approx(0.3, rel=1e-12)


@pytest.mark.parametrize(
    ("c", "c0", "method"),
    [
        ([], [], "exact"),
        ([1.0], [1.0, 2.0], "exact"),
        ([-1.0], [0.0], "exact"),
        ([np.inf], [0.0], "exact"),
        ([1.0], [0.0], "newton"),
    ],
)
def test_bad_input_is_refused(c, c0, method):
    with pytest.raises(ValueError):
        solve_max_affine_slot(
            queue=1.0,
            V=1.0,
            delay_per_ratio_s=c,
            fixed_delay_s=c0,
            offset=0.0,
            a=1.0,
            o_min=0.1,
            shares=[1.0],
            method=method,
        )
