"""optim.sketch_ratio: FSLoRA's per-client sketch sizes, against independent computations.

The latency model is rebuilt here from first principles (eq. 31 shares, Shannon rates, the
FLOPs of ``channels.lora_training_flops`` at every rank) rather than from the module's
alpha/beta; the integer solver is compared with brute force over every k vector and with a
direct O(M K') enumeration of the candidate latencies; the relaxation with a CVXPY model.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from channels import lora_training_flops
from optim import solve_sketch_ratios, solve_sketch_ratios_relaxed
from optim.sketch_ratio import sketch_latency_coefficients

SHAPES = [(64, 64), (64, 32)]  # P = 224 values per rank component
P = sum(d + ell for d, ell in SHAPES)
GEOMETRY = {"batch_size": 4, "steps": 1, "seq_len": 8}
BITS, BW = 32, 1.0e6


def _flops(rank: int, base: int) -> float:
    return lora_training_flops(SHAPES, rank, base_params=base, **GEOMETRY)


def _instance(seed: int, n: int = 3, r: int = 8) -> dict:
    """A random instance: the solver's keyword arguments plus what the checks need."""
    rng = np.random.default_rng(seed)
    base = int(rng.choice([0, 1_000, 50_000]))
    f = _flops(r, 0) / _flops(r, base)  # LoRA share of a step at rank r
    kw = {
        "queue": float(10.0 ** rng.uniform(-1, 1)),
        "V": float(10.0 ** rng.uniform(-6, -1)),
        "snr": 10.0 ** rng.uniform(-1, 2, n),
        "compute_s": rng.uniform(0.0, 0.05, n) * rng.integers(0, 2),  # sometimes no compute
        "rank": r,
        "k_min": int(rng.integers(1, 4)),
        "params_per_rank": P,
        "bits_per_value": BITS,
        "bandwidth_hz": BW,
        "dense_values": float(rng.choice([0, 500, 5_000])),
        "lora_flops_fraction": f,
    }
    return {"kw": kw, "base": base}


def _latency(inst: dict, k: np.ndarray) -> np.ndarray:
    """d_i(k_i) [s] from first principles; ``k`` (..., K') integer or real ranks."""
    kw, base = inst["kw"], inst["base"]
    r = kw["rank"]
    snr = np.asarray(kw["snr"])
    eff = np.log2(1.0 + snr)
    shares = (1.0 / eff) / np.sum(1.0 / eff)  # eq. (31)
    rate = shares * kw["bandwidth_hz"] * eff  # [bit/s]
    k = np.asarray(k, float)
    fr = _flops(r, base)
    if np.all(k == np.round(k)):  # integer ranks: phi(k) = F(k) / F(r), F from channels
        table = np.array([_flops(j, base) for j in range(1, r + 1)]) / fr
        phi = table[k.astype(int) - 1]
    else:  # real ranks (the relaxation): F is affine in the rank (test_phi_is_affine...)
        f1, f2 = _flops(1, base), _flops(2, base)
        phi = (f1 + (k - 1.0) * (f2 - f1)) / fr
    bits = kw["bits_per_value"] * (k * kw["params_per_rank"] + kw["dense_values"])
    return np.asarray(kw["compute_s"]) * phi + bits / rate


def _objective(inst: dict, k: np.ndarray) -> np.ndarray:
    kw = inst["kw"]
    k = np.asarray(k, float)
    penalty = np.mean((kw["rank"] / k) ** 2, axis=-1)
    return kw["V"] * penalty + kw["queue"] * _latency(inst, k).max(axis=-1)


def _brute_force(inst: dict) -> float:
    kw = inst["kw"]
    levels = range(kw["k_min"], kw["rank"] + 1)
    grid = np.array(list(itertools.product(levels, repeat=len(kw["snr"]))))  # (m^K', K')
    return float(_objective(inst, grid).min())


def test_phi_is_affine_in_the_rank():
    """The module's phi(k) = 1 - f + f k / r is the FLOP model's ratio F(k) / F(r)."""
    for base in (0, 1_000, 86_000_000):
        r = 8
        f = _flops(r, 0) / _flops(r, base)
        for k in range(1, r + 1):
            assert 1.0 - f + f * k / r == pytest.approx(_flops(k, base) / _flops(r, base), 1e-13)


