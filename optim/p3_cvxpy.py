"""P3 (eq. 29) as a disciplined-parametrized (DPP) CVXPY problem, built once and re-solved.

With x = 1/O in [1, 1/O_min] the per-slot objective Q c O + V a (1 - O)^2 / O^4 (see
:mod:`optim.p3`) becomes

    minimize_x  w_q * inv_pos(x) + w_v * square(pos(square(x) - x))
    subject to  1 <= x <= x_max,

because (1 - O)^2 / O^4 = (x^2 - x)^2 and x^2 - x >= 0 on x >= 1, so wrapping it in ``pos``
changes nothing on the feasible set while making the composition DCP (square of a non-negative
convex expression). ``w_q``, ``w_v`` and ``x_max`` are :class:`cvxpy.Parameter` objects, so the
problem is canonicalised once and every later call only re-solves (``problem.is_dpp()`` is
asserted).

Numerics, so that the answer matches the exact solver to ~1e-8 on the objective:

- scaling: w_q = qc / f_ref and w_v = va / f_ref with f_ref the smallest objective value among
  x = 1, x = x_max and x = (qc / va)^(1/5) (where the two terms balance). f_ref >= f*, and it
  makes the optimal value of order one, so CLARABEL's absolute tolerances act as relative ones;
- boundary snap: an x within a relative 1e-5 of a bound is moved onto it (the interior-point
  iterate stays strictly inside; for an optimum that is truly interior but that close to the
  bound the objective changes only at second order, ~1e-10 relative);
- a zero weight (Q c = 0 or V a = 0) leaves an epigraph variable without cost, a degenerate
  problem CLARABEL reports as inaccurate; such instances have closed-form optima (O = 1 or O_min)
  and :func:`optim.online.solve_slot` answers them without calling this class.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import cvxpy as cp

__all__ = ["P3CvxpyProblem", "P3CvxpyResult", "default_problem", "reset_default_problem"]

logger = logging.getLogger(__name__)

_SNAP = 1e-5  # relative distance to a bound below which x is put on the bound


def _reference_value(qc: float, va: float, x_max: float) -> float:
    """An upper bound on the optimal value, of the same order (for scaling the objective)."""

    def f(x: float) -> float:
        return qc / x + va * (x * x - x) ** 2

    x_bal = min(x_max, max(1.0, (qc / va) ** 0.2)) if va > 0.0 else x_max
    ref = min(f(1.0), f(x_max), f(x_bal))
    return ref if ref > 0.0 else 1.0


@dataclass(frozen=True, slots=True)
class P3CvxpyResult:
    """Outcome of one CVXPY solve of P3.

    Attributes:
        sparsification: O* = 1/x* clipped to [O_min, 1], or ``None`` when no solver reported
            ``optimal``.
        status: the last CVXPY status string (``"optimal"`` on success, or the error text).
        solver: the solver that produced ``status``.
        failures: solvers that failed before ``solver`` answered (1: SCS rescued CLARABEL),
            or every solver tried when none answered.
    """

    sparsification: float | None
    status: str
    solver: str
    failures: int = 0


class P3CvxpyProblem:
    """P3 in DCP form with Parameters; construct once, call :meth:`solve` every slot.

    Args:
        solvers: solvers to try in order; the first one installed that reports ``optimal`` wins.
            Default: CLARABEL, then SCS (with tight tolerances) as a fallback.

    A solver's failure is counted in :attr:`P3CvxpyResult.failures` (the simulator's
    ``solver_fallback`` column) and logged: a warning the first time for this problem, at
    DEBUG level after that, so a run whose every slot needs SCS does not flood stderr.

    Attributes:
        warned: what this problem has already warned about (see :meth:`warn_once`).
    """

    def __init__(self, solvers: tuple[str, ...] = ("CLARABEL", "SCS")) -> None:
        installed = set(cp.installed_solvers())
        self.solvers = tuple(s for s in solvers if s in installed)
        if not self.solvers:
            raise ValueError(
                f"solvers must name at least one installed CVXPY solver; got {solvers}, "
                f"installed: {sorted(installed)}"
            )
        self.warned: set[str] = set()
        self._x = cp.Variable(name="inv_sparsification")
        self._wq = cp.Parameter(nonneg=True, name="queue_weight")
        self._wv = cp.Parameter(nonneg=True, name="penalty_weight")
        self._x_max = cp.Parameter(pos=True, name="inv_o_min")
        x = self._x
        # eq. (29a) in x = 1/O, up to the O-independent constant V * offset and the scale f_ref:
        #   Q D^t = qc O = qc / x,   V a (1 - O)^2 / O^4 = va (x^2 - x)^2.
        objective = cp.Minimize(
            self._wq * cp.inv_pos(x) + self._wv * cp.square(cp.pos(cp.square(x) - x))
        )
        constraints = [x >= 1.0, x <= self._x_max]  # eq. (29b): O_min <= O <= 1
        self.problem = cp.Problem(objective, constraints)
        assert self.problem.is_dpp(), "P3 must be DPP so that re-solves skip canonicalisation"

    def warn_once(self, log: logging.Logger, key: str, msg: str, *args: object) -> None:
        """Log ``msg`` as a warning the first time this problem sees ``key``, else at DEBUG."""
        if key in self.warned:
            log.debug(msg, *args)
            return
        self.warned.add(key)
        log.warning(msg + " (once per problem; later ones are logged at DEBUG)", *args)

    def solve(self, *, qc: float, va: float, o_min: float) -> P3CvxpyResult:
        """Solve P3 for the given weights (see :func:`optim.p3.solve_p3_exact` for their meaning).

        Returns:
            :class:`P3CvxpyResult`; ``sparsification`` is ``None`` if every solver failed.
        """
        x_max = 1.0 / o_min
        scale = _reference_value(qc, va, x_max)
        self._wq.value = qc / scale
        self._wv.value = va / scale
        self._x_max.value = x_max
        status, solver, failures = "not solved", "", 0
        for solver in self.solvers:
            kwargs: dict[str, object] = {}
            if solver == "SCS":
                kwargs = {"eps_abs": 1e-10, "eps_rel": 1e-10, "max_iters": 200_000}
            try:
                self.problem.solve(solver=solver, **kwargs)
            except cp.SolverError as err:
                status = f"solver error: {err}"
                failures += 1
                self.warn_once(logger, solver, "P3: CVXPY solver %s failed: %s", solver, err)
                continue
            status = str(self.problem.status)
            if status == cp.OPTIMAL and self._x.value is not None:
                x = float(self._x.value)
                if x >= x_max * (1.0 - _SNAP):
                    x = x_max
                elif x <= 1.0 + _SNAP:
                    x = 1.0
                o = min(1.0, max(o_min, 1.0 / x))
                return P3CvxpyResult(o, status, solver, failures)
            failures += 1
            self.warn_once(logger, solver, "P3: CVXPY solver %s returned status %r", solver, status)
        return P3CvxpyResult(None, status, solver, failures)


_DEFAULT: P3CvxpyProblem | None = None


def default_problem() -> P3CvxpyProblem:
    """The module-level P3 problem, built on first use and re-used by every later call."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = P3CvxpyProblem()
    return _DEFAULT


def reset_default_problem() -> None:
    """Drop the cached module-level problem (the next call rebuilds it; used by benchmarks)."""
    global _DEFAULT
    _DEFAULT = None
