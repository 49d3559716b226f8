"""Benchmark of the optim hot paths: one online step (P3 + eq. 31 shares) and the offline search.

Run:  python benchmarks/bench_optim.py [--quick] [--check]

Prints, for K = 10 of N = 100 and K = 1,000 of N = 10,000:
- the exact online step (``solve_slot(method="exact")``, every argument validated per call, and
  ``LyapunovController.decide``, validated once at construction),
- the CVXPY step: first solve including building the DPP problem, and the re-solve,
- the ratio exact / CVXPY re-solve (goal: < 1 % at N = 100) and how the exact step scales in K
  (goal: linear, i.e. per-client cost flat once K dominates the fixed overhead),
the offline rank search (Algorithm 2) for r_max = 64, and one joint step (``solve_joint_step``:
ratio, power, CPU frequency, shares) at K = 10 and K = 1,000 with its ratio to CVXPY's solve of
the same problem (:mod:`optim.joint_cvxpy`: O fixed, one CVXPY problem; O a decision, the same
search over O with one CVXPY solve per ratio; goal: <= 5 % at K = 10), measured after a first
call that compiles the step's kernel (numba; its time is printed apart), and the per-dispatch
step (D4) at an empty delay queue with an energy price (``solve_dispatch_radio``'s price
bisection) against a CVXPY problem of the same decision. Times are medians over repeats, in
microseconds. ``--check`` exits with status 1 when the ratio goal of the online step
is missed (the ratio, never an absolute time, is what is asserted).
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from collections.abc import Callable

import cvxpy as cp
import numpy as np

from optim import (
    BoundConstants,
    LyapunovController,
    minmax_bandwidth,
    offline_rank_search,
    solve_joint_step,
    solve_slot,
)
from optim.dispatch_radio import solve_dispatch_radio
from optim.joint_cvxpy import JointCvxpyProblem, solve_joint_step_cvxpy
from optim.p3_cvxpy import reset_default_problem

P = 36_864  # ViT-Base q,v adapters: 12 layers x 2 x (768 + 768)
COMMON = dict(
    V=1e-3,
    rank=8,
    params_per_rank=P,
    bits_per_value=32,
    bandwidth_hz=1e6,
    o_min=0.05,
    constants=BoundConstants(),
)


def per_call_us(fn: Callable[[], object], *, number: int, repeats: int) -> float:
    """Median over ``repeats`` of the mean time of ``number`` calls, in microseconds."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - t0) / number)
    return 1e6 * statistics.median(times)


def rayleigh_snr(rng: np.random.Generator, k: int) -> np.ndarray:
    snr = 10.0 * rng.exponential(size=k)  # 10 dB mean, |h|^2 ~ Exp(1)
    return np.maximum(snr, 0.5)  # outage clients are filtered before the solver in the simulator


def bench_online(k: int, n: int, quick: bool) -> dict[str, float]:
    rng = np.random.default_rng(k)
    snrs = [rayleigh_snr(rng, k) for _ in range(64)]
    queues = rng.uniform(0.5, 50.0, size=64)
    i = iter(range(10**9))

    def exact() -> object:
        j = next(i) % 64
        return solve_slot(
            queue=float(queues[j]), snr=snrs[j], n_clients=n, method="exact", **COMMON
        )

    ctl = LyapunovController(d_th_s=10.0, n_clients=n, **COMMON)
    ctl.update(20.0)

    def decide() -> object:
        return ctl.decide(snrs[next(i) % 64])

    def cvx() -> object:
        j = next(i) % 64
        return solve_slot(
            queue=float(queues[j]), snr=snrs[j], n_clients=n, method="cvxpy", **COMMON
        )

    def cvx_first() -> object:
        reset_default_problem()
        return cvx()

    def minmax() -> object:
        j = next(i) % 64
        return minmax_bandwidth(compute_s=0.1, bits=np.full(k, 1e6), snr=snrs[j], bandwidth_hz=1e6)

    reps = 3 if quick else 7
    out = {
        "exact": per_call_us(exact, number=300 if quick else 2000, repeats=reps),
        "decide": per_call_us(decide, number=300 if quick else 2000, repeats=reps),
        "cvxpy_first": per_call_us(cvx_first, number=1, repeats=3 if quick else 5),
        "cvxpy_resolve": per_call_us(cvx, number=10 if quick else 40, repeats=reps),
        "minmax": per_call_us(minmax, number=100 if quick else 500, repeats=reps),
    }
    return out