@pytest.mark.parametrize("seed", range(60))
def test_integer_solver_equals_brute_force(seed):
    inst = _instance(seed)
    sol = solve_sketch_ratios(**inst["kw"])
    kw = inst["kw"]
    assert sol.ranks.dtype == np.int64 and sol.ranks.shape == (3,)
    assert np.all((sol.ranks >= kw["k_min"]) & (sol.ranks <= kw["rank"]))
    # the reported numbers are those of the returned k under the independent model
    np.testing.assert_allclose(sol.latencies_s, _latency(inst, sol.ranks), rtol=1e-12)
    assert sol.delay_s == pytest.approx(float(_latency(inst, sol.ranks).max()), rel=1e-12)
    assert sol.penalty == pytest.approx(float(np.mean((kw["rank"] / sol.ranks) ** 2)), rel=1e-14)
    assert sol.objective == pytest.approx(float(_objective(inst, sol.ranks)), rel=1e-12)
    assert sol.objective == pytest.approx(_brute_force(inst), rel=1e-12)
    np.testing.assert_allclose(sol.shares.sum(), 1.0, rtol=1e-14)


def test_brute_force_instances_are_not_trivial():
    """The random instances cover interior solutions, not only k = r or k = k_min."""
    kinds = set()
    for seed in range(60):
        inst = _instance(seed)
        k = solve_sketch_ratios(**inst["kw"]).ranks
        kinds.add(
            "all r"
            if np.all(k == 8)
            else "all k_min"
            if np.all(k == inst["kw"]["k_min"])
            else "mixed"
            if len(set(k.tolist())) > 1
            else "interior"
        )
    assert {"mixed", "interior"} <= kinds


@pytest.mark.parametrize("seed", range(10))
def test_integer_solver_equals_candidate_enumeration_on_larger_instances(seed):
    """K' = 20, r = 32: every candidate D = d_i(k), each client at its largest k fitting D."""
    inst = _instance(100 + seed, n=20, r=32)
    kw = inst["kw"]
    sol = solve_sketch_ratios(**kw)
    levels = np.arange(kw["k_min"], kw["rank"] + 1)
    lat = np.stack([_latency(inst, np.full(20, k)) for k in levels], axis=1)  # (K', m)
    best = np.inf
    for d in np.unique(lat):
        fits = lat <= d * (1.0 + 1e-13)
        if not fits[:, 0].all():
            continue
        k = levels[fits.sum(axis=1) - 1]
        best = min(best, float(_objective(inst, k)))
    assert sol.objective == pytest.approx(best, rel=1e-11)


def _cvxpy_relaxed(inst: dict) -> float:
    """The relaxation in CVXPY: epigraph variable D, cp.power(k, -2), linear latency rows."""
    cp = pytest.importorskip("cvxpy")
    kw = inst["kw"]
    n, r = len(kw["snr"]), kw["rank"]
    d1, d2 = _latency(inst, np.ones(n)), _latency(inst, np.full(n, 2.0))
    beta = d2 - d1  # d_i(k) = alpha_i + beta_i k (affine: FLOPs and bits are affine in k)
    alpha = d1 - beta
    t = float(np.max(alpha + beta * r))  # time unit: D_hi, so D is of order one
    ref = kw["V"] + kw["queue"] * t  # the objective at k = r, to scale it to order one
    k, d = cp.Variable(n), cp.Variable()
    objective = cp.Minimize(
        (kw["V"] * r * r / n) / ref * cp.sum(cp.power(k, -2)) + (kw["queue"] * t / ref) * d
    )
    constraints = [alpha / t + cp.multiply(beta / t, k) <= d, k >= kw["k_min"], k <= r]
    problem = cp.Problem(objective, constraints)
    try:
        problem.solve(solver="CLARABEL")
    except cp.SolverError:  # pragma: no cover - SCS as the project's fallback
        problem.solve(solver="SCS", eps_abs=1e-10, eps_rel=1e-10, max_iters=200_000)
    assert problem.status == cp.OPTIMAL
    return float(problem.value) * ref


@pytest.mark.parametrize("seed", range(12))
def test_relaxation_agrees_with_cvxpy(seed):
    """Relative agreement of the optimal values to 1e-6 (CLARABEL's default tolerances)."""
    inst = _instance(200 + seed, n=int(np.random.default_rng(seed).integers(2, 9)), r=16)
    rel = solve_sketch_ratios_relaxed(**inst["kw"])
    assert rel.ranks.dtype == np.float64
    assert rel.objective == pytest.approx(float(_objective(inst, rel.ranks)), rel=1e-12)
    assert rel.objective == pytest.approx(_cvxpy_relaxed(inst), rel=1e-6)


@pytest.mark.parametrize("seed", range(40))
def test_relaxed_below_integer_below_rounded_down(seed):
    inst = _instance(seed)
    kw = inst["kw"]
    rel = solve_sketch_ratios_relaxed(**kw)
    exact = solve_sketch_ratios(**kw)
    rounded = np.clip(np.floor(rel.ranks + 1e-9), kw["k_min"], kw["rank"])
    assert rel.objective <= exact.objective * (1.0 + 1e-12)
    assert exact.objective <= float(_objective(inst, rounded)) * (1.0 + 1e-12)


