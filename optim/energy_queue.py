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

Updated at participation (``rule="at_participation"``): a device's queue moves only in the
rounds in which it spends energy (E_k^t > 0), by the drain of every round since its last move,

    Z_k <- max(Z_k + E_k^t - E_bar_k g_k^t, 0),   g_k^t = rounds since its last move,     (E1')

this one included. Telescoping (E1') over the device's moves t_1 < ... < t_m gives
sum_{t<T} E_k^t <= E_bar_k (t_m + 1) + Z_k <= E_bar_k T + Z_k: the same bound as (E1), with
the max cutting drain only at moves, not in every idle round (docs/solvers.md).

Signed (``rule="signed"``): the queue of a time-average *equality* constraint (Neely 2010,
ch. 4), with no max: a negative Z_k is banked credit,

    Z_k^{t+1} = Z_k^t + E_k^t - E_bar_k,   priced at max(Z_k^t, 0),                 (E1'')

so telescoping gives (1/T) sum_{t<T} E_k^t = E_bar_k + Z_k^T / T exactly (no drain lost) and
sum_t E_k^t <= E_bar_k T + max(Z_k^T, 0). The step never sees a negative price (a reward for
energy would make it maximise energy): :attr:`EnergyQueues.price_weight_j` is max(Z, 0), which
equals Z under (E1) and (E1').
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["ENERGY_QUEUE_RULES", "EnergyQueues", "energy_queue_update"]

_STATE_FORMAT = "optim.EnergyQueues/1"

#: When a device's queue moves: every round by (E1), or only in the rounds it spends energy by
#: (E1') with the drain of the rounds since its last move, or every round with no max by (E1'').
ENERGY_QUEUE_RULES = ("every_round", "at_participation", "signed")


def _vector(
    name: str, values: ArrayLike, n: int | None, *, positive: bool, signed: bool = False
) -> NDArray[np.float64]:
    try:
        arr = np.array(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a 1-D array of real numbers; got {values!r}") from None
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array; got shape {arr.shape}")
    if n is not None and arr.size != n:
        raise ValueError(f"{name} must have length {n} (one per device); got length {arr.size}")
    ok = np.isfinite(arr)
    if not signed:
        ok &= (arr > 0.0) if positive else (arr >= 0.0)
    if not ok.all():
        i = int(np.flatnonzero(~ok)[0])
        op = "" if signed else (" > 0" if positive else " >= 0")
        raise ValueError(f"{name} must hold finite values{op}; got {arr[i].item()!r} at index {i}")
    return arr


def energy_queue_update(
    value: ArrayLike, energy_j: ArrayLike, budget_j: ArrayLike
) -> NDArray[np.float64]:
    """Eq. (E1) for every device: max(Z + E - E_bar, 0) [J] (no checks; broadcasting)."""
    z = np.asarray(value, dtype=np.float64) + np.asarray(energy_j, dtype=np.float64)
    return np.maximum(z - np.asarray(budget_j, dtype=np.float64), 0.0)


class EnergyQueues:
    """The per-device energy queues Z_k^t of eq. (E1), (E1') or (E1'') (module docstring).

    Args:
        budget_j: (N,) time-average energy budget E_bar_k per device per round [J/round], > 0.
        value: (N,) initial Z^0 [J], >= 0 (any finite value under signed); zeros by default.
        rule: ``"every_round"`` (E1), ``"at_participation"`` (E1') or ``"signed"`` (E1'').

    Attributes:
        budget_j: (N,) E_bar [J/round] (a copy; read-only by convention).
        value: (N,) the current Z^t [J] (at_participation: as of each device's last move;
            signed: negative where credit is banked).
        idle_rounds: (N,) int, the rounds since each device's last move whose drain (E1') has
            not taken yet (always 0 under every_round).
    """

    def __init__(
        self, budget_j: ArrayLike, value: ArrayLike | None = None, *, rule: str = "every_round"
    ) -> None:
        if rule not in ENERGY_QUEUE_RULES:
            raise ValueError(f"rule must be one of {ENERGY_QUEUE_RULES}; got {rule!r}")
        self.rule = rule
        self.budget_j = _vector("budget_j", budget_j, None, positive=True)
        n = self.budget_j.size
        self.value = np.zeros(n) if value is None else self._values("value", value)
        self.idle_rounds = np.zeros(n, dtype=np.int64)

    @property
    def n_devices(self) -> int:
        """N, the number of devices (queues)."""
        return int(self.budget_j.size)

    @property
    def price_weight_j(self) -> NDArray[np.float64]:
        """(N,) max(Z, 0) [J], the queue values the step prices energy at (Z itself under
        every_round and at_participation, whose Z never goes below 0)."""
        return np.maximum(self.value, 0.0)

    def _values(self, name: str, values: ArrayLike) -> NDArray[np.float64]:
        """(N,) queue values checked for this rule (>= 0, or any finite value under signed)."""
        signed = self.rule == "signed"
        return _vector(name, values, self.n_devices, positive=False, signed=signed)

    def update(self, energy_j: ArrayLike) -> NDArray[np.float64]:
        """One round with every device's energy (N,) >= 0 [J]; returns a copy of Z.

        every_round: Z <- max(Z + E - E_bar, 0) for all (a device that spends 0 drains by
        E_bar). at_participation: the devices with E > 0 take (E1') with g = idle_rounds + 1;
        the others only count the round in ``idle_rounds``. signed: Z <- Z + E - E_bar (E1'').
        """
        e = _vector("energy_j", energy_j, self.n_devices, positive=False)
        if self.rule == "signed":
            self.value = self.value + e - self.budget_j
            return self.value.copy()
        if self.rule == "every_round":
            self.value = energy_queue_update(self.value, e, self.budget_j)
            return self.value.copy()
        self.idle_rounds += 1
        moves = e > 0.0
        drain_j = self.budget_j[moves] * self.idle_rounds[moves]
        self.value[moves] = energy_queue_update(self.value[moves], e[moves], drain_j)
        self.idle_rounds[moves] = 0
        return self.value.copy()

    def price(self, client_ids: ArrayLike, tx_power_w: ArrayLike) -> float:
        """The energy price Pi = sum_k max(Z_k, 0) P_k over the given (scheduled) devices [J·W].

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
        return float(np.dot(self.price_weight_j[ids], p))

    def state_dict(self) -> dict[str, Any]:
        """JSON-serialisable state: ``format``, ``budget_j`` and ``value`` (lists of floats),
        and under at_participation ``idle_rounds`` (list of ints)."""
        state: dict[str, Any] = {
            "format": _STATE_FORMAT,
            "budget_j": self.budget_j.tolist(),
            "value": self.value.tolist(),
        }
        if self.rule == "at_participation":  # the key only there: old states unchanged
            state["idle_rounds"] = self.idle_rounds.tolist()
        return state

    def load_state_dict(self, state: dict[str, Any], *, strict: bool = True) -> None:
        """Restore Z (and the idle rounds) from :meth:`state_dict` output (possibly through JSON).

        Args:
            strict: also require the saved ``budget_j`` to equal this object's.

        Raises:
            ValueError: wrong format, wrong length, non-finite or (but under signed) negative
                values, idle rounds missing under at_participation (or present under another
                rule), or (strict) a different budget.
        """
        if not isinstance(state, dict) or state.get("format") != _STATE_FORMAT:
            raise ValueError(f"state must be a dict with format={_STATE_FORMAT!r}")
        value = self._values("state['value']", state.get("value"))
        if strict and "budget_j" in state:
            saved = _vector("state['budget_j']", state["budget_j"], self.n_devices, positive=True)
            if not np.array_equal(saved, self.budget_j):
                raise ValueError(
                    "state['budget_j'] differs from this queue's budget_j; pass strict=False "
                    "to load anyway"
                )
        idle = self._idle_rounds(state.get("idle_rounds"))
        self.value = value
        self.idle_rounds = idle

    def _idle_rounds(self, saved: Any) -> NDArray[np.int64]:
        """The saved ``idle_rounds`` checked against this queue's rule."""
        if self.rule != "at_participation":
            if saved is not None:
                raise ValueError(
                    f"state has idle_rounds (rule at_participation); this is {self.rule}"
                )
            return np.zeros(self.n_devices, dtype=np.int64)
        if saved is None:
            raise ValueError(
                "state has no idle_rounds (rule every_round); this is at_participation"
            )
        idle = _vector("state['idle_rounds']", saved, self.n_devices, positive=False)
        if not np.array_equal(idle, np.round(idle)):
            raise ValueError(f"state['idle_rounds'] must hold whole numbers; got {saved!r}")
        return idle.astype(np.int64)