def joint_instance(k: int) -> dict:
    """K clients of one round: 1 MHz per 10 clients, 0.2 W, 0.1-1 Gcycle, 0.2-2 GHz."""
    rng = np.random.default_rng(k)
    return dict(
        fixed_bits=rng.uniform(1e4, 1e5, k),
        cycles=rng.uniform(1e8, 1e9, k),
        snr_per_w=10 ** rng.uniform(1.0, 4.0, k),
        f_min_hz=2e8,
        f_max_hz=2e9,
        kappa=1e-28,
        p_max_w=0.2,
        bandwidth_hz=1e5 * k,
    )


def bench_joint(k: int, quick: bool) -> dict[str, float]:
    """One joint step and CVXPY's solve of the same (J2): O fixed (one CVXPY problem) and O a
    decision (one CVXPY problem per ratio of the same O search). CVXPY's problem is built once
    and re-solved (DPP) at K = 10; at K = 1,000 it is built at each solve (DPP's parameter maps
    grow as K^2), so its times include canonicalisation."""
    kw = joint_instance(k)
    z = np.random.default_rng(k + 1).uniform(0.5, 5.0, k)
    args = dict(queue_s=5.0, V=1.0, energy_queue_j=z, offset=0.0, a=0.01, o_min=0.1)
    ratio_kw = dict(kw, per_ratio_bits=np.random.default_rng(k + 2).uniform(1e5, 5e5, k))
    reps = 1 if quick else 3
    t0 = time.perf_counter()
    ours = solve_joint_step(**args, **kw)  # the first call compiles or loads the kernel
    first = time.perf_counter() - t0
    ours_ratio = solve_joint_step(**args, **ratio_kw)
    problem = JointCvxpyProblem(k, dpp=k <= 100)
    out = dict(
        first_s=first,
        fixed=per_call_us(lambda: solve_joint_step(**args, **kw), number=1, repeats=reps),
        with_ratio=per_call_us(
            lambda: solve_joint_step(**args, **ratio_kw), number=1, repeats=reps if k <= 100 else 1
        ),
    )
    t0 = time.perf_counter()
    try:
        theirs = solve_joint_step_cvxpy(**args, **kw, problem=problem)  # builds the DPP problem
    except cp.SolverError as err:  # Clarabel stalls at K = 1,000 (docs/benchmarks.md)
        failed = dict(cvxpy=1e6 * (time.perf_counter() - t0), agree=math.nan, status=str(err))
        return dict(out, **failed, cvxpy_ratio=math.nan, agree_ratio=math.nan, solves=0)
    out.update(
        cvxpy=per_call_us(
            lambda: solve_joint_step_cvxpy(**args, **kw, problem=problem),
            number=1,
            repeats=reps if k <= 100 else 1,
        ),
        agree=(theirs.objective - ours.objective) / theirs.objective,
        status=theirs.at_ratio.status,
    )
    if quick and k > 100:  # some 15 CVXPY solves of about 15 s each
        return dict(out, cvxpy_ratio=math.nan, agree_ratio=math.nan, solves=0)
    t0 = time.perf_counter()
    theirs_ratio = solve_joint_step_cvxpy(**args, **ratio_kw, problem=problem)
    return dict(
        out,
        cvxpy_ratio=1e6 * (time.perf_counter() - t0),
        agree_ratio=(theirs_ratio.objective - ours_ratio.objective) / theirs_ratio.objective,
        solves=theirs_ratio.solves,
    )


