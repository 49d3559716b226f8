"""A global certificate for the ratio search of the joint step (docs/solvers.md, "A global
certificate for the ratio"). Pure Python.

(J2)'s value at a ratio O is J(O) = V gamma(O) + G(O), where G(O) is the least
Q D + sum_k Z_k E_k over D, p, f and b at that O. Two monotonicities bound J on an interval
from its end points alone, without a Lipschitz constant:

- gamma(O) = offset + a (1 - O)^2 / O^4 is nonincreasing on (0, 1] (a >= 0: both factors of
  the second term fall as O grows);
- G is nondecreasing: bits_k(O) = fixed_k + per_k O grows with O (per_k >= 0), so at any round
  time D every client's feasible set shrinks as O grows, and so does the set of feasible D.

Hence for every O in [o, o'] within [O_min, 1]

    J(O) >= V gamma(o') + G(o)                                                        (J5)

and the least bound over intervals that cover [O_min, 1] is a lower bound on min J. Branch and
bound splits the interval of least bound at its middle until the incumbent (the least J seen)
is within the tolerance of it. The bound is exact for the G it is given: the inner solves'
own tolerances (the bandwidth price's duality gap, the round time's root) stay theirs.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["RatioCertificate", "certify_ratio"]

#: evaluations of G the branch and bound may add to those it is given
MAX_EVALUATIONS = 200


@dataclass(frozen=True)
class RatioCertificate:
    """The outcome of :func:`certify_ratio`.

    Attributes:
        ratio: the O of least J among those evaluated.
        objective: J there.
        lower_bound: a lower bound on min J over [O_min, 1] by (J5).
        gap: objective - lower_bound (>= 0).
        evaluations: values of G computed, the given ones included.
    """

    ratio: float
    objective: float
    lower_bound: float
    gap: float
    evaluations: int


def certify_ratio(
    rest_of: Callable[[float], float],
    penalty_of: Callable[[float], float],
    v: float,
    ratios: list[float],
    rtol: float,
    max_evaluations: int = MAX_EVALUATIONS,
) -> RatioCertificate:
    """Branch and bound on (J5) over [min(ratios), max(ratios)].

    Args:
        rest_of: O -> G(O), nondecreasing in O (J2's value at O without V gamma(O)).
        penalty_of: O -> gamma(O), nonincreasing in O.
        v: V >= 0.
        ratios: at least one O; the end points of the range and any points already known (the
            search's grid and its best), each evaluated once.
        rtol: stop when the gap is at most rtol max(|objective|, 1e-300).
        max_evaluations: stop there too (the gap then says how far it got).
    """
    points = sorted(set(ratios))
    rest = {o: rest_of(o) for o in points}

    def total(o: float) -> float:
        return v * penalty_of(o) + rest[o]

    def bound(lo: float, hi: float) -> float:
        return v * penalty_of(hi) + rest[lo]  # (J5)

    best = min(points, key=total)
    heap = [(bound(lo, hi), lo, hi) for lo, hi in zip(points, points[1:], strict=False)]
    heapq.heapify(heap)
    while heap and len(rest) < max_evaluations:
        low, lo, hi = heap[0]
        if total(best) - low <= rtol * max(abs(total(best)), 1e-300):
            break
        heapq.heappop(heap)
        mid = 0.5 * (lo + hi)
        if not lo < mid < hi:  # the interval is as small as floats allow: stop here
            heapq.heappush(heap, (low, lo, hi))
            break
        rest[mid] = rest_of(mid)
        if total(mid) < total(best):
            best = mid
        heapq.heappush(heap, (bound(lo, mid), lo, mid))
        heapq.heappush(heap, (bound(mid, hi), mid, hi))
    objective = total(best)
    lower = min([objective, *(b for b, _, _ in heap)])
    return RatioCertificate(
        ratio=best,
        objective=objective,
        lower_bound=lower,
        gap=max(objective - lower, 0.0),
        evaluations=len(rest),
    )
