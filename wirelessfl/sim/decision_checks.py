"""The simulator's checks of a controller's decision and of measured values: one-line
``SimulationError`` messages naming the round, the value and what is kept."""

from __future__ import annotations

import math

import numpy as np

from wirelessfl.algorithms.finite import KEPT
from wirelessfl.controllers import Decision
from wirelessfl.errors import SimulationError

__all__ = ["CONSTANTS_HINT", "METRICS_HINT", "check_decision", "in_range", "listed"]

#: relative slack of the checks that a decided power and clock are within their ranges
RANGE_SLACK = 1e-12
CONSTANTS_HINT = "Check constants.* (Theorem 1's S, H, W, phi, G) and the controller's settings"
METRICS_HINT = "Lower learner.lr, or check the learner's and the algorithm's metrics"


def listed(values: dict[str, float]) -> str:
    """``loss = inf, algo.x = -inf``."""
    return ", ".join(f"{name} = {value}" for name, value in values.items())


def first_non_finite(value: object) -> str:
    """The first non-finite entry of a number or array, with its index if an array."""
    a = np.asarray(value, dtype=float)
    if a.ndim == 0:
        return str(float(a))
    i = int(np.flatnonzero(~np.isfinite(a.ravel()))[0])
    return f"{float(a.ravel()[i])} at index {i}"


def check_decision(t: int, decision: Decision) -> None:
    """A one-line ``SimulationError`` if the decision holds a non-finite value.

    A NaN bound is allowed (a controller that does not compute gamma^t); an infinite one
    is not.
    """
    values = {
        "O^t": decision.sparsification,
        "shares": decision.shares,
        "planned D^t": decision.planned_delay_s,
        "per-client ratios": decision.ratios if decision.ratios is not None else 1.0,
    }
    bad = [
        f"{name} {first_non_finite(v)}"
        for name, v in values.items()
        if not np.isfinite(np.asarray(v, dtype=float)).all()
    ]
    if math.isinf(decision.bound):
        bad.append(f"bound gamma^t {decision.bound}")
    if bad:
        raise SimulationError(
            f"round {t}: the controller's decision holds non-finite values "
            f"({'; '.join(bad)}); {KEPT} {CONSTANTS_HINT}"
        )


def in_range(
    t: int, clients: np.ndarray, what: str, value, low: np.ndarray, high: np.ndarray
) -> np.ndarray:
    """``value`` (m,) as floats for the (m,) ``clients`` of round ``t``, or a one-line
    ``SimulationError`` naming the first client outside [low, high] (a power must also be
    > 0), with a relative slack of :data:`RANGE_SLACK`."""
    v = np.asarray(value, dtype=float).reshape(-1)
    if v.shape != clients.shape:
        raise SimulationError(
            f"round {t}: the controller decided {v.size} values of {what} for "
            f"{clients.size} clients; {KEPT}"
        )
    bad = ~np.isfinite(v) | (v < low * (1 - RANGE_SLACK)) | (v > high * (1 + RANGE_SLACK))
    bad |= v <= 0.0
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise SimulationError(
            f"round {t}: the controller's {what} for client {int(clients[i])} is "
            f"{v[i]:g}, outside [{low[i]:g}, {high[i]:g}]; {KEPT}"
        )
    return np.clip(v, low, high)
