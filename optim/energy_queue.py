"""Energy-budget virtual queues: one per device, for a time-average energy constraint.

Constraint (per device k): lim sup_T (1/T) sum_t E_k^t <= E_bar_k [J/round], with E_k^t the
energy device k spends in round t (0 when it is not scheduled). The standard Lyapunov treatment
of a time-average constraint (Neely 2010, "Stochastic Network Optimization with Application to
Communication and Queueing Systems", ch. 4) keeps a virtual queue per device,

    Z_k^{t+1} = max(Z_k^t + E_k^t - E_bar_k, 0),   Z_k^0 = 0   [J],            (E1)

and a device whose queue is mean-rate stable (Z_k^T / T -> 0) meets its budget, because
telescoping (E1) gives (1/T) sum_{t<T} E_k^t <= E_bar_k + Z_k^T / T.

With the delay queue Q of eq. (21) the Lyapunov function becomes
L = ½ Q² + ½ sum_k Z_k², where Q [s] and Z_k [J] are added as their SI numbers (1 s of
queued delay weighs as much as 1 J of queued energy; give energies in another unit to change
that exchange rate). The drift-plus-penalty bound of eq. (25)-(28) then gains
sum_k Z_k^t (E_k^t - E_bar_k), so the per-slot problem P3 (eq. 29) becomes

    minimize_O  Q^t D^t(O) + V gamma^t(O) + sum_{k in K^t} Z_k^t E_k^t(O),     (E2)
    E_k^t(O) = E_comp,k + P_k D^t(O),

since with the equal-delay shares of eq. (31) every scheduled client transmits for D^t(O) = c O
at its power P_k [W]. E_comp,k does not depend on O, so (E2) is P3 with Q^t c replaced by
c (Q^t + Pi^t), Pi^t = sum_{k in K^t} Z_k^t P_k [J·W] the *energy price* (see
:func:`optim.online.solve_slot`, keyword ``energy_price_jw``, and :meth:`EnergyQueues.price`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["EnergyQueues", "energy_queue_update"]

_STATE_FORMAT = "optim.EnergyQueues/1"


def _vector(name: str, values: ArrayLike, n: int | None, *, positive: bool) -> NDArray[np.float64]:
    try:
        arr = np.array(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a 1-D array of real numbers; got {values!r}") from None
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array; got shape {arr.shape}")
    if n is not None and arr.size != n:
        raise ValueError(f"{name} must have length {n} (one per device); got length {arr.size}")
    ok = np.isfinite(arr) & ((arr > 0.0) if positive else (arr >= 0.0))
    if not ok.all():
        i = int(np.flatnonzero(~ok)[0])
        op = "> 0" if positive else ">= 0"
        raise ValueError(f"{name} must hold finite values {op}; got {arr[i].item()!r} at index {i}")
    return arr


def energy_queue_update(
    value: ArrayLike, energy_j: ArrayLike, budget_j: ArrayLike
) -> NDArray[np.float64]:
    """Eq. (E1) for every device: max(Z + E - E_bar, 0) [J] (no checks; broadcasting)."""
    z = np.asarray(value, dtype=np.float64) + np.asarray(energy_j, dtype=np.float64)
    return np.maximum(z - np.asarray(budget_j, dtype=np.float64), 0.0)


class EnergyQueues:
    """The per-device energy queues Z_k^t of eq. (E1) (see the module docstring).

    Args:
        budget_j: (N,) time-average energy budget E_bar_k per device per round [J/round], > 0.
        value: (N,) initial Z^0 [J], >= 0; zeros by default.

    Attributes:
        budget_j: (N,) E_bar [J/round] (a copy; read-only by convention).
        value: (N,) the current Z^t [J].
    """

    def __init__(self, budget_j: ArrayLike, value: ArrayLike | None = None) -> None:
        self.budget_j = _vector("budget_j", budget_j, None, positive=True)
        n = self.budget_j.size
        self.value = np.zeros(n) if value is None else _vector("value", value, n, positive=False)

    @property
    def n_devices(self) -> int:
        """N, the number of devices (queues)."""
        return int(self.budget_j.size)

    def update(self, energy_j: ArrayLike) -> NDArray[np.float64]:
        """Z <- max(Z + E - E_bar, 0) with the round's energy (N,) >= 0 [J]; returns a copy of Z.

        A device that was not scheduled spends 0 and its queue drains by E_bar.
        """
        e = _vector("energy_j", energy_j, self.n_devices, positive=False)
        self.value = energy_queue_update(self.value, e, self.budget_j)
        return self.value.copy()

    def price(self, client_ids: ArrayLike, tx_power_w: ArrayLike) -> float:
        """The energy price Pi = sum_k Z_k P_k over the given (scheduled) devices [J·W].

        Args:
            client_ids: (K,) device indices in [0, N).
            tx_power_w: (K,) their transmit powers P_k [W], finite and >= 0 (aligned with
                ``client_ids``).
        """
        ids = np.asarray(client_ids)
        if ids.ndim != 1 or (ids.size and not np.issubdtype(ids.dtype, np.integer)):
            raise ValueError(f"client_ids must be a 1-D array of device indices; got {ids!r}")
        if ids.size and (ids.min() < 0 or ids.max() >= self.n_devices):
            raise ValueError(f"client_ids must be in [0, {self.n_devices}); got {ids.tolist()}")
        if ids.size == 0:
            return 0.0
        p = _vector("tx_power_w", tx_power_w, ids.size, positive=False)
        return float(np.dot(self.value[ids], p))

    def state_dict(self) -> dict[str, Any]:
        """JSON-serialisable state: ``format``, ``budget_j`` and ``value`` (lists of floats)."""
        return {
            "format": _STATE_FORMAT,
            "budget_j": self.budget_j.tolist(),
            "value": self.value.tolist(),
        }

    def load_state_dict(self, state: dict[str, Any], *, strict: bool = True) -> None:
        """Restore Z from :meth:`state_dict` output (possibly through JSON).

        Args:
            strict: also require the saved ``budget_j`` to equal this object's.

        Raises:
            ValueError: wrong format, wrong length, negative or non-finite values, or (strict)
                a different budget.
        """
        if not isinstance(state, dict) or state.get("format") != _STATE_FORMAT:
            raise ValueError(f"state must be a dict with format={_STATE_FORMAT!r}")
        value = _vector("state['value']", state.get("value"), self.n_devices, positive=False)
        if strict and "budget_j" in state:
            saved = _vector("state['budget_j']", state["budget_j"], self.n_devices, positive=True)
            if not np.array_equal(saved, self.budget_j):
                raise ValueError(
                    "state['budget_j'] differs from this queue's budget_j; pass strict=False "
                    "to load anyway"
                )
        self.value = value