def test_relaxed_optimum_is_stationary():
    """Away from the bounds, g(D) is no smaller on a fine grid around D*."""
    inst = _instance(7, n=6, r=16)
    kw = inst["kw"]
    rel = solve_sketch_ratios_relaxed(**kw)
    alpha, beta, _ = sketch_latency_coefficients(
        **{k: v for k, v in kw.items() if k not in ("queue", "V", "k_min")}
    )
    d_lo = float(np.max(alpha + beta * kw["k_min"]))
    d_hi = float(np.max(alpha + beta * kw["rank"]))
    grid = np.linspace(d_lo, d_hi, 20_001)
    k = np.clip((grid[:, None] - alpha) / beta, kw["k_min"], kw["rank"])
    g = kw["V"] * np.mean((kw["rank"] / k) ** 2, axis=1) + kw["queue"] * grid
    assert rel.objective <= g.min() * (1.0 + 1e-12)


def test_larger_queue_gives_smaller_delay():
    inst = _instance(11, n=8, r=32)
    kw = dict(inst["kw"], V=1e-3)
    for solver in (solve_sketch_ratios, solve_sketch_ratios_relaxed):
        sols = [solver(**dict(kw, queue=q)) for q in np.geomspace(1e-3, 1e3, 25)]
        delays = np.array([s.delay_s for s in sols])
        penalties = np.array([s.penalty for s in sols])
        assert np.all(np.diff(delays) <= 1e-12 * delays[:-1])
        assert np.all(np.diff(penalties) >= -1e-12 * penalties[:-1])
        assert delays[0] > delays[-1]  # the sweep moves from k = r towards k_min


def test_empty_queue_gives_full_rank():
    inst = _instance(5, n=6, r=16)
    for solver in (solve_sketch_ratios, solve_sketch_ratios_relaxed):
        sol = solver(**dict(inst["kw"], queue=0.0))
        np.testing.assert_array_equal(sol.ranks, 16)
        assert sol.penalty == pytest.approx(1.0)
        assert sol.delay_s == pytest.approx(float(_latency(inst, np.full(6, 16)).max()), rel=1e-12)


def test_vanishing_V_minimises_the_delay():
    """V -> 0 with Q > 0: D = max_i d_i(k_min); the slowest client gets k_min."""
    inst = _instance(9, n=6, r=16)
    kw = inst["kw"]
    d_lo = float(_latency(inst, np.full(6, kw["k_min"])).max())
    for V in (0.0, 1e-12):
        for solver in (solve_sketch_ratios, solve_sketch_ratios_relaxed):
            sol = solver(**dict(kw, V=V, queue=1.0))
            assert sol.delay_s == pytest.approx(d_lo, rel=1e-9)
            slowest = int(np.argmax(_latency(inst, np.full(6, kw["k_min"]))))
            assert sol.ranks[slowest] == pytest.approx(kw["k_min"], rel=1e-9)
    # identical clients: everyone at k_min
    same = dict(kw, snr=np.full(4, 5.0), compute_s=np.full(4, 0.01))
    sol = solve_sketch_ratios(**dict(same, V=1e-12, queue=1.0))
    np.testing.assert_array_equal(sol.ranks, kw["k_min"])


def test_single_client_and_k_min_equal_rank():
    sol = solve_sketch_ratios(
        queue=1.0,
        V=1.0,
        snr=[3.0],
        compute_s=[0.1],
        rank=4,
        k_min=4,
        params_per_rank=P,
        bits_per_value=BITS,
        bandwidth_hz=BW,
    )
    assert sol.ranks.tolist() == [4] and sol.penalty == 1.0
    rel = solve_sketch_ratios_relaxed(
        queue=1.0,
        V=1.0,
        snr=[3.0],
        compute_s=[0.1],
        rank=4,
        k_min=4,
        params_per_rank=P,
        bits_per_value=BITS,
        bandwidth_hz=BW,
    )
    assert rel.ranks.tolist() == [4.0] and rel.delay_s == pytest.approx(sol.delay_s)


@pytest.mark.parametrize(
    ("over", "needle"),
    [
        ({"k_min": 9}, "k_min must be an integer in [1, 8]"),
        ({"k_min": 0}, "k_min must be an integer in [1, 8]"),
        ({"queue": -1.0}, "queue must be"),
        ({"snr": [1.0, 0.0, 2.0]}, "snr must be > 0"),
        ({"compute_s": [0.1, 0.2]}, "compute_s must have length 3"),
        ({"lora_flops_fraction": 1.5}, "lora_flops_fraction must be"),
        ({"params_per_rank": 0}, "params_per_rank must be"),
    ],
)
def test_bad_arguments_raise_one_line(over, needle):
    kw = dict(_instance(0)["kw"], **over)
    for solver in (solve_sketch_ratios, solve_sketch_ratios_relaxed):
        with pytest.raises(ValueError) as err:
            solver(**kw)
        assert needle in str(err.value) and "\n" not in str(err.value)