def dispatch_instance(n: int) -> dict:
    """n candidates of one dispatch (Q = 0, energy weights > 0): share 1/4 of 1 MHz, noise over
    the band, 0.2 W, compute 0.5-1.5 s at 1-2 GHz (f_min a third of it), 0.2-1 Mbit of which
    half thinned by O; D_th = 4 s lies between each one's fastest and slowest latency."""
    rng = np.random.default_rng(n)
    f_max = rng.uniform(1e9, 2e9, n)
    compute_s = rng.uniform(0.5, 1.5, n)
    bits = rng.uniform(2e5, 1e6, n)
    return dict(
        V=1.0,
        o_min=0.1,
        offset=0.0,
        a=0.01,
        per_ratio_bits=bits / 2,
        fixed_bits=bits / 2,
        snr_per_w=10 ** rng.uniform(2.0, 4.0, n),
        share=0.25,
        bandwidth_hz=1e6,
        p_max_w=0.2,
        compute_s=compute_s,
        cycles=compute_s * f_max,
        kappa=1e-28,
        f_min_hz=f_max / 3,
        f_max_hz=f_max,
        weight=rng.uniform(0.5, 5.0, n),
        noise_bandwidth="band",
        empty_queue_budget_s=4.0,
    )


_MBIT = 1e6  # the CVXPY form counts bits in Mbit (Clarabel fails on bits and seconds)


class DispatchCvxpy:
    """(D4) as one CVXPY problem over n candidates (separable, DPP, re-solved): at the price
    lambda_k that makes the latency D_th, the step's (O, p, f) minimises
    V gamma(O) + w (kappa C f^2 + p u) subject to latency <= D_th (a minimiser of the Lagrangian
    that meets the constraint with equality). In x = 1/O, compute time tau = c f_max / f and
    upload time u, with s >= fixed + per / x the bits: p = (2^(s / (b B u)) - 1) / a, so
    p u = (u e^(ln2 s / (b B u)) - u) / a, an exponential cone; p <= P_max is
    s <= b B log2(1 + a P_max) u; gamma = offset + a_g (x^2 - x)^2 with g >= x^2 - x >= 0."""

    def __init__(self, n: int) -> None:
        self.par = {
            key: cp.Parameter(n, nonneg=True, name=key)
            for key in ("ln2_per_bbu", "cap", "fixed", "per", "va", "cmp", "up", "tau_lo", "tau_hi")
        }
        self.d_th = cp.Parameter(nonneg=True, name="d_th")
        self.x_hi = cp.Parameter(nonneg=True, name="x_hi")
        p = self.par
        self.x, self.g = cp.Variable(n), cp.Variable(n, nonneg=True)
        self.tau, self.u = cp.Variable(n), cp.Variable(n, nonneg=True)
        self.s, self.t = cp.Variable(n), cp.Variable(n)
        objective = (
            p["va"] @ cp.square(self.g)
            + p["cmp"] @ cp.power(self.tau, -2)
            + p["up"] @ (self.t - self.u)
        )
        constraints = [
            self.g >= cp.square(self.x) - self.x,
            self.x >= 1.0,
            self.x <= self.x_hi,
            self.s >= p["fixed"] + cp.multiply(p["per"], cp.inv_pos(self.x)),
            cp.constraints.ExpCone(cp.multiply(p["ln2_per_bbu"], self.s), self.u, self.t),
            self.s <= cp.multiply(p["cap"], self.u),
            self.tau >= p["tau_lo"],
            self.tau <= p["tau_hi"],
            self.tau + self.u <= self.d_th,
        ]
        self.problem = cp.Problem(cp.Minimize(objective), constraints)
        assert self.problem.is_dpp()

    def solve(self, x: dict) -> float:
        """V gamma(O) + sum_k w_k E_k at the optimum (offset 0) [J]."""
        a = np.asarray(x["snr_per_w"], float)  # noise over the band: rate b B log2(1 + a p)
        bb = x["share"] * x["bandwidth_hz"]
        f_max, c = np.asarray(x["f_max_hz"], float), np.asarray(x["compute_s"], float)
        values = dict(
            ln2_per_bbu=np.full(a.size, math.log(2.0) * _MBIT / bb),  # s in Mbit
            cap=bb * np.log2(1.0 + a * x["p_max_w"]) / _MBIT,
            fixed=np.asarray(x["fixed_bits"], float) / _MBIT,
            per=np.asarray(x["per_ratio_bits"], float) / _MBIT,
            va=np.full(a.size, x["V"] * x["a"]),
            cmp=x["weight"] * x["kappa"] * x["cycles"] * (c * f_max) ** 2,
            up=x["weight"] / a,
            tau_lo=c,
            tau_hi=c * f_max / np.asarray(x["f_min_hz"], float),
        )
        for key, value in values.items():
            self.par[key].value = np.asarray(value, float)
        self.d_th.value, self.x_hi.value = x["empty_queue_budget_s"], 1.0 / x["o_min"]
        self.problem.solve(solver="CLARABEL")
        if self.problem.status not in ("optimal", "optimal_inaccurate"):
            raise cp.SolverError(f"(D4) by CVXPY: status {self.problem.status!r}")
        return float(self.problem.value)


