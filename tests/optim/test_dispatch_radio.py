"""Power and clock per dispatch, (D2)-(D3) of docs/solvers.md: against brute force over grids
with an objective written here, the closed-form clock by hand, and the old full-power rule."""

from __future__ import annotations

import math

import numpy as np
import pytest

from optim.dispatch_radio import dispatch_clock_hz, dispatch_power_w, solve_dispatch_radio

B_HZ = 1.0e6


def _instance(rng: np.random.Generator) -> dict:
    """One random candidate: queues, weights, channel, device (scalars)."""
    f_max = rng.uniform(1.0e9, 3.0e9)
    return {
        "queue": float(rng.uniform(0.05, 20.0)),
        "weight": float(rng.choice([0.0, rng.uniform(0.01, 50.0)])),
        "snr_per_w": float(10.0 ** rng.uniform(1.0, 5.0)),
        "share": float(1.0 / rng.integers(1, 6)),
        "p_max_w": float(rng.uniform(0.05, 1.0)),
        "compute_s": float(rng.uniform(0.0, 5.0)),
        "cycles": float(rng.uniform(1.0e8, 1.0e10)),
        "kappa": float(10.0 ** rng.uniform(-29.0, -27.0)),
        "f_min_hz": f_max * rng.uniform(0.1, 0.9),
        "f_max_hz": f_max,
        "bits": float(rng.uniform(1.0e4, 1.0e7)),
        "noise_bandwidth": str(rng.choice(["share", "band"])),
    }


def _objective(x: dict, p: np.ndarray, f: np.ndarray, bits: np.ndarray) -> np.ndarray:
    """Q (c f_max / f + u) + w (kappa C f^2 + p u), u = bits / (b B log2(1 + p g / (N0 b B))):
    the per-dispatch objective without the penalty, written from the problem statement."""
    b = x["share"]
    snr = p * x["snr_per_w"] / (b if x["noise_bandwidth"] == "share" else 1.0)
    upload_s = bits / (b * B_HZ * np.log2(1.0 + snr))
    compute_s = x["compute_s"] * x["f_max_hz"] / f
    energy_j = x["kappa"] * x["cycles"] * f**2 + p * upload_s
    return x["queue"] * (compute_s + upload_s) + x["weight"] * energy_j


