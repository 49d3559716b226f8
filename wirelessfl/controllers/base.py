"""Controllers choose the rank r (before round 0) and, per round, O^t and the shares b_k^t.

A controller is one file with a subclass of :class:`Controller` plus one line in
``wirelessfl/controllers/__init__.py``'s registry.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

import numpy as np

from optim import BoundConstants


@dataclass(frozen=True)
class ControllerContext:
    """What a controller may know about the system before round 0."""

    n_clients: int  # N
    n_scheduled: int  # K
    mean_snr: np.ndarray  # (N,) average linear SNR (the offline stage's "average channel")
    params_per_rank: int  # sum over adapted layers of (d + l)
    bits_per_value: int  # v
    fixed_values: int  # values every client sends dense each round (task head), 0 in the paper
    bandwidth_hz: float  # B
    constants: BoundConstants
    settings: Any  # the scenario's ControllerConfig


@dataclass(frozen=True)
class Decision:
    """One round's decision for the clients that get bandwidth."""

    sparsification: float  # O^t
    shares: np.ndarray  # (K',) bandwidth shares b_k^t, summing to <= 1
    planned_delay_s: float  # D^t the controller expects with these shares
    bound: float  # gamma^t
    fell_back: bool = False  # CVXPY failed and the exact solver answered


class Controller(ABC):
    """Base class: a virtual queue (eq. 21) plus the decisions of a concrete policy."""

    def __init__(self, ctx: ControllerContext):
        self.ctx = ctx
        self._queue = 0.0
        self.rank = self.choose_rank()

    @property
    def queue(self) -> float:
        """Q^t, the virtual queue of eq. (21) [s]."""
        return self._queue

    @abstractmethod
    def choose_rank(self) -> int:
        """The LoRA rank for the whole run (TSFA: the offline stage)."""

    @abstractmethod
    def decide(self, snr: np.ndarray, compute_s: np.ndarray) -> Decision:
        """Decide for the clients with linear SNRs ``snr`` (K',) and compute times (K',) [s]."""

    def observe(self, delay_s: float) -> float:
        """Eq. (21): Q <- max(Q + D^t - D_th, 0) with the delay the simulator observed."""
        self._queue = max(self._queue + delay_s - self.ctx.settings.d_th_s, 0.0)
        return self._queue

    def summary(self) -> dict[str, Any]:
        """What goes into ``meta.json`` (e.g. the offline curve)."""
        return {"rank": self.rank}

    def state_dict(self) -> dict[str, Any]:
        return {"queue": self.queue}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self._queue = float(state["queue"])

    def planned_bits(self, sparsification: float) -> float:
        """v * (O * r * sum(d + l) + fixed values): the payload the delay model assumes [bits]."""
        c = self.ctx
        return c.bits_per_value * (sparsification * self.rank * c.params_per_rank + c.fixed_values)

    def fixed_delay_s(self, snr: np.ndarray) -> float:
        """Upload time of the fixed (dense) values with eq. (31) shares [s].

        With equal payloads and eq. (31) shares every client finishes together, so a fixed part
        adds c0 = v * h * sum_j 1 / (B log2(1 + SNR_j)) to D^t(O). That is a constant in P3's
        objective Q D^t(O) + V gamma^t(O): the optimal O^t is unchanged, only D^t shifts.
        """
        c = self.ctx
        if c.fixed_values == 0:
            return 0.0
        inv_rate = 1.0 / (c.bandwidth_hz * np.log2(1.0 + np.asarray(snr, dtype=float)))
        return float(c.bits_per_value * c.fixed_values * inv_rate.sum())
