"""The quantiser's term added to gamma^t (eq. 14) when clients send stochastically quantised
updates (docs/solvers.md, "Choosing the quantiser's bits").

Each arrived client k sends Q(Delta_k) with E[Q(Delta_k)] = Delta_k and
E||Q(Delta_k) - Delta_k||^2 <= q ||Delta_k||^2 (QSGD, D. Alistarh et al., arXiv:1610.02132,
Lemma 3.1; q = min(n / (4 s^2), sqrt(n) / s) for a block of n values scaled by its largest
magnitude, :meth:`wirelessfl.algorithms.quantization.Quantizer.variance_factor`). With
||Delta_k|| <= eta E G (E local steps of stochastic gradients bounded by G, Assumption 6) and
independent rounding at the K clients of weight 1 / K, the aggregate's quantisation noise has
zero mean and E||.||^2 <= q eta^2 E^2 G^2 / K; the S-smooth descent step adds S / 2 times it:

    gamma_Q = S q eta^2 E^2 G^2 / (2 K).

This term is derived here, by the step that bounds the other noise terms of eq. (14); it is not
in Kim & Choi's Theorem 1. It does not depend on O (q is taken at the largest block).
"""

from __future__ import annotations

from optim.bound import BoundConstants

__all__ = ["quantization_term"]


def quantization_term(
    *, variance_factor: float, n_scheduled: int, constants: BoundConstants
) -> float:
    """gamma_Q = S q eta^2 E^2 G^2 / (2 K) (module docstring); 0 for q = 0 (no quantiser).

    Args:
        variance_factor: q >= 0, the quantiser's relative variance bound.
        n_scheduled: K >= 1, clients aggregated in the round.
        constants: the Theorem 1 constants (S, eta, E, G).
    """
    c = constants
    return c.S * float(variance_factor) * c.eta**2 * c.E**2 * c.G**2 / (2.0 * int(n_scheduled))
