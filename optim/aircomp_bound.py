"""The over-the-air aggregation's term added to gamma^t (eq. 14) when the server receives the
round's updates as an analog sum (``channel.uplink: aircomp``; docs/simulator.md,
"Over-the-air aggregation", "What the network-only learner sees").

The server's estimate of the digital aggregate sum_k w_k Delta_k over the K arrived clients is
sum_k c_k w_k Delta_k + s z / sqrt(eta_d) per value (c_k the received coefficient, s =
max_k w_k RMS(Delta_k) the common symbol scale, z ~ N(0, 1), eta_d the denoising factor), so
it errs by e = sum_k (c_k - 1) w_k Delta_k + s z / sqrt(eta_d). With the symbols
x_k = w_k Delta_k / s taken as Cao et al. take them (uncorrelated, zero mean, at most unit power
per value), e has zero mean and, over the n values of the update,

    E||e||^2 <= n s^2 MSE,   MSE = sum_k (c_k - 1)^2 + 1 / eta_d

(the aggregation MSE per value, :func:`channels.aircomp.aggregation_mse`). With
||Delta_k|| <= eta E G (E local steps of stochastic gradients bounded by G, Assumption 6 of
Kim & Choi) and the weights 1 / K, n s^2 <= eta^2 E^2 G^2 / K^2: the error's energy relative
to the update's bound is MSE / K^2. The S-smooth descent step that bounds eq. (14)'s other
noise terms adds S / 2 times it:

    gamma_air = S MSE eta^2 E^2 G^2 / (2 K^2).

Like the quantiser's term (:mod:`optim.quantization_bound`) it is derived here, not in
Kim & Choi's Theorem 1; it does not depend on O or r.
"""

from __future__ import annotations

from optim._validation import check_int, check_real
from optim.bound import BoundConstants

__all__ = ["aircomp_term"]


def aircomp_term(*, mse: float, n_aggregated: int, constants: BoundConstants) -> float:
    """gamma_air = S MSE eta^2 E^2 G^2 / (2 K^2) (module docstring).

    Args:
        mse: the aggregation MSE per value over the K aggregated clients, >= 0.
        n_aggregated: K >= 1, the clients summed over the air.
        constants: the Theorem 1 constants (S, eta, E, G).
    """
    c = constants
    m = check_real("mse", mse, low=0.0)
    k = check_int("n_aggregated", n_aggregated, low=1)
    return c.S * m * c.eta**2 * c.E**2 * c.G**2 / (2.0 * k**2)
