"""The per-dispatch step (D1) of the event-driven modes (optim.dispatch; docs/solvers.md,
"Per-dispatch step (asynchronous modes)").

The exact solution is held against a CVXPY problem written here in O (not optim.p3_cvxpy's
form in x = 1/O), against the scalar
solver of P3, and the queue's per-update recursion against a hand computation.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from optim.dispatch import dispatch_ratios, queue_after_updates, solve_dispatch
from optim.p3 import solve_p3_exact


def _instance(rng: np.random.Generator) -> dict:
    """One dispatched client: physics-sized upload, compute, energy queue and penalty."""
    snr = 10.0 ** rng.uniform(-0.5, 2.5)
    share = 1.0 / rng.integers(1, 50)  # b = 1/C
    bits_per_ratio = 32.0 * rng.uniform(1e3, 1e5)  # v n_k
    fixed_bits = 32.0 * rng.uniform(0.0, 5e3) * (rng.random() < 0.5)  # v h_k, half without
    rate = share * 1e6 * math.log2(1.0 + snr)  # b B log2(1 + SNR_k)
    return {
        "queue": float(rng.uniform(0.0, 20.0)) * (rng.random() < 0.9),
        "V": float(10.0 ** rng.uniform(-6, -2)),
        "o_min": float(rng.uniform(0.01, 0.3)),
        "offset": float(rng.uniform(0.0, 10.0)),
        "a": float(10.0 ** rng.uniform(0, 4)),
        "u": bits_per_ratio / rate,
        "u0": fixed_bits / rate,
        "c": float(rng.uniform(0.0, 3.0)),
        "Z": float(rng.uniform(0.0, 4.0)) * (rng.random() < 0.6),
        "P": float(rng.uniform(0.05, 0.5)),
        "E_comp": float(rng.uniform(0.0, 2.0)),
    }


def _objective(o: float, inst: dict) -> float:
    """J(O) = V gamma(O) + Q l(O) + Z E(O), written out from the problem statement."""
    upload = inst["u0"] + inst["u"] * o
    latency = inst["c"] + upload
    energy = inst["E_comp"] + inst["P"] * upload
    gamma = inst["offset"] + inst["a"] * (1.0 - o) ** 2 / o**4
    return inst["V"] * gamma + inst["queue"] * latency + inst["Z"] * energy


def _solve(inst: dict):
    return solve_dispatch(
        queue=inst["queue"],
        V=inst["V"],
        o_min=inst["o_min"],
        offset=inst["offset"],
        a=inst["a"],
        upload_per_ratio_s=inst["u"],
        fixed_upload_s=inst["u0"],
        compute_s=inst["c"],
        energy_queue_j=inst["Z"],
        tx_power_w=inst["P"],
        compute_energy_j=inst["E_comp"],
    )


def _cvxpy(inst: dict) -> float:
    """(D1) in O, its latency and energy affine in O. (1 - O)^2 / O^4 = g(O)^2 with
    g(O) = (1/O - 1/2)^2 - 1/4 >= 0 on (0, 1], in DCP form
    square(pos(square(pos(inv_pos(O) - 1/2)) - 1/4)). Scaled by the better end point's value so
    that the solver's tolerances are relative ones."""
    cp = pytest.importorskip("cvxpy")
    o = cp.Variable()
    g = cp.square(cp.pos(cp.inv_pos(o) - 0.5)) - 0.25
    gamma = inst["offset"] + inst["a"] * cp.square(cp.pos(g))
    upload = inst["u0"] + inst["u"] * o
    latency = inst["c"] + upload
    energy = inst["E_comp"] + inst["P"] * upload
    scale = min(_objective(1.0, inst), _objective(inst["o_min"], inst))
    objective = (inst["V"] * gamma + inst["queue"] * latency + inst["Z"] * energy) / scale
    problem = cp.Problem(cp.Minimize(objective), [o >= inst["o_min"], o <= 1.0])
    assert problem.is_dcp()
    problem.solve(solver="CLARABEL", tol_gap_abs=1e-9, tol_gap_rel=1e-9, tol_feas=1e-9)
    assert problem.status == cp.OPTIMAL, problem.status
    return float(o.value)


