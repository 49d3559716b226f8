"""What a controller sees and decides when clients are dispatched in the event-driven modes
(``server.mode`` async | buffered | semi_sync; docs/solvers.md, "Per-dispatch step
(asynchronous modes)"). No torch.

The band is shared equally among the uploads on the air (egalitarian processor sharing), so the
controller chooses no share: at most C = ``server.concurrency`` uploads are on the air at once,
and a client's upload is planned at the share it is sure to get, 1/C, which makes the planned
upload time an upper bound on the realised one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["DispatchCandidates", "DispatchDecision"]


@dataclass(frozen=True)
class DispatchCandidates:
    """Clients that may be dispatched at one instant, with what the server knows of them.

    Attributes:
        clients: (n,) device ids.
        snr: (n,) linear SNRs at the dispatch (the channel row observed then).
        tx_power_w: (n,) transmit powers [W].
        compute_s: (n,) expected compute times [s] (0 without ``devices.include_compute``).
        compute_energy_j: (n,) expected compute energies [J] (0 without an energy budget,
            where nothing reads them).
        concurrency: C, the most uploads on the air at once.
    """

    clients: np.ndarray
    snr: np.ndarray
    tx_power_w: np.ndarray
    compute_s: np.ndarray
    compute_energy_j: np.ndarray
    concurrency: int

    @property
    def share(self) -> float:
        """b = 1/C: the least share of the band an upload can get (module docstring)."""
        return 1.0 / self.concurrency


@dataclass(frozen=True)
class DispatchDecision:
    """The decision for n dispatched clients (arrays of shape (n,), in dispatch order).

    Attributes:
        ranks: the rank each trains.
        ratios: the controller's ratio O_k each is planned with (the algorithm's stage maps
            it to what is sent).
        latency_s: planned latency, compute plus upload of the exact bits at share 1/C [s].
        bound: the penalty gamma_k of each update in a round of K = C updates.
        fallbacks: solver fallbacks per decision (``controller.method: cvxpy``).
        tx_power_w: the transmit power p_k each uploads at [W] (None: its power-control power;
            ``controller.radio: joint``, (D3) of docs/solvers.md).
        cpu_hz: the clock f_k each computes at [Hz] (None: f_max; (D2)).
    """

    ranks: np.ndarray
    ratios: np.ndarray
    latency_s: np.ndarray
    bound: np.ndarray
    fallbacks: np.ndarray
    tx_power_w: np.ndarray | None = None
    cpu_hz: np.ndarray | None = None
