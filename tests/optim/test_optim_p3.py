"""P3 (eq. 29): exact solver vs CVXPY vs an independent root find; convexity; eq. (30)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import brentq

from optim import BoundConstants, convergence_bound, solve_slot
from optim.p3 import p3_derivative, p3_objective, p3_second_derivative, solve_p3_exact
from optim.p3_cvxpy import P3CvxpyProblem, default_problem

P = 36_864


def _instance(rng: np.random.Generator, regime: str) -> dict:
    n = int(rng.integers(1, 300))
    k = int(rng.integers(1, n + 1))
    consts = BoundConstants(
        S=float(rng.uniform(0.2, 3)),
        H=float(rng.uniform(0, 2)),
        W=float(rng.uniform(0.2, 2)),
        phi=float(rng.uniform(0, 0.5)),
        G=float(rng.uniform(0.1, 3)),
        eta=float(10 ** rng.uniform(-4, -1)),
        E=int(rng.integers(1, 10)),
        r_max=int(rng.integers(1, 65)),
    )
    queue = float(10 ** rng.uniform(-3, 3))
    V = float(10 ** rng.uniform(-6, 1))
    if regime == "tiny_queue":  # optimum at (or within 1e-5 of) O = 1, solved by CVXPY
        queue, V = 1e-15, 1.0
    if regime == "huge_queue":  # optimum pinned at O_min, solved by CVXPY
        queue, V = 1e9, 1e-9
    if regime == "zero_queue":  # closed form O = 1
        queue = 0.0
    if regime == "zero_V":  # closed form O = O_min
        V = 0.0
    return dict(
        queue=queue,
        V=V,
        snr=10 ** rng.uniform(-1, 3, size=k),
        rank=int(rng.integers(1, consts.r_max + 1)),
        n_clients=n,
        params_per_rank=float(rng.uniform(1e3, 1e5)),
        bits_per_value=float(rng.choice([8, 16, 32])),
        bandwidth_hz=float(10 ** rng.uniform(5, 7)),
        o_min=float(10 ** rng.uniform(-3, -0.05)),
        constants=consts,
    )


REGIMES = (
    ["interior"] * 50
    + ["tiny_queue"] * 6
    + ["huge_queue"] * 6
    + ["zero_queue"] * 3
    + ["zero_V"] * 3
)


def _objective(kw: dict, o: float) -> float:
    """Q D^t(O) + V gamma^t(O) computed from scratch (bits over equal-delay rates)."""
    snr = kw["snr"]
    c = (
        kw["bits_per_value"]
        * kw["rank"]
        * kw["params_per_rank"]
        * np.sum(1.0 / (kw["bandwidth_hz"] * np.log2(1.0 + snr)))
    )
    g = convergence_bound(
        rank=kw["rank"],
        sparsification=o,
        n_scheduled=snr.size,
        n_clients=kw["n_clients"],
        constants=kw["constants"],
    )
    return kw["queue"] * c * o + kw["V"] * g


def test_exact_and_cvxpy_agree_on_many_instances():
    rng = np.random.default_rng(2024)
    prob = P3CvxpyProblem()
    hits = {"o_min": 0, "one": 0, "interior": 0}
    for regime in REGIMES:
        kw = _instance(rng, regime)
        ex = solve_slot(method="exact", **kw)
        cv = solve_slot(method="cvxpy", cvxpy_problem=prob, **kw)
        assert not cv.fell_back
        # Q c = 0 or V a = 0: closed-form optimum, reported as answered by the exact solver
        assert cv.method == ("exact" if regime.startswith("zero") else "cvxpy")
        f_ex, f_cv = _objective(kw, ex.sparsification), _objective(kw, cv.sparsification)
        assert ex.objective == pytest.approx(f_ex, rel=1e-12)
        assert cv.objective == pytest.approx(f_cv, rel=1e-12)
        assert f_cv == pytest.approx(f_ex, rel=1e-6), (regime, kw)
        assert f_ex <= f_cv * (1 + 1e-12)  # the exact solver is never worse
        if cv.method != "cvxpy":
            continue
        o = cv.sparsification
        if o == kw["o_min"]:
            hits["o_min"] += 1
        elif o >= 1.0 - 1e-5:
            hits["one"] += 1
        else:
            hits["interior"] += 1
    assert hits["o_min"] >= 6 and hits["one"] >= 6 and hits["interior"] >= 20, hits


def test_exact_matches_brentq_on_the_derivative():
    rng = np.random.default_rng(7)
    for _ in range(300):
        qc = float(10 ** rng.uniform(-8, 8))
        va = float(10 ** rng.uniform(-8, 8))
        o_min = float(10 ** rng.uniform(-4, -0.01))
        o = solve_p3_exact(qc=qc, va=va, o_min=o_min)

        def deriv(x, qc=qc, va=va):
            return p3_derivative(x, qc=qc, V=1.0, a=va)

        if deriv(o_min) >= 0:
            assert o == o_min
        else:
            # derivative at O = 1 is Q c > 0: the root is bracketed on [O_min, 1]
            want = brentq(deriv, o_min, 1.0, xtol=1e-15, rtol=4 * np.finfo(float).eps)
            assert o == pytest.approx(want, rel=1e-10, abs=1e-14)


def test_exact_edge_cases():
    assert solve_p3_exact(qc=0.0, va=3.0, o_min=0.1) == 1.0  # no queue: keep everything
    assert solve_p3_exact(qc=0.0, va=0.0, o_min=0.1) == 1.0
    assert solve_p3_exact(qc=2.0, va=0.0, o_min=0.1) == 0.1  # V = 0: minimise delay
    assert solve_p3_exact(qc=1e30, va=1e-30, o_min=0.2) == 0.2


def test_objective_is_convex_on_unit_interval():
    rng = np.random.default_rng(3)
    o = np.linspace(1e-3, 1.0, 4001)
    for _ in range(50):
        qc, va = float(10 ** rng.uniform(-4, 4)), float(10 ** rng.uniform(-4, 4))
        f = p3_objective(o, qc=qc, V=1.0, offset=float(rng.uniform(0, 10)), a=va)
        second = f[:-2] - 2 * f[1:-1] + f[2:]
        assert np.all(second >= -1e-12 * np.abs(f[1:-1])), "second differences must be >= 0"


def test_eq30_second_derivative_has_W4_not_W2():
    c = BoundConstants(S=1.3, W=1.7, H=0.4, phi=0.2)
    n, k, r, V = 60, 6, 5, 0.37
    h = 1e-4
    for o in (0.1, 0.35, 0.8, 0.999):

        def f(x):
            return V * convergence_bound(
                rank=r, sparsification=x, n_scheduled=k, n_clients=n, constants=c
            )

        fd2 = (
            (f(o + h if o + h <= 1 else 1.0) - 2 * f(o) + f(o - h)) / h**2
            if o + h <= 1
            else ((f(o) - 2 * f(o - h) + f(o - 2 * h)) / h**2)
        )
        a = 4 * n * r * c.S**2 * c.W**4 / k
        corrected = V * 8 * n * r * c.S**2 * c.W**4 / (k * o**6) * (3 * o**2 - 12 * o + 10)
        printed = V * 8 * n * r * c.S**2 * c.W**2 / (k * o**6) * (3 * o**2 - 12 * o + 10)
        assert p3_second_derivative(o, V=V, a=a) == pytest.approx(corrected, rel=1e-12)
        assert fd2 == pytest.approx(corrected, rel=2e-3)
        assert abs(fd2 - printed) > 0.5 * abs(corrected - printed)  # the printed W^2 is off


def test_first_derivative_matches_finite_differences():
    for qc, va, o in [(1.0, 0.1, 0.3), (5.0, 2.0, 0.7), (0.0, 1.0, 0.5)]:
        h = 1e-6
        fd = (
            p3_objective(o + h, qc=qc, V=1.0, offset=0.0, a=va)
            - p3_objective(o - h, qc=qc, V=1.0, offset=0.0, a=va)
        ) / (2 * h)
        assert p3_derivative(o, qc=qc, V=1.0, a=va) == pytest.approx(fd, rel=1e-6)


def test_cvxpy_problem_is_dpp_and_cached():
    prob = default_problem()
    assert prob.problem.is_dpp()
    assert default_problem() is prob  # built once, re-solved afterwards
    res = prob.solve(qc=1.0, va=1e-3, o_min=0.05)
    assert res.status == "optimal" and res.solver == "CLARABEL"
    assert res.sparsification == pytest.approx(
        solve_p3_exact(qc=1.0, va=1e-3, o_min=0.05), rel=1e-5
    )