def bench_dispatch(n: int, quick: bool) -> dict[str, float]:
    """(D4) for n candidates: ``solve_dispatch_radio`` against :class:`DispatchCvxpy`."""
    x = dispatch_instance(n)
    ours = solve_dispatch_radio(queue=0.0, **x)
    d = ours.dispatch
    energy = ours.compute_energy_j + ours.tx_power_w * d.upload_s
    value = float(np.sum(x["V"] * d.penalty + x["weight"] * energy))
    twin = DispatchCvxpy(n)
    theirs = twin.solve(x)  # the first solve canonicalises
    reps = 3 if quick else 7
    return dict(
        ours=per_call_us(lambda: solve_dispatch_radio(queue=0.0, **x), number=1, repeats=reps),
        cvxpy=per_call_us(lambda: twin.solve(x), number=1, repeats=reps),
        agree=(theirs - value) / abs(theirs),
        latency_s=float(np.max(np.abs(d.latency_s - x["empty_queue_budget_s"]))),
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats (smoke test)")
    ap.add_argument("--check", action="store_true", help="exit 1 if the ratio goal is missed")
    args = ap.parse_args()

    print("optim benchmark (median per call, microseconds)")
    print(
        f"{'K of N':>14} {'exact step':>11} {'decide':>9} {'cvxpy 1st':>11} "
        f"{'cvxpy re':>10} {'exact/re':>9} {'minmax bw':>10}"
    )
    res = {}
    for k, n in [(10, 100), (1000, 10_000)]:
        r = bench_online(k, n, args.quick)
        res[k] = r
        print(
            f"{f'{k} of {n}':>14} {r['exact']:11.1f} {r['decide']:9.1f} {r['cvxpy_first']:11.0f} "
            f"{r['cvxpy_resolve']:10.0f} {100 * r['exact'] / r['cvxpy_resolve']:8.2f}% "
            f"{r['minmax']:10.1f}"
        )
    print(
        f"cvxpy first solve / re-solve (N=100): "
        f"{res[10]['cvxpy_first'] / res[10]['cvxpy_resolve']:.1f}x"
    )

    print("\nexact step scaling in K (N = 10 K): time per call and per client")
    rng = np.random.default_rng(0)
    base = None
    for k in (10, 100, 1_000, 10_000, 100_000):
        snr = rayleigh_snr(rng, k)
        number = max(20, 200_000 // k) if not args.quick else max(5, 20_000 // k)

        def step(snr: np.ndarray = snr, k: int = k) -> object:
            return solve_slot(queue=5.0, snr=snr, n_clients=10 * k, method="exact", **COMMON)

        t = per_call_us(step, number=number, repeats=3 if args.quick else 5)
        base = base or t
        print(f"  K={k:>7}: {t:10.1f} us  {1e3 * t / k:9.2f} ns/client  ({t / base:6.1f}x K=10)")

    print("\noffline rank search (Algorithm 2), r_max = 64")
    off = {}
    for n in (100, 10_000):
        k = n // 10
        mean_snr = 10 ** np.random.default_rng(n).uniform(-0.5, 2.0, size=n)

        def search(mean_snr: np.ndarray = mean_snr, k: int = k) -> object:
            # the band grows with K (1 MHz per 10 scheduled clients) so the budget stays feasible
            return offline_rank_search(
                mean_snr=mean_snr,
                n_scheduled=k,
                d_th_s=60.0,
                params_per_rank=P,
                bits_per_value=32,
                bandwidth_hz=1e5 * k,
                o_min=0.05,
                constants=BoundConstants(r_max=64),
            )

        off[n] = per_call_us(search, number=50 if args.quick else 300, repeats=5)
        result = search()
        print(
            f"  N={n:>6}, K={k:>5}: {off[n]:9.1f} us  (rank {result.rank}, "
            f"O^0 = {result.sparsification:.3f}, {int(result.feasible.sum())} feasible ranks)"
        )

    print("\njoint step (solve_joint_step) vs CVXPY on the same problem (J2), milliseconds")
    print("(each after a first call that compiles or loads the step's numba kernel, timed apart)")
    print(
        f"{'K':>6} {'ours, O fixed':>14} {'CVXPY, O fixed':>15} {'ours/CVXPY':>11} "
        f"{'ours, O free':>13} {'CVXPY, O free':>14} {'ours/CVXPY':>11} {'CVXPY-ours':>11}"
    )
    joint = {}
    for k in (10, 1_000):
        j = joint[k] = bench_joint(k, args.quick)
        if math.isnan(j["agree"]):  # CVXPY failed: its column is the time it took to fail
            print(
                f"{k:>6} {j['fixed'] / 1e3:14.1f} {'failed':>15} {'-':>11} "
                f"{j['with_ratio'] / 1e3:13.1f} {'-':>14} {'-':>11} {'-':>11}"
            )
            print(f"{'':>6} CVXPY failed after {j['cvxpy'] / 1e6:.0f} s: {j['status']}")
            continue
        print(
            f"{k:>6} {j['fixed'] / 1e3:14.1f} {j['cvxpy'] / 1e3:15.1f} "
            f"{100 * j['fixed'] / j['cvxpy']:10.0f}% {j['with_ratio'] / 1e3:13.1f} "
            f"{j['cvxpy_ratio'] / 1e3:14.1f} {100 * j['with_ratio'] / j['cvxpy_ratio']:10.0f}% "
            f"{j['agree']:11.1e}"
        )
        print(
            f"{'':>6} CVXPY status at O fixed: {j['status']}; objective CVXPY - ours, relative: "
            f"{j['agree']:.1e} (O fixed), {j['agree_ratio']:.1e} (O free, {j['solves']} solves)"
        )
    print(
        "first call (numba kernel compiled, or loaded from its cache): "
        + ", ".join(f"K = {k}: {joint[k]['first_s']:.2f} s" for k in joint)
    )
    n = 10
    d4 = bench_dispatch(n, args.quick)
    print(
        f"(D4) per-dispatch step, Q = 0 with energy prices, {n} candidates: ours "
        f"{d4['ours'] / 1e3:.2f} ms, CVXPY re-solve {d4['cvxpy'] / 1e3:.2f} ms, ours/CVXPY "
        f"{100 * d4['ours'] / d4['cvxpy']:.0f}%; objective CVXPY - ours, relative: "
        f"{d4['agree']:.1e}; |latency - D_th| <= {d4['latency_s']:.1e} s"
    )
    for name, ours_key, key in (
        ("O fixed", "fixed", "cvxpy"),
        ("O free", "with_ratio", "cvxpy_ratio"),
    ):
        share = joint[10][ours_key] / joint[10][key]
        print(
            f"goal: joint step <= 5 % of the CVXPY solve at K = 10, {name}: {100 * share:.0f}% -> "
            f"{'met' if share <= 0.05 else 'MISSED'} (not asserted by --check)"
        )

    ratio = res[10]["exact"] / res[10]["cvxpy_resolve"]
    ok = ratio < 0.01
    print(
        f"\ngoal: exact step < 1 % of the CVXPY re-solve at N = 100: {100 * ratio:.2f}% "
        f"-> {'met' if ok else 'MISSED'}"
    )
    return 0 if (ok or not args.check) else 1


if __name__ == "__main__":
    sys.exit(main())
