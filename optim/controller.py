"""Lyapunov online controller: the virtual queue of eq. (21) around the per-slot solver P3.

Lyapunov function L(Q) = Q^2 / 2 (an erratum, see docs/solvers.md: the paper's eq. 22 writes
(D^t)^2 / 2, a typo; the drift bound of eq. 25-28 is derived for Q). Minimising the drift-plus-
penalty bound (eq. 28 + V gamma^t) slot by slot gives P3 (eq. 29), solved by
:func:`optim.online.solve_slot`; the queue then evolves as Q^{t+1} = max(Q^t + D^t - D_th, 0),
Q^0 = 0 (eq. 21). The usual drift-plus-penalty trade-off holds: the time-average bound is within
O(1/V) of optimal while the queue (the accumulated delay excess) grows as O(V).

Usage per round::

    sol = ctrl.decide(snr)          # O^t, b^t, planned D^t, gamma^t; the queue is unchanged
    ...                             # the simulator runs the round
    ctrl.update(observed_delay_s)   # eq. (21) with the delay that actually happened

or ``ctrl.step(snr)`` for decide + update with the planned delay (returns the solution with
``queue_after`` filled in).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from optim._validation import check_real, check_snr
from optim.bound import BoundConstants
from optim.online import SlotSolution, _solve_checked, check_slot_config

__all__ = ["LyapunovController", "VirtualQueue", "queue_update"]

_STATE_FORMAT = "optim.LyapunovController/1"
_HISTORY_KEYS = (
    "queue",
    "sparsification",
    "planned_delay_s",
    "delay_s",
    "bound",
    "queue_after",
)


def queue_update(queue: float, delay_s: float, d_th_s: float) -> float:
    """Virtual-queue recursion of eq. (21): Q^{t+1} = max(Q^t + D^t - D_th, 0) [s]."""
    return max(queue + delay_s - d_th_s, 0.0)


class VirtualQueue:
    """The virtual queue Q^t of eq. (21), the one place it is kept.

    Args:
        d_th_s: delay budget D_th [s], > 0.
        value: Q^0 [s], >= 0 (0 in the paper).

    Attributes:
        value: the current Q^t [s].
    """

    def __init__(self, d_th_s: float, value: float = 0.0) -> None:
        self.d_th_s = check_real("d_th_s", d_th_s, low=0.0, low_open=True)
        self.value = check_real("value", value, low=0.0)

    def update(self, delay_s: float) -> float:
        """Q <- max(Q + D^t - D_th, 0) with the observed delay D^t [s]; returns the new Q."""
        self.value = queue_update(self.value, delay_s, self.d_th_s)
        return self.value


class LyapunovController:
    """Online stage of TSFA: per-round O^t and b^t from the queue and the observed channel.

    All arguments are keyword-only; see :func:`optim.online.solve_slot` for their meaning.

    Args:
        V: penalty weight, >= 0.
        d_th_s: delay budget D_th [s] of the time-average constraint (15c), > 0.
        rank: LoRA rank r (from the offline stage), integer in [1, constants.r_max].
        n_clients: N.
        params_per_rank: p = sum_l (d_l + l_l).
        bits_per_value: v [bit].
        bandwidth_hz: B [Hz].
        o_min: O_min in (0, 1).
        constants: Theorem 1 constants.
        method: ``"exact"`` or ``"cvxpy"`` (the CVXPY problem is built once per controller).
        queue: the :class:`VirtualQueue` to update (shared with a caller that reads Q^t);
            a new one at Q = 0 by default. Its ``d_th_s`` must equal ``d_th_s``.

    Attributes:
        queue: Q^t [s] (read-only property; starts at 0).
        history: per-round arrays, see :attr:`history`.
    """

    def __init__(
        self,
        *,
        V: float,
        d_th_s: float,
        rank: int,
        n_clients: int,
        params_per_rank: float,
        bits_per_value: float,
        bandwidth_hz: float,
        o_min: float,
        constants: BoundConstants,
        method: str = "exact",
        queue: VirtualQueue | None = None,
    ) -> None:
        (
            self._rank,
            self._n_clients,
            self._params_per_rank,
            self._bits_per_value,
            self._bandwidth_hz,
            self._o_min,
        ) = check_slot_config(
            rank=rank,
            n_clients=n_clients,
            params_per_rank=params_per_rank,
            bits_per_value=bits_per_value,
            bandwidth_hz=bandwidth_hz,
            o_min=o_min,
            constants=constants,
            method=method,
        )
        self._V = check_real("V", V, low=0.0)
        self._d_th_s = check_real("d_th_s", d_th_s, low=0.0, low_open=True)
        self._constants = constants
        self._method = method
        self._cvxpy_problem: object | None = None
        if method == "cvxpy":
            from optim.p3_cvxpy import P3CvxpyProblem

            self._cvxpy_problem = P3CvxpyProblem()
        self._q = queue if queue is not None else VirtualQueue(self._d_th_s)
        if self._q.d_th_s != self._d_th_s:
            raise ValueError(
                f"queue.d_th_s ({self._q.d_th_s}) differs from d_th_s ({self._d_th_s})"
            )
        self._pending: SlotSolution | None = None
        self._hist: dict[str, list[float]] = {key: [] for key in _HISTORY_KEYS}

    # ------------------------------------------------------------------ properties
    @property
    def queue(self) -> float:
        """Current virtual queue Q^t [s]."""
        return self._q.value

    @property
    def V(self) -> float:  # noqa: N802 - the paper's symbol
        """Penalty weight V."""
        return self._V

    @property
    def d_th_s(self) -> float:
        """Delay budget D_th [s]."""
        return self._d_th_s

    @property
    def rank(self) -> int:
        """LoRA rank r."""
        return self._rank

    @property
    def rounds(self) -> int:
        """Rounds completed (calls to :meth:`update`)."""
        return len(self._hist["queue"])

    @property
    def history(self) -> dict[str, NDArray[np.float64]]:
        """Per-round records, one entry per :meth:`update`, each a (rounds,) array.

        Keys: ``queue`` (Q^t before the round [s]), ``sparsification`` (O^t), ``planned_delay_s``
        (D^t planned by :meth:`decide` [s]), ``delay_s`` (D^t passed to :meth:`update` [s]),
        ``bound`` (gamma^t), ``queue_after`` (Q^{t+1} [s]). A round updated without a preceding
        :meth:`decide` has NaN sparsification, planned delay and bound.
        """
        return {key: np.asarray(vals, dtype=np.float64) for key, vals in self._hist.items()}

    # ------------------------------------------------------------------ control
    def decide(self, snr: ArrayLike, *, energy_price_jw: float = 0.0) -> SlotSolution:
        """Solve P3 for this round's channel; does NOT change the queue.

        Args:
            snr: (K,) linear SNRs of the scheduled clients (finite, > 0, K <= n_clients).
            energy_price_jw: Pi^t = sum_k Z_k^t P_k >= 0 [J·W] over the scheduled clients
                (:meth:`optim.EnergyQueues.price`); 0 (default): no energy budget. See
                :func:`optim.online.solve_slot`.

        Returns:
            :class:`optim.online.SlotSolution` with ``queue_before`` = :attr:`queue`.
        """
        s = check_snr("snr", snr)
        price = check_real("energy_price_jw", energy_price_jw, low=0.0)
        if s.size > self._n_clients:
            raise ValueError(f"len(snr) (K) must be <= n_clients={self._n_clients}; got {s.size}")
        sol = _solve_checked(
            self._q.value,
            self._V,
            s,
            self._rank,
            self._n_clients,
            self._params_per_rank,
            self._bits_per_value,
            self._bandwidth_hz,
            self._o_min,
            self._constants,
            self._method,
            self._cvxpy_problem,
            price,
        )
        self._pending = sol
        return sol

    def update(self, delay_s: float) -> float:
        """Apply eq. (21) with the round delay the simulator observed; return the new queue [s].

        Args:
            delay_s: D^t [s], finite and >= 0 (faults can make it differ from the plan).
        """
        d = check_real("delay_s", delay_s, low=0.0)
        q_before = self._q.value
        self._q.update(d)
        pending = self._pending
        self._pending = None
        h = self._hist
        h["queue"].append(q_before)
        h["sparsification"].append(pending.sparsification if pending else math.nan)
        h["planned_delay_s"].append(pending.delay_s if pending else math.nan)
        h["delay_s"].append(d)
        h["bound"].append(pending.bound if pending else math.nan)
        h["queue_after"].append(self._q.value)
        return self._q.value

    def step(self, snr: ArrayLike, *, energy_price_jw: float = 0.0) -> SlotSolution:
        """:meth:`decide`, then :meth:`update` with the planned delay.

        The energy queues (if any) are the caller's: update them with the round's energies.

        Returns:
            the decision with ``queue_after`` = Q^{t+1}.
        """
        sol = self.decide(snr, energy_price_jw=energy_price_jw)
        q = self.update(sol.delay_s)
        return replace(sol, queue_after=q)

    # ------------------------------------------------------------------ persistence
    def _config(self) -> dict[str, Any]:
        return {
            "V": self._V,
            "d_th_s": self._d_th_s,
            "rank": self._rank,
            "n_clients": self._n_clients,
            "params_per_rank": self._params_per_rank,
            "bits_per_value": self._bits_per_value,
            "bandwidth_hz": self._bandwidth_hz,
            "o_min": self._o_min,
            "method": self._method,
            "constants": self._constants.to_dict(),
        }

    def state_dict(self) -> dict[str, Any]:
        """JSON-serialisable state for resume: floats, ints, strings and lists only.

        Keys: ``format``, ``queue`` (Q^t), ``config`` (the constructor arguments),
        ``history`` (lists per :attr:`history` key; NaN stored as ``None``). Floats survive
        ``json.dumps``/``json.loads`` exactly, so a resumed controller continues bit for bit.
        """
        return {
            "format": _STATE_FORMAT,
            "queue": self._q.value,
            "config": self._config(),
            "history": {
                key: [None if math.isnan(x) else x for x in vals]
                for key, vals in self._hist.items()
            },
        }

    def load_state_dict(self, state: dict[str, Any], *, strict: bool = True) -> None:
        """Restore the queue and history from :meth:`state_dict` output.

        Args:
            state: a dict produced by :meth:`state_dict` (possibly through JSON).
            strict: if True, raise when the saved ``config`` differs from this controller's.

        Raises:
            ValueError: wrong format, negative/non-finite queue, ragged history, or (strict)
                a config mismatch, naming the offending keys.
        """
        if not isinstance(state, dict) or state.get("format") != _STATE_FORMAT:
            raise ValueError(f"state must be a dict with format={_STATE_FORMAT!r}")
        queue = check_real("state['queue']", state.get("queue"), low=0.0)
        if strict and "config" in state:
            mine = self._config()
            diff = sorted(k for k in mine if state["config"].get(k) != mine[k])
            if diff:
                raise ValueError(
                    f"state['config'] differs from this controller in {diff}; pass strict=False "
                    "to load anyway"
                )
        hist_in = state.get("history", {})
        hist: dict[str, list[float]] = {}
        for key in _HISTORY_KEYS:
            vals = hist_in.get(key, [])
            if not isinstance(vals, list):
                raise ValueError(f"state['history'][{key!r}] must be a list")
            hist[key] = [math.nan if x is None else float(x) for x in vals]
        if len({len(v) for v in hist.values()}) > 1:
            raise ValueError("state['history'] lists must all have the same length")
        self._q.value = queue
        self._hist = hist
        self._pending = None
