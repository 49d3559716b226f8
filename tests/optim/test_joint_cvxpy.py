"""The CVXPY form of the joint step (J2) (optim.joint_cvxpy): its answer is feasible for (J2) and
costs what it claims, recomputed here with the exact rate; and solve_joint_step agrees with it."""

from __future__ import annotations

import math

import numpy as np
import pytest
from optim_instances import B_HZ, random_devices

from optim import solve_joint_step
from optim.joint_cvxpy import JointCvxpyProblem, solve_joint_step_cvxpy, truncation_rtol

# Clarabel's "optimal_inaccurate" answers are part of what the tests measure
pytestmark = pytest.mark.filterwarnings("ignore:Solution may be inaccurate:UserWarning")


def instance(rng: np.random.Generator, k: int, *, ratio_bits: bool) -> dict:
    fixed = rng.uniform(1e4, 1e5, k)
    per = rng.uniform(1e5, 5e5, k) if ratio_bits else np.zeros(k)
    return dict(fixed_bits=fixed, per_ratio_bits=per, **random_devices(rng, k))


def weights(rng: np.random.Generator, k: int) -> dict:
    z = rng.uniform(0.5, 5.0, k)
    z[rng.random(k) < 0.2] = 0.0  # some clients' energy is free
    return dict(
        queue_s=rng.uniform(0.5, 10.0),
        V=rng.uniform(0.1, 10.0),
        energy_queue_j=z,
        offset=0.5,
        a=10 ** rng.uniform(-3, -1),
        o_min=0.05,
    )


def exact_cost(kw: dict, args: dict, ratio: float, found) -> float:
    """V gamma + Q D + sum_k Z_k E_k of CVXPY's decisions, each time and energy recomputed from
    (p, b, tau) with the exact rate b B log2(1 + p snr / b); asserts feasibility."""
    sol = found.at_ratio
    bits = kw["fixed_bits"] + kw["per_ratio_bits"] * ratio
    rate = sol.share * B_HZ * np.log2(1.0 + sol.power_w * kw["snr_per_w"] / sol.share)
    upload = bits / rate
    assert np.sum(sol.share) <= 1.0 + 1e-6
    assert np.all(sol.power_w <= kw["p_max_w"] * (1.0 + 1e-6))
    assert np.all(sol.compute_s >= kw["cycles"] / kw["f_max_hz"] * (1.0 - 1e-6))
    assert np.all(sol.compute_s <= kw["cycles"] / kw["f_min_hz"] * (1.0 + 1e-6))
    assert np.all(sol.compute_s + upload <= sol.round_s * (1.0 + 1e-6))
    freq = kw["cycles"] / sol.compute_s
    energy = kw["kappa"] * kw["cycles"] * freq**2 + sol.power_w * upload
    gamma = args["offset"] + args["a"] * (1.0 - ratio) ** 2 / ratio**4
    energy_j = float(np.sum(args["energy_queue_j"] * energy))
    return args["V"] * gamma + args["queue_s"] * sol.round_s + energy_j


def test_the_step_and_cvxpy_agree_at_a_fixed_ratio_on_50_instances():
    """50 random instances, K = 1 to 4: CVXPY's own cost recomputes to its objective, the step
    is never above CVXPY's answer, and the two agree to 1e-6 (relative) on at least 45 of them
    and to 1e-4 on all (Clarabel stops short on a few, "optimal_inaccurate": the step's answer
    is then lower, and feasible, as test_joint checks); the series truncation is negligible."""
    problems = {k: JointCvxpyProblem(k) for k in range(1, 5)}
    gaps = []
    for seed in range(50):
        rng = np.random.default_rng(1000 + seed)
        k = int(rng.integers(1, 5))
        kw, args = instance(rng, k, ratio_bits=False), weights(rng, k)
        ours = solve_joint_step(**args, **kw)
        theirs = solve_joint_step_cvxpy(**args, **kw, problem=problems[k])
        assert ours.ratio == theirs.ratio == 1.0
        assert theirs.solves == 1
        assert theirs.at_ratio.truncation_rtol <= 1e-9
        assert exact_cost(kw, args, 1.0, theirs) == pytest.approx(theirs.objective, rel=1e-6)
        assert ours.round_s == pytest.approx(theirs.at_ratio.round_s, rel=1e-3)
        gaps.append((theirs.objective - ours.objective) / theirs.objective)
    gaps = np.array(gaps)
    assert gaps.min() >= -1e-9, gaps.min()  # the step is never worse than CVXPY
    assert gaps.max() <= 1e-4, gaps.max()
    assert np.sum(gaps <= 1e-6) >= 45, np.sort(gaps)[-6:]
    assert gaps.max() > 0.0  # two solvers, two answers: all gaps exactly zero would mean one


def test_the_step_and_cvxpy_agree_with_the_ratio_a_decision():
    """A few instances with O free: the same O search over CVXPY solves finds the same O and
    objective."""
    for seed in range(4):
        rng = np.random.default_rng(2000 + seed)
        k = int(rng.integers(2, 4))
        kw, args = instance(rng, k, ratio_bits=True), weights(rng, k)
        ours = solve_joint_step(**args, **kw)
        theirs = solve_joint_step_cvxpy(**args, **kw)
        assert theirs.solves > 5  # the grid of 5 and Brent's refinement
        assert exact_cost(kw, args, theirs.ratio, theirs) == pytest.approx(
            theirs.objective, rel=1e-6
        )
        assert -1e-9 <= (theirs.objective - ours.objective) / theirs.objective <= 1e-5
        assert ours.ratio == pytest.approx(theirs.ratio, abs=1e-3)


def test_truncation_bound_holds_against_the_series_summed_here():
    """The bound on (phi - phi_n) / phi against the tail summed term by term."""
    for x in (0.1, 1.0, 5.0, 12.0, 20.0):
        for terms in (8, 20, 36):
            phi = math.expm1(x) / x
            kept = math.fsum(x**n / math.factorial(n + 1) for n in range(terms))
            bound = float(truncation_rtol(np.array([x]), terms)[0])
            assert (phi - kept) / phi <= bound * (1.0 + 1e-12) + 1e-16
            if x <= 0.5 * (terms + 2):  # and tight where the tail falls fast (inf beyond)
                assert bound <= 2.0 * (phi - kept) / phi + 1e-15


def test_refuses_clients_without_bits_or_cycles():
    rng = np.random.default_rng(0)
    kw, args = instance(rng, 2, ratio_bits=False), weights(rng, 2)
    kw["cycles"] = np.array([1e8, 0.0])
    with pytest.raises(ValueError, match="cycles > 0"):
        solve_joint_step_cvxpy(**args, **kw)
