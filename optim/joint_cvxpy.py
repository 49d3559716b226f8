"""The joint Lyapunov step (J2) as a CVXPY problem: the baseline that :func:`optim.solve_joint_step`
is checked and timed against (docs/solvers.md, "Joint power, frequency, bandwidth and ratio").

At a fixed ratio O, (J2) is convex in log coordinates. With t_k = e^{u_k}, b_k = e^{v_k},
tau_k = e^{w_k} (upload time, share, compute time) and the spectral efficiency
lambda_k = c_k / (t_k b_k), c_k = ln2 s_k / B [s], the upload energy (J1) is

    E_up,k = (c_k / snr_k) phi(lambda_k),   phi(x) = (e^x - 1) / x = sum_{n >= 0} x^n / (n + 1)!

and the power p_k = E_up,k / t_k. phi has positive coefficients, so log phi(lambda) is a convex
function of log lambda = log c_k - u_k - v_k: the problem is a geometric program, except that
phi is no posynomial. CVXPY has no atom for phi (nor, in (t, b) themselves, for the
perspective of 2^x - 1 at the product t b, docs), so it is written with the halving identity
e^x - 1 = (e^{x/2} - 1)(e^{x/2} + 1), applied m times:

    log phi(x) = sum_{j=1..m} (log(1 + e^{x / 2^j}) - ln 2) + log phi(x / 2^m)

each log(1 + e^{x/2^j}) convex and increasing in the convex x = e^{log lambda} (``cp.logistic``),
and phi(x / 2^m), close to 1, by ``terms`` terms of its series (a log-sum-exp). The truncation
only lowers phi, by less than the next term over (1 - y / (terms + 2)), y = x / 2^m;
:attr:`JointCvxpyResult.truncation_rtol` bounds that share at the answer. In these
coordinates every part of (J2) at fixed O is DCP:

    minimise  Q D + sum_k Z_k (kappa_k C_k^3 e^{-2 w_k} + (c_k / snr_k) e^{r_k})
    s.t.      r_k >= log phi(lambda_k)   (the identity above, log lambda_k = log c_k - u_k - v_k)
              r_k - u_k <= log(p_max,k snr_k / c_k)                      (p_k <= p_max,k)
              e^{w_k} + e^{u_k} <= D,   sum_k e^{v_k} <= 1
              C_k / f_max,k <= e^{w_k} <= C_k / f_min,k

one problem for K clients, built once with every datum a Parameter (DPP), so a re-solve skips
canonicalisation, or (large K) built anew with the data at each solve. With O a decision,
:func:`solve_joint_step_cvxpy` runs the same search over O as :func:`optim.solve_joint_step`
(:func:`optim.joint.search_ratio`), one CVXPY solve per O.

Scope: every client has bits and cycles (log coordinates need s_k > 0 and C_k > 0), Q > 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import cvxpy as cp
import numpy as np
from numpy.typing import ArrayLike, NDArray

from optim._validation import check_nonneg_array, check_real
from optim.joint import search_ratio

__all__ = [
    "JointCvxpyProblem",
    "JointCvxpyResult",
    "JointCvxpyStep",
    "solve_joint_step_cvxpy",
    "truncation_rtol",
]

LN2 = math.log(2.0)
_HALVINGS = 6  # phi(lambda / 64) by its series: lambda / 64 <= 0.5 up to 32 nats/s/Hz
_TERMS = 10  # relative truncation below 3e-11 up to lambda = 32 nats/s/Hz
_FloatArray = NDArray[np.float64]


@dataclass(frozen=True, slots=True, eq=False)
class JointCvxpyResult:
    """CVXPY's answer to (J2) at one ratio (arrays of shape (K,)).

    Attributes:
        objective: Q D + sum_k Z_k E_k (without V gamma(O)) [s-weighted units].
        round_s: D [s]. upload_s, compute_s: t_k, tau_k [s]. share: b_k. power_w: p_k [W].
        status: CVXPY's status ("optimal" or "optimal_inaccurate").
        truncation_rtol: bound on the relative error of phi's truncated series at the answer.
    """

    objective: float
    round_s: float
    upload_s: _FloatArray
    compute_s: _FloatArray
    share: _FloatArray
    power_w: _FloatArray
    status: str
    truncation_rtol: float


_DATA = (  # the problem's data, each (K,) but the queue: names and CVXPY attributes
    ("log_c", {}),  # log(ln2 s / B)
    ("upload_coef", {"nonneg": True}),  # Z c / snr / ref
    ("compute_coef", {"nonneg": True}),  # Z kappa C^3 / ref
    ("log_power_cap", {}),  # log(p_max snr / c)
    ("log_tau_lo", {}),  # log(C / f_max)
    ("log_tau_hi", {}),  # log(C / f_min)
)


class JointCvxpyProblem:
    """(J2) at a fixed ratio for K clients as one CVXPY problem (module docstring).

    Args:
        k: the number of clients K.
        dpp: build once with every datum a Parameter, and re-solve (CVXPY's DPP); else build
            the problem with the data as constants at every solve (DPP's parameter maps grow
            as K^2 in memory: about 1.6 GB at K = 200).
        halvings: m of the halving identity. terms: the terms of phi's series kept.
        solver: an installed CVXPY solver for the exponential cone (default CLARABEL).
    """

    def __init__(
        self,
        k: int,
        *,
        dpp: bool = True,
        halvings: int = _HALVINGS,
        terms: int = _TERMS,
        solver: str = "CLARABEL",
    ) -> None:
        self.k, self.dpp, self.halvings, self.terms, self.solver = k, dpp, halvings, terms, solver
        self.problem: cp.Problem | None = None
        self._params: dict[str, cp.Parameter] = {}
        if dpp:
            self._params = {name: cp.Parameter(k, name=name, **attrs) for name, attrs in _DATA}
            self._params["queue"] = cp.Parameter(nonneg=True, name="queue")
            self._build(self._params)
            assert self.problem.is_dpp(), "(J2) must be DPP so that re-solves skip canonicalising"

    def _build(self, data: dict) -> None:
        """The problem of the module docstring, on Parameters or on arrays (``data``)."""
        k, halvings, terms = self.k, self.halvings, self.terms
        self._u, self._v, self._w = cp.Variable(k), cp.Variable(k), cp.Variable(k)
        self._r, self._d = cp.Variable(k), cp.Variable()
        log_lambda = data["log_c"] - self._u - self._v
        spectral = cp.exp(log_lambda)
        log_y = cp.reshape(log_lambda - halvings * LN2, (k, 1), order="C")
        powers = np.arange(terms, dtype=float).reshape(1, terms)
        log_fact = np.array([math.lgamma(m + 2.0) for m in range(terms)])
        log_phi = cp.log_sum_exp(log_y @ powers - log_fact, axis=1) + sum(
            cp.logistic(spectral / 2.0**j) - LN2 for j in range(1, halvings + 1)
        )
        objective = (
            data["queue"] * self._d
            + data["compute_coef"] @ cp.exp(-2.0 * self._w)
            + data["upload_coef"] @ cp.exp(self._r)
        )
        constraints = [
            self._r >= log_phi,
            self._r - self._u <= data["log_power_cap"],  # p_k <= p_max,k
            cp.exp(self._w) + cp.exp(self._u) <= self._d,
            cp.sum(cp.exp(self._v)) <= 1.0,
            self._w >= data["log_tau_lo"],
            self._w <= data["log_tau_hi"],
        ]
        self.problem = cp.Problem(cp.Minimize(objective), constraints)

    def solve(
        self,
        *,
        queue_s: float,
        energy_queue_j: _FloatArray,
        bits: _FloatArray,
        cycles: _FloatArray,
        snr_per_w: _FloatArray,
        f_min_hz: _FloatArray,
        f_max_hz: _FloatArray,
        kappa: _FloatArray,
        p_max_w: _FloatArray,
        bandwidth_hz: float,
    ) -> JointCvxpyResult:
        """Solve (J2) at fixed payloads ``bits`` (K,) [bit]; the other arguments as in
        :func:`optim.solve_joint_step` (validated (K,) arrays, Q > 0, bits and cycles > 0).

        Raises:
            cvxpy.SolverError: the solver reports neither optimal nor optimal_inaccurate.
        """
        c = LN2 * bits / bandwidth_hz
        # a scale of the optimum (the least times' costs), so the solver's tolerances are relative
        fastest = cycles / f_max_hz + c / (p_max_w * snr_per_w)
        ref = queue_s * float(np.max(fastest)) + float(
            np.sum(energy_queue_j * (kappa * cycles * f_max_hz**2 + c / snr_per_w))
        )
        values = {
            "log_c": np.log(c),
            "upload_coef": energy_queue_j * c / snr_per_w / ref,
            "compute_coef": energy_queue_j * kappa * cycles**3 / ref,
            "log_power_cap": np.log(p_max_w * snr_per_w / c),
            "log_tau_lo": np.log(cycles / f_max_hz),
            "log_tau_hi": np.log(cycles / f_min_hz),
            "queue": queue_s / ref,
        }
        if self.dpp:
            for name, value in values.items():
                self._params[name].value = value
        else:
            self._build(values)
        problem = self.problem
        problem.solve(solver=self.solver, canon_backend=cp.SCIPY_CANON_BACKEND)
        status = problem.status
        if status not in ("optimal", "optimal_inaccurate"):
            raise cp.SolverError(f"(J2) by CVXPY ({self.solver}): status {status!r}")
        upload, share = np.exp(self._u.value), np.exp(self._v.value)
        spectral = c / (upload * share)  # lambda [nats/s/Hz]
        return JointCvxpyResult(
            objective=float(problem.value) * ref,
            round_s=float(self._d.value),
            upload_s=upload,
            compute_s=np.exp(self._w.value),
            share=share,
            power_w=c / (upload * snr_per_w) * np.exp(self._r.value),
            status=status,
            truncation_rtol=float(
                np.max(truncation_rtol(spectral / 2.0**self.halvings, self.terms))
            ),
        )


def truncation_rtol(spectral: _FloatArray, terms: int) -> _FloatArray:
    """(K,) bound on (phi - phi_terms) / phi at lambda = ``spectral`` [nats/s/Hz]: the first
    omitted term x^terms / (terms + 1)! over (1 - x / (terms + 2)) (a geometric tail), over
    phi(x) = expm1(x) / x (inf where x >= terms + 2)."""
    x = np.asarray(spectral, dtype=float)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        first = np.exp(terms * np.log(x) - math.lgamma(terms + 2.0))
        tail = first / (1.0 - x / (terms + 2.0)) * x / np.expm1(x)
    return np.where(x < terms + 2.0, tail, np.inf)


@dataclass(frozen=True, slots=True, eq=False)
class JointCvxpyStep:
    """CVXPY's answer to (J2) with the search over O.

    Attributes:
        ratio: O. objective: V gamma(O) + Q D + sum_k Z_k E_k. at_ratio: the solve at O.
        solves: the number of CVXPY solves made.
    """

    ratio: float
    objective: float
    at_ratio: JointCvxpyResult
    solves: int


def solve_joint_step_cvxpy(
    *,
    queue_s: float,
    V: float,
    energy_queue_j: ArrayLike,
    offset: float,
    a: float,
    o_min: float,
    fixed_bits: ArrayLike,
    per_ratio_bits: ArrayLike = 0.0,
    cycles: ArrayLike,
    snr_per_w: ArrayLike,
    f_min_hz: ArrayLike,
    f_max_hz: ArrayLike,
    kappa: ArrayLike,
    p_max_w: ArrayLike,
    bandwidth_hz: float,
    problem: JointCvxpyProblem | None = None,
) -> JointCvxpyStep:
    """(J2) by CVXPY, with the arguments of :func:`optim.solve_joint_step`: one solve of
    :class:`JointCvxpyProblem` per ratio tried by :func:`optim.joint.search_ratio` (O = 1
    when no payload depends on it). ``problem``: one built for this K, to re-solve."""
    q = check_real("queue_s", queue_s, low=0.0, low_open=True)
    v = check_real("V", V, low=0.0)
    omin = check_real("o_min", o_min, low=0.0, high=1.0, low_open=True)
    fixed = check_nonneg_array("fixed_bits", np.atleast_1d(np.asarray(fixed_bits, float)))
    k = fixed.size

    def arr(name: str, value: ArrayLike) -> _FloatArray:
        return np.array(check_nonneg_array(name, np.broadcast_to(np.asarray(value, float), (k,))))

    per = arr("per_ratio_bits", per_ratio_bits)
    data = dict(
        queue_s=q,
        energy_queue_j=arr("energy_queue_j", energy_queue_j),
        cycles=arr("cycles", cycles),
        snr_per_w=arr("snr_per_w", snr_per_w),
        f_min_hz=arr("f_min_hz", f_min_hz),
        f_max_hz=arr("f_max_hz", f_max_hz),
        kappa=arr("kappa", kappa),
        p_max_w=arr("p_max_w", p_max_w),
        bandwidth_hz=check_real("bandwidth_hz", bandwidth_hz, low=0.0, low_open=True),
    )
    if fixed.min() <= 0.0 or data["cycles"].min() <= 0.0:
        raise ValueError("the CVXPY step needs fixed_bits > 0 and cycles > 0 for every client")
    problem = problem if problem is not None and problem.k == k else JointCvxpyProblem(k)
    off, a_coef = check_real("offset", offset), check_real("a", a, low=0.0)
    seen: dict[float, tuple[float, JointCvxpyResult]] = {}

    def objective_of(o: float) -> float:
        if o not in seen:
            found = problem.solve(bits=fixed + per * o, **data)  # type: ignore[arg-type]
            gamma = off + a_coef * (1.0 - o) ** 2 / o**4  # eq. (14)'s form
            seen[o] = (v * gamma + found.objective, found)
        return seen[o][0]

    o_best = search_ratio(objective_of, omin if per.max() > 0.0 else 1.0)
    objective_of(o_best)
    return JointCvxpyStep(o_best, seen[o_best][0], seen[o_best][1], len(seen))
