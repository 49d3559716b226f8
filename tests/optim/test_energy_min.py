"""Least round energy under a completion-time limit (Yang et al.) and its baselines.

Checked against CVXPY problems written here (exponential cone), against brute force on K = 2,
and for feasibility with every rate recomputed from the returned power and share.
"""

from __future__ import annotations

import math

import cvxpy as cp
import numpy as np
import pytest
from optim_instances import B_HZ, random_devices

from optim import (
    ENERGY_MIN_METHODS,
    DeadlineInfeasibleError,
    client_block,
    min_feasible_deadline_s,
    solve_energy_min,
)

LN2 = math.log(2.0)


def instance(rng: np.random.Generator, k: int) -> dict:
    bits = rng.uniform(1e4, 4e5, k)
    return dict(bits=bits, **random_devices(rng, k))


def least_deadline(kw: dict) -> float:
    return min_feasible_deadline_s(client_block(**kw))


def check_feasible(sol, kw: dict, deadline: float) -> None:
    """Every constraint, with the rate recomputed from (p, b) as the problem states it."""
    rate = sol.share * B_HZ * np.log2(1.0 + sol.power_w * kw["snr_per_w"] / sol.share)
    upload = kw["bits"] / rate
    compute = kw["cycles"] / sol.frequency_hz
    assert sol.share.sum() <= 1.0 + 1e-9
    assert np.all(sol.power_w <= kw["p_max_w"] * (1 + 1e-9))
    assert np.all(sol.frequency_hz >= kw["f_min_hz"] * (1 - 1e-9))
    assert np.all(sol.frequency_hz <= kw["f_max_hz"] * (1 + 1e-9))
    assert np.all(compute + upload <= deadline * (1 + 1e-6))
    energy = kw["kappa"] * kw["cycles"] * sol.frequency_hz**2 + sol.power_w * upload
    assert sol.energy_j == pytest.approx(energy.sum(), rel=1e-6)


def test_infeasible_deadline_names_the_least_round_time():
    kw = instance(np.random.default_rng(0), 3)
    least = least_deadline(kw)
    for method in ENERGY_MIN_METHODS:
        with pytest.raises(DeadlineInfeasibleError, match="least achievable round time") as err:
            solve_energy_min(deadline_s=0.5 * least, method=method, **kw)
        assert err.value.min_deadline_s >= least * (1 - 1e-9)
    with pytest.raises(ValueError, match="method must be one of"):
        solve_energy_min(deadline_s=2 * least, method="nope", **kw)


def test_least_deadline_matches_an_independent_root():
    """At T_min, full power and f_max, the least shares sum to 1 (brentq on each client)."""
    from scipy.optimize import brentq

    for seed in range(50):
        kw = instance(np.random.default_rng(seed), 3)
        t_min = least_deadline(kw)
        tau = kw["cycles"] / kw["f_max_hz"]
        total = 0.0
        for k in range(3):
            need = kw["bits"][k] / (t_min - tau[k])
            a = kw["p_max_w"][k] * kw["snr_per_w"][k]
            total += brentq(lambda b, a=a, n=need: b * B_HZ * np.log2(1 + a / b) - n, 1e-15, 1e6)
        assert total == pytest.approx(1.0, rel=1e-6)


def _cvxpy_fixed_split(kw: dict, deadline: float, weight: np.ndarray) -> float:
    """Shares at fixed times (f = f_max, upload for the rest): exponential cone per client.

    u_k >= b_k exp(c_k / b_k), c_k = ln2 s_k / (t_k B); energy t_k (u_k - b_k) / snr_k;
    power (u_k - b_k) / snr_k <= p_max,k.
    """
    tau = kw["cycles"] / kw["f_max_hz"]
    t = deadline - tau
    c = LN2 * kw["bits"] / (t * B_HZ)
    k = t.size
    b, u = cp.Variable(k), cp.Variable(k)
    snr = kw["snr_per_w"]
    cons = [cp.sum(b) <= 1, (u - b) / snr <= kw["p_max_w"]]
    cons += [cp.constraints.ExpCone(cp.Constant(c[i]), b[i], u[i]) for i in range(k)]
    up = cp.sum(cp.multiply(weight * t / snr, u - b))
    cmp_j = np.sum(weight * kw["kappa"] * kw["cycles"] * kw["f_max_hz"] ** 2)
    cp.Problem(cp.Minimize(up), cons).solve(solver=cp.CLARABEL)
    return float(up.value) + cmp_j