def _latency_energy(x: dict, p: np.ndarray, f: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(latency [s], weighted energy) of the whole upload at (p, f), from the two parts above."""
    latency = _objective({**x, "queue": 1.0, "weight": 0.0}, p, f, np.array(x["bits"]))
    energy = _objective({**x, "queue": 0.0, "weight": 1.0}, p, f, np.array(x["bits"]))
    return latency, energy


def _solve(x: dict) -> object:
    """The step at a fixed upload of ``x["bits"]`` (no thinnable values: O plays no part)."""
    args = {k: v for k, v in x.items() if k != "bits"}
    return solve_dispatch_radio(
        V=1.0,
        bandwidth_hz=B_HZ,
        o_min=0.5,
        offset=0.0,
        a=0.0,
        fixed_bits=x["bits"],
        per_ratio_bits=0.0,
        **args,
    )


def test_power_and_clock_match_brute_force_at_fixed_ratio():
    rng = np.random.default_rng(7)
    for _ in range(60):
        x = _instance(rng)
        sol = _solve(x)
        p = np.geomspace(x["p_max_w"] * 1.0e-5, x["p_max_w"], 1500)[:, None]
        f = np.linspace(x["f_min_hz"], x["f_max_hz"], 1500)[None, :]
        grid = _objective(x, p, f, np.array(x["bits"])).min()
        best = _objective(x, sol.tx_power_w, sol.cpu_hz, np.array(x["bits"]))
        assert best <= grid * (1.0 + 1.0e-9)  # no grid point beats the solution
        assert best >= grid * (1.0 - 2.0e-3)  # and the grid comes close to it
        assert float(sol.dispatch.objective) == pytest.approx(float(best), rel=1.0e-9)


def test_ratio_power_and_clock_match_brute_force():
    """With the ratio free, (D1) at p_k and f_k against a grid over (O, p, f)."""
    rng = np.random.default_rng(11)
    for _ in range(50):
        x = _instance(rng)
        o_min, offset, a = 0.05, float(rng.uniform(0.0, 1.0)), float(rng.uniform(1e-4, 1.0))
        fixed, per_ratio = 0.2 * x["bits"], x["bits"]
        args = {k: v for k, v in x.items() if k != "bits"}
        sol = solve_dispatch_radio(
            V=1.0,
            bandwidth_hz=B_HZ,
            o_min=o_min,
            offset=offset,
            a=a,
            fixed_bits=fixed,
            per_ratio_bits=per_ratio,
            **args,
        )
        o = np.linspace(o_min, 1.0, 200)[:, None, None]
        p = np.geomspace(x["p_max_w"] * 1.0e-5, x["p_max_w"], 150)[None, :, None]
        f = np.linspace(x["f_min_hz"], x["f_max_hz"], 150)[None, None, :]
        gamma = offset + a * (1.0 - o) ** 2 / o**4
        grid = (gamma + _objective(x, p, f, fixed + per_ratio * o)).min()
        o_k = float(sol.dispatch.ratio)
        best = offset + a * (1.0 - o_k) ** 2 / o_k**4
        best += _objective(x, sol.tx_power_w, sol.cpu_hz, np.array(fixed + per_ratio * o_k))
        assert best <= grid * (1.0 + 1.0e-9)
        assert best >= grid * (1.0 - 1.0e-2)
        assert float(sol.dispatch.objective) == pytest.approx(float(best), rel=1.0e-9)


def test_clock_closed_form_by_hand():
    # Q c f_max / (2 w kappa C) = 2 * 1 * 2e9 / (2 * 0.5 * 1e-27 * 2e9) = 2e27 Hz^3
    f = dispatch_clock_hz(2.0, 0.5, 1.0, 2.0e9, 1.0e-27, 0.5e9, 2.0e9)
    assert float(f) == pytest.approx(2.0e27 ** (1.0 / 3.0), rel=1.0e-12)
    assert float(f) == pytest.approx(1.2599210498948732e9, rel=1.0e-12)
    # clipped: kappa ten times smaller puts the root at 2.71e9 > f_max; Q = 0 at f_min
    assert float(dispatch_clock_hz(2.0, 0.5, 1.0, 2.0e9, 1.0e-28, 0.5e9, 2.0e9)) == 2.0e9
    assert float(dispatch_clock_hz(0.0, 0.5, 1.0, 2.0e9, 1.0e-27, 0.5e9, 2.0e9)) == 0.5e9
    assert float(dispatch_clock_hz(2.0, 0.0, 1.0, 2.0e9, 1.0e-27, 0.5e9, 2.0e9)) == 2.0e9


def test_power_stationarity_by_hand():
    """Inside (0, P_max) the power solves x (ln x - 1) = Q a / w - 1 with x = 1 + a p."""
    q, w, snr_per_w, share = 1.0, 2.0, 100.0, 0.5
    p = float(dispatch_power_w(q, w, snr_per_w, share, 10.0))
    a = snr_per_w / share
    x = 1.0 + a * p
    assert 0.0 < p < 10.0
    assert x * (math.log(x) - 1.0) == pytest.approx(q * a / w - 1.0, rel=1.0e-10)


def test_large_queue_without_price_is_full_power_and_clock():
    rng = np.random.default_rng(3)
    for _ in range(20):
        x = _instance(rng)
        for q, w in ((x["queue"], 0.0), (1.0e12, 1.0e-3)):
            sol = _solve({**x, "queue": q, "weight": w})
            assert float(sol.tx_power_w) == x["p_max_w"]
            assert float(sol.cpu_hz) == x["f_max_hz"]
            assert float(sol.compute_s) == x["compute_s"]


def test_empty_queue_with_energy_price_is_refused():
    with pytest.raises(ValueError, match="no minimiser"):
        dispatch_power_w(0.0, 1.0, 100.0, 0.5, 1.0)


def test_empty_queue_plans_least_energy_within_the_budget():
    """(D4): Q = 0 with an energy weight: the least energy whose latency is within D_th."""
    rng = np.random.default_rng(5)
    for _ in range(20):
        x = {**_instance(rng), "queue": 0.0, "weight": float(rng.uniform(0.1, 5.0))}
        p = np.geomspace(x["p_max_w"] * 1.0e-5, x["p_max_w"], 1200)[:, None]
        f = np.linspace(x["f_min_hz"], x["f_max_hz"], 1200)[None, :]
        latency, energy = _latency_energy(x, p, f)
        budget_s = float(rng.uniform(latency.min(), latency.max()))
        args = {k: v for k, v in x.items() if k != "bits"}
        sol = solve_dispatch_radio(
            V=1.0,
            bandwidth_hz=B_HZ,
            o_min=0.5,
            offset=0.0,
            a=0.0,
            fixed_bits=x["bits"],
            per_ratio_bits=0.0,
            empty_queue_budget_s=budget_s,
            **args,
        )
        got_latency, got_energy = _latency_energy(x, sol.tx_power_w, sol.cpu_hz)
        assert float(got_latency) <= budget_s * (1.0 + 1.0e-12)
        assert float(got_latency) == pytest.approx(budget_s, rel=1.0e-6)
        best_on_grid = energy[latency <= budget_s].min()
        assert float(got_energy) <= best_on_grid * (1.0 + 1.0e-9)
        assert float(got_energy) >= best_on_grid * (1.0 - 1.0e-2)
