"""Energy-budget virtual queues (optim.energy_queue) and the energy price in the slot problem.

The slot problem with energy queues (eq. E2 of optim/energy_queue.py) is

    min_O  Q D(O) + V gamma(O) + sum_{k in K} Z_k E_k(O),   E_k(O) = E_comp,k + P_k D(O),

with D(O) = c O (eq. 31 shares). ``solve_slot(energy_price_jw=sum_k Z_k P_k)`` solves it as the
1-D P3 with Q c replaced by (Q + sum_k Z_k P_k) c; the tests check that against a CVXPY problem
written here with per-client variables, independent of optim.p3 and optim.p3_cvxpy.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from channels.fdma import spectral_efficiency
from optim import (
    BoundConstants,
    EnergyQueues,
    LyapunovController,
    convergence_bound,
    energy_queue_update,
    solve_slot,
)
from optim.p3 import solve_p3_exact

N = 10
R = 8
P_PER_RANK = 2_000
BITS = 32
BW = 1.0e6
CONST = BoundConstants()


def _c(snr: np.ndarray) -> float:
    """D(O) / O [s], computed here: v r p sum_j 1 / (B log2(1 + SNR_j))."""
    return BITS * R * P_PER_RANK * float(np.sum(1.0 / np.log2(1.0 + snr))) / BW


def _a(k: int) -> float:
    """The sparsification coefficient of gamma, from the bound itself: gamma(1/2) - gamma(1)
    = a (1/2)^2 / (1/2)^4 = 4 a."""
    g = [
        float(
            convergence_bound(rank=R, sparsification=o, n_scheduled=k, n_clients=N, constants=CONST)
        )
        for o in (0.5, 1.0)
    ]
    return (g[0] - g[1]) / 4.0


def _slot(snr, *, queue, V, o_min, **kw):
    return solve_slot(
        queue=queue,
        V=V,
        snr=snr,
        rank=R,
        n_clients=N,
        params_per_rank=P_PER_RANK,
        bits_per_value=BITS,
        bandwidth_hz=BW,
        o_min=o_min,
        constants=CONST,
        **kw,
    )


# ---------------------------------------------------------------------------- the queues
def test_queue_recursion_by_hand():
    q = EnergyQueues([1.0, 2.0, 0.5])
    np.testing.assert_array_equal(q.value, [0.0, 0.0, 0.0])
    # round 0: device 0 spends 3 J, device 1 is not scheduled (0 J), device 2 spends 0.5 J
    np.testing.assert_array_equal(q.update([3.0, 0.0, 0.5]), [2.0, 0.0, 0.0])
    # round 1: Z_0 = max(2 + 0.25 - 1, 0) = 1.25; Z_1 = max(0 + 5 - 2, 0) = 3; Z_2 = 0 + 1 - .5
    np.testing.assert_array_equal(q.update([0.25, 5.0, 1.0]), [1.25, 3.0, 0.5])
    # round 2: nobody scheduled: every queue drains by its budget, floored at 0
    np.testing.assert_array_equal(q.update([0.0, 0.0, 0.0]), [0.25, 1.0, 0.0])
    np.testing.assert_array_equal(q.value, [0.25, 1.0, 0.0])
    np.testing.assert_array_equal(
        energy_queue_update([1.0, 0.0], [0.5, 0.5], [2.0, 0.25]), [0, 0.25]
    )
    # price: sum over the given devices of Z_k P_k [J W]
    assert q.price(np.array([0, 1]), np.array([2.0, 0.5])) == 0.25 * 2.0 + 1.0 * 0.5
    assert q.price(np.array([], dtype=int), np.array([])) == 0.0


def test_queue_state_round_trips_through_json():
    q = EnergyQueues([1.0, 2.0])
    q.update([1.7, 3.3])
    state = json.loads(json.dumps(q.state_dict()))
    other = EnergyQueues([1.0, 2.0])
    other.load_state_dict(state)
    np.testing.assert_array_equal(other.value, q.value)
    with pytest.raises(ValueError, match=r"state\[.budget_j.\] differs"):
        EnergyQueues([1.0, 3.0]).load_state_dict(state)
    loose = EnergyQueues([1.0, 3.0])
    loose.load_state_dict(state, strict=False)
    np.testing.assert_array_equal(loose.value, q.value)
    with pytest.raises(ValueError, match="length 3"):
        EnergyQueues([1.0, 2.0, 3.0]).load_state_dict(state)
    with pytest.raises(ValueError, match="format"):
        q.load_state_dict({"value": [0.0, 0.0]})


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (
            lambda: EnergyQueues([1.0, 0.0]),
            r"budget_j must hold finite values > 0; got 0.0 at index 1",
        ),
        (lambda: EnergyQueues([[1.0]]), "budget_j must be a non-empty 1-D array"),
        (lambda: EnergyQueues([1.0], value=[-1.0]), "value must hold finite values >= 0"),
        (lambda: EnergyQueues([1.0, 1.0]).update([1.0]), "energy_j must have length 2"),
        (lambda: EnergyQueues([1.0]).update([math.nan]), "energy_j must hold finite values >= 0"),
        (lambda: EnergyQueues([1.0]).price([1], [1.0]), r"client_ids must be in \[0, 1\)"),
        (lambda: EnergyQueues([1.0]).price([0], [-1.0]), "tx_power_w must hold finite values >= 0"),
    ],
)
def test_bad_inputs_raise_one_line(call, match):
    with pytest.raises(ValueError, match=match) as err:
        call()
    assert "\n" not in str(err.value)


# ---------------------------------------------------------------------------- the slot problem
def _instance(rng: np.random.Generator) -> dict:
    k = int(rng.integers(1, 7))
    return {
        "snr": 10.0 * rng.lognormal(0.0, 1.0, size=k),
        "queue": float(rng.uniform(0.0, 5.0)) * float(rng.random() < 0.8),
        "V": float(10.0 ** rng.uniform(-7.0, -1.0)),
        "o_min": float(rng.uniform(0.01, 0.3)),
        "Z": 10.0 ** rng.uniform(-2.0, 2.0, size=k),
        "P": rng.uniform(0.01, 0.5, size=k),
        "E_comp": rng.uniform(0.0, 5.0, size=k),
    }


def _objective(o: float, inst: dict) -> float:
    """Q D + V gamma_sparsification + sum_k Z_k (E_comp,k + P_k D), D = c O (no offset)."""
    c, a = _c(inst["snr"]), _a(inst["snr"].size)
    d = c * o
    energy = inst["E_comp"] + inst["P"] * d
    return inst["queue"] * d + inst["V"] * a * (1.0 - o) ** 2 / o**4 + float(inst["Z"] @ energy)


def _cvxpy_per_client(inst: dict) -> float:
    """The slot problem with per-client energy variables; returns the optimal O.

    Variables O, D and e_k: D >= c O (every client's upload time under eq. 31),
    e_k >= E_comp,k + P_k D, O in [O_min, 1]. The bound term (1 - O)^2 / O^4 = g(O)^2 with
    g(O) = (1 - O) / O^2 = (1/O - 1/2)^2 - 1/4 >= 0 on (0, 1]; in DCP form
    g = square(pos(inv_pos(O) - 1/2)) - 1/4 (convex: square is increasing on the non-negative
    pos(.)), and g^2 = square(pos(g)) (pos changes nothing where g >= 0). The objective is
    divided by its value at the better end point so that solver tolerances act as relative ones.
    """
    cp = pytest.importorskip("cvxpy")
    c, a = _c(inst["snr"]), _a(inst["snr"].size)
    k = inst["snr"].size
    o, d, e = cp.Variable(), cp.Variable(), cp.Variable(k)
    g = cp.square(cp.pos(cp.inv_pos(o) - 0.5)) - 0.25
    scale = min(_objective(1.0, inst), _objective(inst["o_min"], inst))
    obj = (inst["queue"] * d + inst["V"] * a * cp.square(cp.pos(g)) + inst["Z"] @ e) / scale
    cons = [d >= c * o, e >= inst["E_comp"] + cp.multiply(inst["P"], d), o >= inst["o_min"], o <= 1]
    prob = cp.Problem(cp.Minimize(obj), cons)
    assert prob.is_dcp()
    prob.solve(solver="CLARABEL", tol_gap_abs=1e-9, tol_gap_rel=1e-9, tol_feas=1e-9)
    assert prob.status == cp.OPTIMAL, prob.status
    return float(o.value)


def test_exact_solution_with_energy_matches_a_per_client_cvxpy_problem():
    rng = np.random.default_rng(20261125)
    interior = 0
    for _ in range(60):
        inst = _instance(rng)
        price = float(inst["Z"] @ inst["P"])
        sol = _slot(
            inst["snr"],
            queue=inst["queue"],
            V=inst["V"],
            o_min=inst["o_min"],
            energy_price_jw=price,
        )
        o_ex, o_cv = sol.sparsification, _cvxpy_per_client(inst)
        f_ex, f_cv = _objective(o_ex, inst), _objective(o_cv, inst)
        assert f_ex <= f_cv * (1.0 + 1e-9), (o_ex, o_cv)  # the exact optimum is no worse
        # the same O to 1e-5, or (where f is flat around the optimum) the same objective
        assert abs(o_cv - o_ex) <= 1e-5 * o_ex or f_cv - f_ex <= 1e-8 * abs(f_ex), (o_ex, o_cv)
        assert sol.energy_price_jw == price
        interior += inst["o_min"] < o_ex < 1.0
    assert interior >= 20  # the instances exercise the interior, not only the end points


def test_energy_price_is_added_to_the_queue():
    """(Q + Pi) c O: pricing Pi is the same problem as a queue longer by Pi (to round-off)."""
    rng = np.random.default_rng(5)
    for _ in range(20):
        inst = _instance(rng)
        price = float(inst["Z"] @ inst["P"])
        args = {"V": inst["V"], "o_min": inst["o_min"]}
        with_price = _slot(inst["snr"], queue=inst["queue"], energy_price_jw=price, **args)
        longer_queue = _slot(inst["snr"], queue=inst["queue"] + price, **args)
        assert with_price.sparsification == pytest.approx(longer_queue.sparsification, rel=1e-12)
        assert with_price.objective == pytest.approx(longer_queue.objective, rel=1e-12)


def test_zero_price_reproduces_the_paper_solution_bit_for_bit():
    rng = np.random.default_rng(7)
    for _ in range(50):
        inst = _instance(rng)
        args = {"queue": inst["queue"], "V": inst["V"], "o_min": inst["o_min"]}
        old = _slot(inst["snr"], **args)
        new = _slot(inst["snr"], energy_price_jw=0.0, **args)
        for field in ("sparsification", "delay_s", "bound", "objective", "queue_before"):
            assert getattr(new, field) == getattr(old, field), field
        np.testing.assert_array_equal(new.shares, old.shares)
        assert old.energy_price_jw == 0.0
        # and the paper's P3 computed here: Q c with c as optim.online computes it
        s = inst["snr"]
        c = BITS * R * P_PER_RANK * float((1.0 / spectral_efficiency(s)).sum()) / BW
        o = solve_p3_exact(qc=inst["queue"] * c, va=inst["V"] * _a(s.size), o_min=inst["o_min"])
        assert old.sparsification == pytest.approx(o, rel=1e-12)


def test_larger_energy_queues_give_smaller_or_equal_sparsification():
    rng = np.random.default_rng(11)
    for _ in range(30):
        inst = _instance(rng)
        args = {"queue": inst["queue"], "V": inst["V"], "o_min": inst["o_min"]}
        prev = math.inf
        for scale in (0.0, 0.01, 0.1, 1.0, 10.0, 100.0):
            o = _slot(inst["snr"], energy_price_jw=scale * float(inst["Z"] @ inst["P"]), **args)
            assert o.sparsification <= prev
            prev = o.sparsification
        assert prev >= inst["o_min"]


def test_cvxpy_method_takes_the_energy_price():
    pytest.importorskip("cvxpy")
    rng = np.random.default_rng(13)
    for _ in range(10):
        inst = _instance(rng)
        args = {"queue": inst["queue"], "V": inst["V"], "o_min": inst["o_min"]}
        price = float(inst["Z"] @ inst["P"])
        ex = _slot(inst["snr"], energy_price_jw=price, **args)
        cv = _slot(inst["snr"], energy_price_jw=price, method="cvxpy", **args)
        assert cv.energy_price_jw == price
        f_ex, f_cv = _objective(ex.sparsification, inst), _objective(cv.sparsification, inst)
        assert f_cv == pytest.approx(f_ex, rel=1e-7)


def test_negative_price_is_refused():
    with pytest.raises(ValueError, match=r"energy_price_jw must be a finite number in \[0, inf\)"):
        _slot(np.array([10.0]), queue=1.0, V=1e-3, o_min=0.1, energy_price_jw=-1.0)


# ---------------------------------------------------------------------------- closed loop
def _controller(V: float) -> LyapunovController:
    return LyapunovController(
        V=V,
        d_th_s=1.0e3,  # a loose delay budget: Q stays 0 and only the energy queues press on O
        rank=R,
        n_clients=N,
        params_per_rank=P_PER_RANK,
        bits_per_value=BITS,
        bandwidth_hz=BW,
        o_min=0.05,
        constants=CONST,
    )


def _run(T: int, V: float, *, priced: bool, seed: int = 3):
    """T rounds: K = 4 of N devices scheduled at random, Rayleigh SNRs (mean 10, outage below
    0.5), device k spends E_comp,k + P_k D^t when scheduled and 0 otherwise."""
    rng = np.random.default_rng(seed)
    dev = np.random.default_rng(99)
    power = dev.uniform(0.1, 0.3, size=N)  # P_k [W]
    e_comp = dev.uniform(0.02, 0.08, size=N)  # E_comp,k [J]
    # budget: feasible at O_min = 0.05 with room, binding below O = 1. E[c | scheduled] from a
    # separate Monte Carlo of the same channel model.
    mc = np.random.default_rng(1)
    c_mean = np.mean([_c(s[s >= 0.5]) for s in 10.0 * mc.exponential(size=(4000, 4))])
    budget = 4 / N * (e_comp + power * c_mean * 0.3)
    queues = EnergyQueues(budget)
    ctl = _controller(V)
    spent = np.zeros((T, N))
    z_hist = np.zeros((T, N))
    for t in range(T):
        ids = rng.choice(N, size=4, replace=False)
        snr = 10.0 * rng.exponential(size=4)
        ids, snr = ids[snr >= 0.5], snr[snr >= 0.5]
        if ids.size:
            price = queues.price(ids, power[ids]) if priced else 0.0
            sol = ctl.step(snr, energy_price_jw=price)
            spent[t, ids] = e_comp[ids] + power[ids] * sol.delay_s
        z_hist[t] = queues.update(spent[t])
    return spent, z_hist, budget


def test_closed_loop_meets_every_device_energy_budget():
    """Check, for every device k after T = 2000 rounds: (1/T) sum_t E_k^t <= E_bar_k + Z_k^T / T
    (eq. E1 telescoped), and the slack is O(1/T) because the queues stay bounded: every Z_k^t
    <= 6 J over the whole run (so Z_k^T / T <= 3e-3 J, a few % of E_bar_k ~ 0.03-0.05 J), and
    sum_k Z_k averaged over the last quarter is at most 1.3x its average over the second (no
    growth). Without the price the same channel overspends every budget by > 20 %, so the
    constraint is active; the budget is feasible at O_min (it allows O = 0.3 on average)."""
    T = 2000
    spent, z, budget = _run(T, 1e-5, priced=True)
    mean = spent.mean(axis=0)
    assert np.all(mean <= budget + z[-1] / T + 1e-12)
    assert z.max() <= 6.0
    assert np.all(z[-1] / T <= 0.05 * budget)
    q, total = T // 4, z.sum(axis=1)
    assert total[3 * q :].mean() <= 1.3 * total[q : 2 * q].mean()
    assert np.all(mean <= 1.05 * budget)
    free, _, _ = _run(T, 1e-5, priced=False)
    assert np.all(free.mean(axis=0) > 1.2 * budget)