def _cvxpy_equal_share(kw: dict, deadline: float) -> float:
    """Times at b = 1/K: u_k >= t_k exp(c_k / t_k), c_k = ln2 s_k / (b B); energy
    kappa C^3 tau^-2 + b (u - t) / snr; power b (u/t - 1) / snr <= p_max as u <= t (1 + p snr / b).
    """
    k = kw["bits"].size
    share = 1.0 / k
    c = LN2 * kw["bits"] / (share * B_HZ)
    t, tau, u = cp.Variable(k), cp.Variable(k), cp.Variable(k)
    snr, cyc = kw["snr_per_w"], kw["cycles"]
    cons = [t + tau <= deadline, tau >= cyc / kw["f_max_hz"], tau <= cyc / kw["f_min_hz"]]
    cons += [u <= cp.multiply(t, 1 + kw["p_max_w"] * snr / share)]
    cons += [cp.constraints.ExpCone(cp.Constant(c[i]), t[i], u[i]) for i in range(k)]
    energy = cp.sum(cp.multiply(kw["kappa"] * cyc**3, cp.power(tau, -2)))
    energy += cp.sum(cp.multiply(share / snr, u - t))
    cp.Problem(cp.Minimize(energy), cons).solve(solver=cp.CLARABEL)
    return float(energy.value)


def test_fixed_split_shares_match_cvxpy_on_50_instances():
    for seed in range(50):
        rng = np.random.default_rng(100 + seed)
        kw = instance(rng, int(rng.integers(2, 6)))
        deadline = least_deadline(kw) * rng.uniform(1.05, 3.0)
        weight = rng.uniform(0.1, 5.0, kw["bits"].size)
        sol = solve_energy_min(deadline_s=deadline, method="max_frequency", weight=weight, **kw)
        check_feasible(sol, kw, deadline)
        ref = _cvxpy_fixed_split(kw, deadline, weight)
        assert sol.objective == pytest.approx(ref, rel=1e-5)
        assert sol.gap <= 1e-6 * sol.objective


def test_equal_share_times_match_cvxpy_on_50_instances():
    for seed in range(50):
        rng = np.random.default_rng(200 + seed)
        kw = instance(rng, int(rng.integers(2, 6)))
        deadline = least_deadline(kw) * rng.uniform(1.05, 3.0)
        deadline = max(deadline, min_feasible_deadline_s(client_block(**kw), "equal_bandwidth"))
        sol = solve_energy_min(deadline_s=deadline, method="equal_bandwidth", **kw)
        check_feasible(sol, kw, deadline)
        assert sol.energy_j == pytest.approx(_cvxpy_equal_share(kw, deadline), rel=1e-5)


def _brute_force(kw: dict, deadline: float, n: int = 301) -> float:
    """K = 2: share b_1 on a grid, each client's upload time on a grid, power limit enforced."""
    b1 = np.linspace(0.0, 1.0, n)[1:-1]
    best = np.zeros_like(b1)
    for k, share in enumerate((b1, 1.0 - b1)):
        tau_min = kw["cycles"][k] / kw["f_max_hz"][k]
        tau_max = kw["cycles"][k] / kw["f_min_hz"][k]
        t = np.linspace(max(deadline - tau_max, 1e-9), deadline - tau_min, n)[:, None]
        y = t * share[None, :]
        with np.errstate(over="ignore"):
            power = (share / kw["snr_per_w"][k]) * np.expm1(LN2 * kw["bits"][k] / (y * B_HZ))
        energy = kw["kappa"] * kw["cycles"][k] ** 3 / (deadline - t) ** 2 + power * t
        energy = np.where(power <= kw["p_max_w"][k], energy, np.inf)
        best = best + energy.min(axis=0)
    return float(best.min())


def test_never_worse_than_brute_force_on_50_instances():
    for seed in range(50):
        rng = np.random.default_rng(300 + seed)
        kw = instance(rng, 2)
        deadline = least_deadline(kw) * rng.uniform(1.1, 3.0)
        sol = solve_energy_min(deadline_s=deadline, **kw)
        check_feasible(sol, kw, deadline)
        assert sol.energy_j <= _brute_force(kw, deadline) * (1 + 1e-6)


