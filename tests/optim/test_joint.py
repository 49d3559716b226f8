"""The joint Lyapunov step (ratio, power, CPU frequency, shares): closed form with free energy,
brute force on K = 2, feasibility with every rate recomputed from the returned power and share.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from optim_instances import B_HZ, random_devices
from scipy.optimize import brentq

from optim import client_block, min_feasible_deadline_s, solve_energy_min, solve_joint_step
from optim.joint_client import upload_slope
from optim.p3 import p3_objective, solve_p3_exact

LN2 = math.log(2.0)


def instance(rng: np.random.Generator, k: int, *, ratio_bits: bool) -> dict:
    per = rng.uniform(1e5, 5e5, k) if ratio_bits else np.zeros(k)
    fixed = rng.uniform(1e4, 1e5, k)
    return dict(fixed_bits=fixed, per_ratio_bits=per, **random_devices(rng, k))


def least_shares_round_s(bits: np.ndarray, a: np.ndarray, tau: np.ndarray) -> float:
    """Least D with sum_k b_k = 1, b_k B log2(1 + a_k / b_k) = bits_k / (D - tau_k) (brentq)."""

    def total(d: float) -> float:
        return sum(
            brentq(lambda b, n=n, ak=ak: b * B_HZ * np.log1p(ak / b) / LN2 - n, 1e-15, 1e13)
            for n, ak in zip(bits / (d - tau), a, strict=True)
        )

    lo = float(np.max(tau + LN2 * bits / (B_HZ * a))) * (1 + 1e-6)
    hi = 2 * lo
    while total(hi) > 1:
        hi *= 2
    return brentq(lambda d: total(d) - 1.0, lo, hi, xtol=1e-14, rtol=1e-13)


def check(sol, kw: dict, *, queue: float, v: float, z: np.ndarray, offset: float, a: float):
    """Feasibility and the objective of (J2), recomputed from the returned decisions."""
    c = sol.clients
    bits = kw["fixed_bits"] + kw["per_ratio_bits"] * sol.ratio
    rate = c.share * B_HZ * np.log2(1.0 + c.power_w * kw["snr_per_w"] / c.share)
    upload = bits / rate
    compute = kw["cycles"] / c.frequency_hz
    assert c.share.sum() <= 1.0 + 1e-9
    assert np.all(c.power_w <= kw["p_max_w"] * (1 + 1e-9))
    assert np.all(c.frequency_hz >= kw["f_min_hz"] * (1 - 1e-9))
    assert np.all(c.frequency_hz <= kw["f_max_hz"] * (1 + 1e-9))
    assert np.all(compute + upload <= sol.round_s * (1 + 1e-6))
    energy = kw["kappa"] * kw["cycles"] * c.frequency_hz**2 + c.power_w * upload
    gamma = offset + a * (1 - sol.ratio) ** 2 / sol.ratio**4
    objective = v * gamma + queue * sol.round_s + float(np.sum(z * energy))
    assert sol.objective == pytest.approx(objective, rel=1e-6)


def test_free_energy_is_p3_with_the_least_round_time():
    """Z = 0, no compute, bits = s_k O: D(O) = c O with c the least round at O = 1, so (J2) is
    P3 with qc = Q c; full power everywhere."""
    for seed in range(50):
        rng = np.random.default_rng(seed)
        kw = instance(rng, int(rng.integers(1, 5)), ratio_bits=True)
        kw["fixed_bits"] = np.zeros_like(kw["fixed_bits"])
        kw["cycles"] = np.zeros_like(kw["cycles"])
        q, v, a = rng.uniform(0.1, 10), rng.uniform(0.1, 10), 10 ** rng.uniform(-3, -1)
        sol = solve_joint_step(
            queue_s=q, V=v, energy_queue_j=0.0, offset=0.5, a=a, o_min=0.05, **kw
        )
        a_snr = kw["p_max_w"] * kw["snr_per_w"]
        c = least_shares_round_s(kw["per_ratio_bits"], a_snr, np.zeros_like(a_snr))
        o_star = solve_p3_exact(qc=q * c, va=v * a, o_min=0.05)
        assert sol.ratio == pytest.approx(o_star, abs=2e-3)
        best = p3_objective(o_star, qc=q * c, V=v, offset=0.5, a=a)
        assert sol.objective == pytest.approx(best, rel=1e-6)
        assert np.allclose(sol.clients.power_w, kw["p_max_w"])


def test_free_energy_runs_flat_out():
    """Z = 0 with compute: max power, max frequency, the least round time (independent root)."""
    for seed in range(50):
        rng = np.random.default_rng(100 + seed)
        kw = instance(rng, 3, ratio_bits=False)
        sol = solve_joint_step(
            queue_s=2.0, V=1.0, energy_queue_j=0.0, offset=0.0, a=0.1, o_min=0.1, **kw
        )
        assert sol.ratio == 1.0
        assert np.allclose(sol.clients.power_w, kw["p_max_w"])
        assert np.allclose(sol.clients.frequency_hz, kw["f_max_hz"])
        tau = kw["cycles"] / kw["f_max_hz"]
        d_min = least_shares_round_s(kw["fixed_bits"], kw["p_max_w"] * kw["snr_per_w"], tau)
        assert sol.round_s == pytest.approx(d_min, rel=1e-6)
        check(sol, kw, queue=2.0, v=1.0, z=np.zeros(3), offset=0.0, a=0.1)


def test_refuses_a_zero_queue_with_an_energy_price():
    kw = instance(np.random.default_rng(0), 2, ratio_bits=False)
    with pytest.raises(ValueError, match="queue_s must be > 0 when any energy_queue_j"):
        solve_joint_step(queue_s=0.0, V=1.0, energy_queue_j=1.0, offset=0.0, a=0.1, o_min=0.1, **kw)


def _brute_energy(kw: dict, bits: np.ndarray, deadline: float, z: np.ndarray, n: int) -> float:
    """K = 2 at round time D: share b_1 and each upload time on grids, power limit enforced."""
    b1 = np.linspace(0.0, 1.0, n)[1:-1]
    best = np.zeros_like(b1)
    for k, share in enumerate((b1, 1.0 - b1)):
        tau_min = kw["cycles"][k] / kw["f_max_hz"][k]
        tau_max = kw["cycles"][k] / kw["f_min_hz"][k]
        t = np.linspace(max(deadline - tau_max, 1e-9), deadline - tau_min, n)[:, None]
        with np.errstate(over="ignore"):
            power = (share / kw["snr_per_w"][k]) * np.expm1(LN2 * bits[k] / (t * share * B_HZ))
        energy = kw["kappa"] * kw["cycles"][k] ** 3 / (deadline - t) ** 2 + power * t
        energy = np.where(power <= kw["p_max_w"][k], energy, np.inf)
        best = best + z[k] * energy.min(axis=0)
    return float(best.min())


def _brute_force(kw, *, queue, v, z, offset, a, o_min, ratios) -> float:
    best = math.inf
    for o in ratios:
        bits = kw["fixed_bits"] + kw["per_ratio_bits"] * o
        tau = kw["cycles"] / kw["f_max_hz"]
        d_min = least_shares_round_s(bits, kw["p_max_w"] * kw["snr_per_w"], tau)
        gamma = offset + a * (1 - o) ** 2 / o**4
        for d in d_min * np.linspace(1.002, 3.0, 25):
            val = v * gamma + queue * d + _brute_energy(kw, bits, d, z, 121)
            best = min(best, val)
    return best


def _versus_brute_force(seed: int, *, ratio_bits: bool) -> None:
    rng = np.random.default_rng(seed)
    kw = instance(rng, 2, ratio_bits=ratio_bits)
    q, v, a = rng.uniform(0.5, 5), rng.uniform(0.1, 5), 10 ** rng.uniform(-3, -1)
    z = rng.uniform(0.0, 20.0, 2)
    args = dict(queue_s=q, V=v, energy_queue_j=z, offset=0.0, a=a, o_min=0.1)
    sol = solve_joint_step(**args, **kw)
    check(sol, kw, queue=q, v=v, z=z, offset=0.0, a=a)
    ratios = np.linspace(0.1, 1.0, 10) if ratio_bits else [1.0]
    brute = _brute_force(kw, queue=q, v=v, z=z, offset=0.0, a=a, o_min=0.1, ratios=ratios)
    assert sol.objective <= brute * (1 + 1e-6)


def test_fixed_payload_never_worse_than_brute_force():
    for seed in range(3):
        _versus_brute_force(200 + seed, ratio_bits=False)


def test_fixed_payload_never_worse_than_brute_force_on_50_instances():
    for seed in range(50):
        _versus_brute_force(300 + seed, ratio_bits=False)


def test_with_the_ratio_never_worse_than_brute_force_on_50_instances():
    for seed in range(50):
        _versus_brute_force(400 + seed, ratio_bits=True)


def _block_kw(kw: dict, o: float) -> dict:
    out = {n: v for n, v in kw.items() if n not in ("fixed_bits", "per_ratio_bits")}
    return dict(out, bits=kw["fixed_bits"] + kw["per_ratio_bits"] * o)


def test_round_slope_is_the_derivative_of_the_least_energy():
    """dW/dD = sum_k h_k'(t_k) (the envelope theorem the D search rests on), against central
    differences of the least weighted energy W(D) of independent solves."""
    for seed in range(30):
        rng = np.random.default_rng(600 + seed)
        kw = _block_kw(instance(rng, 3, ratio_bits=False), 1.0)
        z = rng.uniform(0.5, 20.0, 3)
        block = client_block(**kw)
        d = min_feasible_deadline_s(block) * rng.uniform(1.2, 3.0)
        sol = solve_energy_min(deadline_s=d, weight=z, **kw)
        slope = float(np.sum(upload_slope(block, sol.upload_s, sol.price, z)))
        h = 1e-4 * d
        up = solve_energy_min(deadline_s=d + h, weight=z, **kw).objective
        down = solve_energy_min(deadline_s=d - h, weight=z, **kw).objective
        assert slope == pytest.approx((up - down) / (2 * h), rel=1e-4)


def test_the_round_time_is_a_minimum_in_d():
    """Q D + W(D) at the returned D is no worse than 0.5 % either side (independent solves)."""
    for seed in range(20):
        rng = np.random.default_rng(700 + seed)
        kw = instance(rng, 4, ratio_bits=True)
        q, z = rng.uniform(0.5, 5), rng.uniform(0.5, 20.0, 4)
        args = dict(queue_s=q, V=1.0, energy_queue_j=z, offset=0.0, a=0.01, o_min=0.1)
        sol = solve_joint_step(**args, **kw)
        block_kw = _block_kw(kw, sol.ratio)
        here = q * sol.round_s + sol.clients.objective
        for d in sol.round_s * np.array([0.995, 1.005]):
            if d >= min_feasible_deadline_s(client_block(**block_kw)):
                other = q * d + solve_energy_min(deadline_s=d, weight=z, **block_kw).objective
                assert here <= other * (1 + 1e-9)


def test_clients_without_bits_pay_only_for_compute():
    """No bits: Q D + sum_k Z_k kappa C_k^3 / min(D, C_k / f_min,k)^2 over D >= max_k C_k / f_max,k,
    against a dense grid of D (and the grid's best, refined by its neighbours, is never beaten)."""
    for seed in range(20):
        rng = np.random.default_rng(900 + seed)
        kw = instance(rng, 3, ratio_bits=False)
        kw["fixed_bits"] = np.zeros(3)
        kw["cycles"] = rng.uniform(1e8, 1e9, 3) * 3
        q, z = rng.uniform(0.1, 5), rng.uniform(0.5, 20.0, 3)
        args = dict(queue_s=q, V=1.0, energy_queue_j=z, offset=0.0, a=0.01, o_min=0.1)
        sol = solve_joint_step(**args, **kw)
        tau_min, tau_max = kw["cycles"] / kw["f_max_hz"], kw["cycles"] / kw["f_min_hz"]
        d = np.linspace(tau_min.max(), 2 * tau_max.max(), 400_001)[:, None]
        values = q * d[:, 0] + np.sum(
            z * kw["kappa"] * kw["cycles"] ** 3 / np.minimum(d, tau_max) ** 2, axis=1
        )
        assert sol.objective <= values.min() * (1 + 1e-9)
        assert sol.objective >= values.min() * (1 - 1e-6)


def _hessian(fn, x: np.ndarray) -> np.ndarray:
    """Central finite-difference Hessian (step 1e-4 of each coordinate)."""
    h = 1e-4 * x
    n = x.size
    out = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            ei, ej = np.eye(n)[i] * h[i], np.eye(n)[j] * h[j]
            out[i, j] = (fn(x + ei + ej) - fn(x + ei - ej) - fn(x - ei + ej) + fn(x - ei - ej)) / (
                4 * h[i] * h[j]
            )
    return 0.5 * (out + out.T)


def test_upload_energy_is_convex_in_time_and_share_but_not_with_the_bits():
    """docs/solvers.md: t b (2^(s/(t b)) - 1) is jointly convex in (t, b), not in (s, t, b)."""

    def energy(x: np.ndarray) -> float:
        s, t, b = x
        return t * b * np.expm1(LN2 * s / (t * b))

    rng = np.random.default_rng(0)
    for _ in range(200):
        s, t, b = np.exp(rng.uniform(-2, 2, 3))
        hess = _hessian(lambda tb, s=s: energy(np.array([s, *tb])), np.array([t, b]))
        assert np.linalg.eigvalsh(hess)[0] >= -1e-6 * np.abs(hess).max()
    low = np.linalg.eigvalsh(_hessian(energy, np.array([5.66, 7.37, 7.21])))
    assert low[0] < -0.05 * low[-1]
