"""P3 (eq. 29) as a disciplined-parametrized (DPP) CVXPY problem, built once and re-solved.

The per-slot objective Q c O + V a (1 - O)^2 / O^4 (see :mod:`optim.p3`) is convex in O but not
DCP as written. With x = 1/O in [1, 1/O_min], (1 - O)^2 / O^4 = (x^2 - x)^2 and x^2 - x >= 0 on
x >= 1, so

    minimize_x  qc * inv_pos(x) + va * square(t),   t >= square(x) - x,  t >= 0,  1 <= x <= x_max

is an equivalent DCP problem (epigraph of the non-negative convex x^2 - x; square is increasing on
t >= 0). For conditioning it is solved in y = O_min x = O_min / O in [O_min, 1], which keeps the
variable of order one however small O_min is:

    minimize_y  w_q * inv_pos(y) + w_v * square(t)
    subject to  t >= square(y) - o_min * y,  t >= 0,  o_min <= y <= 1,

with w_q = qc O_min and w_v = va / O_min^4, both divided by max(w_q, w_v) (the argmin does not
change and the solver sees weights of order one). A weight that is exactly 0 (Q = 0 or V = 0)
leaves an epigraph variable with no cost, a degenerate problem CLARABEL flags as inaccurate, so
each scaled weight is floored at 1e-12: the objective moves by at most 1e-12 (the larger weight is
1 and both penalties are at most 1 / O_min and 1 on the feasible set).

``w_q``, ``w_v`` and ``o_min`` are :class:`cvxpy.Parameter` objects, so the problem is canonicalised
once and every later call only re-solves (``problem.is_dpp()`` is asserted).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import cvxpy as cp

__all__ = ["P3CvxpyProblem", "P3CvxpyResult", "default_problem", "reset_default_problem"]

logger = logging.getLogger(__name__)

_WEIGHT_FLOOR = 1e-12


@dataclass(frozen=True, slots=True)
class P3CvxpyResult:
    """Outcome of one CVXPY solve of P3.

    Attributes:
        sparsification: O* = 1/x* clipped to [O_min, 1], or ``None`` when no solver reported
            ``optimal``.
        status: the last CVXPY status string (``"optimal"`` on success, or the error text).
        solver: the solver that produced ``status``.
    """

    sparsification: float | None
    status: str
    solver: str


class P3CvxpyProblem:
    """P3 in DCP form with Parameters; construct once, call :meth:`solve` every slot.

    Args:
        solvers: solvers to try in order; the first one installed that reports ``optimal`` wins.
            Default: CLARABEL, then SCS (with tight tolerances) as a fallback.
    """

    def __init__(self, solvers: tuple[str, ...] = ("CLARABEL", "SCS")) -> None:
        installed = set(cp.installed_solvers())
        self.solvers = tuple(s for s in solvers if s in installed)
        if not self.solvers:
            raise ValueError(
                f"solvers must name at least one installed CVXPY solver; got {solvers}, "
                f"installed: {sorted(installed)}"
            )
        self._y = cp.Variable(name="o_min_over_sparsification")
        self._t = cp.Variable(nonneg=True, name="epigraph")
        self._wq = cp.Parameter(nonneg=True, name="queue_weight")
        self._wv = cp.Parameter(nonneg=True, name="penalty_weight")
        self._o_min = cp.Parameter(pos=True, name="o_min")
        y, t = self._y, self._t
        # eq. (29a) in y = O_min / O, up to the O-independent constant V * offset and a scale:
        #   Q D^t = qc O = (qc O_min) / y,   V a (1 - O)^2 / O^4 = (va / O_min^4) (y^2 - O_min y)^2.
        objective = cp.Minimize(self._wq * cp.inv_pos(y) + self._wv * cp.square(t))
        constraints = [
            t >= cp.square(y) - self._o_min * y,
            y >= self._o_min,  # eq. (29b): O <= 1
            y <= 1.0,  # eq. (29b): O >= O_min
        ]
        self.problem = cp.Problem(objective, constraints)
        assert self.problem.is_dpp(), "P3 must be DPP so that re-solves skip canonicalisation"

    def solve(self, *, qc: float, va: float, o_min: float) -> P3CvxpyResult:
        """Solve P3 for the given weights (see :func:`optim.p3.solve_p3_exact` for their meaning).

        Returns:
            :class:`P3CvxpyResult`; ``sparsification`` is ``None`` if every solver failed.
        """
        wq = qc * o_min
        wv = va / o_min**4
        scale = max(wq, wv)
        if scale <= 0.0:
            scale = 1.0
        self._wq.value = max(wq / scale, _WEIGHT_FLOOR)
        self._wv.value = max(wv / scale, _WEIGHT_FLOOR)
        self._o_min.value = o_min
        status, solver = "not solved", ""
        for solver in self.solvers:
            kwargs: dict[str, object] = {}
            if solver == "SCS":
                kwargs = {"eps_abs": 1e-10, "eps_rel": 1e-10, "max_iters": 200_000}
            try:
                self.problem.solve(solver=solver, **kwargs)
            except cp.SolverError as err:
                status = f"solver error: {err}"
                logger.warning("P3: CVXPY solver %s failed: %s", solver, err)
                continue
            status = str(self.problem.status)
            if status == cp.OPTIMAL and self._y.value is not None:
                y = float(self._y.value)
                o = min(1.0, max(o_min, o_min / y)) if y > 0 else o_min
                return P3CvxpyResult(sparsification=o, status=status, solver=solver)
            logger.warning("P3: CVXPY solver %s returned status %r", solver, status)
        return P3CvxpyResult(sparsification=None, status=status, solver=solver)


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