def test_energy_falls_as_the_limit_loosens_and_beats_every_baseline():
    for seed in range(50):
        rng = np.random.default_rng(400 + seed)
        kw = instance(rng, 3)
        block = client_block(**kw)
        least = max(min_feasible_deadline_s(block, m) for m in ENERGY_MIN_METHODS)
        deadlines = least * np.array([1.01, 1.5])
        energies = [solve_energy_min(deadline_s=d, **kw).energy_j for d in deadlines]
        assert energies[0] >= energies[1] * (1 - 1e-9)
        for method in ENERGY_MIN_METHODS[1:]:
            base = solve_energy_min(deadline_s=deadlines[1], method=method, **kw)
            check_feasible(base, kw, deadlines[1])
            assert energies[1] <= base.energy_j * (1 + 1e-6), method
        mp = solve_energy_min(deadline_s=deadlines[1], method="max_power", **kw)
        assert np.allclose(mp.power_w, kw["p_max_w"])


def _cvxpy_max_power(kw: dict, deadline: float) -> float:
    """p = p_max: t_k >= (ln2 s_k / B) / (b_k ln(1 + a_k / b_k)), with
    b ln(1 + a/b) = -rel_entr(b, b + a) (concave); compute time tau_k <= T - t_k and <= C / f_min;
    energy p_max t + kappa C^3 tau^-2."""
    k = kw["bits"].size
    a = kw["p_max_w"] * kw["snr_per_w"]
    b, t, tau = cp.Variable(k), cp.Variable(k), cp.Variable(k)
    cyc = kw["cycles"]
    cons = [cp.sum(b) <= 1, tau <= deadline - t, tau <= cyc / kw["f_min_hz"]]
    cons += [t >= cp.multiply(LN2 * kw["bits"] / B_HZ, cp.inv_pos(-cp.rel_entr(b, b + a)))]
    energy = cp.sum(cp.multiply(kw["p_max_w"], t))
    energy += cp.sum(cp.multiply(kw["kappa"] * cyc**3, cp.power(tau, -2)))
    cp.Problem(cp.Minimize(energy), cons).solve(solver=cp.CLARABEL)
    return float(energy.value)


def test_max_power_baseline_matches_cvxpy_on_50_instances():
    for seed in range(50):
        rng = np.random.default_rng(500 + seed)
        kw = instance(rng, int(rng.integers(2, 6)))
        deadline = least_deadline(kw) * rng.uniform(1.05, 3.0)
        sol = solve_energy_min(deadline_s=deadline, method="max_power", **kw)
        check_feasible(sol, kw, deadline)
        assert sol.energy_j == pytest.approx(_cvxpy_max_power(kw, deadline), rel=1e-5)


def test_a_client_without_bits_bounds_the_round_by_its_compute():
    """T below a bits-less client's C / f_max is infeasible; with no bits anywhere the band is
    never scarce (price 0) and each client computes as slowly as T allows: w kappa C^3 / tau^2,
    tau = min(T, C / f_min)."""
    for seed in range(20):
        rng = np.random.default_rng(800 + seed)
        kw = instance(rng, 3)
        kw["bits"][0] = 0.0
        kw["cycles"][0] = 2e9  # C / f_max >= 1 s: slower than the others' least round
        tau_min = kw["cycles"][0] / kw["f_max_hz"][0]
        assert least_deadline(kw) >= tau_min
        with pytest.raises(DeadlineInfeasibleError):
            solve_energy_min(deadline_s=0.99 * tau_min, **kw)
        kw["bits"] = np.zeros(3)
        weight = rng.uniform(0.5, 5.0, 3)
        deadline = tau_min * rng.uniform(1.0, 3.0)
        sol = solve_energy_min(deadline_s=deadline, weight=weight, **kw)
        tau = np.minimum(deadline, kw["cycles"] / kw["f_min_hz"])
        expected = np.sum(weight * kw["kappa"] * kw["cycles"] ** 3 / tau**2)
        assert sol.objective == pytest.approx(expected, rel=1e-9)
        assert sol.price == 0.0