def test_exact_solution_matches_cvxpy_on_random_instances():
    rng = np.random.default_rng(31)
    interior = bounds = 0
    for _ in range(60):
        inst = _instance(rng)
        sol = _solve(inst)
        o_ex, o_cv = float(sol.ratio), _cvxpy(inst)
        f_ex, f_cv = _objective(o_ex, inst), _objective(o_cv, inst)
        assert f_ex <= f_cv * (1.0 + 1e-9), (o_ex, o_cv)  # the exact optimum is no worse
        assert abs(o_cv - o_ex) <= 1e-5 * o_ex or f_cv - f_ex <= 1e-8 * abs(f_ex), (o_ex, o_cv)
        assert float(sol.objective) == pytest.approx(f_ex, rel=1e-12)
        assert float(sol.latency_s) == pytest.approx(
            inst["c"] + inst["u0"] + inst["u"] * o_ex, rel=1e-12
        )
        interior += inst["o_min"] < o_ex < 1.0
        bounds += o_ex in (1.0, inst["o_min"])
    assert interior >= 20 and bounds >= 5  # both kinds of optimum are exercised


def test_vectorised_ratios_equal_the_scalar_p3_solver():
    rng = np.random.default_rng(7)
    qc = 10.0 ** rng.uniform(-6, 4, 500)
    qc[:40] = 0.0
    va = 10.0 ** rng.uniform(-6, 2, 500)
    va[40:60] = 0.0
    o_min = 0.05
    got = dispatch_ratios(qc, va, o_min)
    want = [solve_p3_exact(qc=q, va=v, o_min=o_min) for q, v in zip(qc, va, strict=True)]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)
    assert (got[:40] == 1.0).all() and (got[40:60] == o_min).all()


def test_a_larger_queue_or_energy_price_gives_a_smaller_or_equal_ratio():
    rng = np.random.default_rng(11)
    inst = _instance(rng) | {"queue": 1.0, "Z": 0.0, "u0": 0.0}
    base = float(_solve(inst).ratio)
    assert float(_solve(inst | {"queue": 5.0}).ratio) <= base
    # a price Z P acts as a longer queue on the upload: the same O as Q + Z P without it
    priced = _solve(inst | {"Z": 3.0})
    longer = _solve(inst | {"queue": 1.0 + 3.0 * inst["P"]})
    assert float(priced.ratio) == pytest.approx(float(longer.ratio), rel=1e-12)


def test_candidates_are_solved_each_on_its_own():
    """Vectorised over candidates: each equals its own single solve."""
    rng = np.random.default_rng(5)
    insts = [_instance(rng) | {"queue": 3.0, "V": 1e-3, "o_min": 0.1} for _ in range(8)]
    many = solve_dispatch(
        queue=3.0,
        V=1e-3,
        o_min=0.1,
        offset=[i["offset"] for i in insts],
        a=[i["a"] for i in insts],
        upload_per_ratio_s=[i["u"] for i in insts],
        fixed_upload_s=[i["u0"] for i in insts],
        compute_s=[i["c"] for i in insts],
        energy_queue_j=[i["Z"] for i in insts],
        tx_power_w=[i["P"] for i in insts],
        compute_energy_j=[i["E_comp"] for i in insts],
    )
    for k, inst in enumerate(insts):
        one = _solve(inst)
        assert many.ratio[k] == float(one.ratio)
        assert many.objective[k] == float(one.objective)


def test_queue_takes_every_update_in_arrival_order():
    # D_th = 2: 0 + 3 - 2 = 1; 1 + 0.5 - 2 < 0 -> 0; 0 + 4 - 2 = 2
    assert queue_after_updates(0.0, [3.0, 0.5, 4.0], 2.0) == 2.0
    # the mean would give max(0 + 2.5 - 2, 0) = 0.5: the recursion is per update, not per mean
    assert queue_after_updates(1.0, [], 2.0) == 1.0


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"queue": -1.0}, "queue"),
        ({"o_min": 1.0}, "o_min"),
        ({"upload_per_ratio_s": -1.0}, "upload_per_ratio_s must hold finite values >= 0"),
        ({"energy_queue_j": math.nan}, "energy_queue_j must hold finite values >= 0"),
    ],
)
def test_bad_inputs_raise(kwargs, match):
    args = {"queue": 1.0, "V": 1.0, "o_min": 0.1, "offset": 0.0, "a": 1.0}
    args |= {"upload_per_ratio_s": 1.0} | kwargs
    with pytest.raises(ValueError, match=match):
        solve_dispatch(**args)
