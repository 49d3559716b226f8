"""Fixed: a given rank r and sparsification O every round; equal-delay or min-max shares."""

from __future__ import annotations

from typing import Any

import numpy as np

from channels import upload_delay_s
from optim import convergence_bound, equal_delay_bandwidth, minmax_bandwidth
from wirelessfl.controllers.base import Controller, Decision


class Fixed(Controller):
    """No online optimisation; the queue is still tracked against D_th for reporting."""

    def choose_rank(self) -> int:
        return int(self.ctx.settings.rank)

    def decide(self, snr: np.ndarray, compute_s: np.ndarray) -> Decision:
        s, c = self.ctx.settings, self.ctx
        o = float(s.sparsification)
        bits = np.full(len(snr), self.planned_bits(o))
        if s.bandwidth == "minmax":
            shares = minmax_bandwidth(
                compute_s=compute_s, bits=bits, snr=snr, bandwidth_hz=c.bandwidth_hz
            )
        else:
            shares = equal_delay_bandwidth(snr)
        delays = upload_delay_s(bits, shares, c.bandwidth_hz, snr)
        bound = convergence_bound(
            rank=self.rank,
            sparsification=o,
            n_scheduled=len(snr),
            n_clients=c.n_clients,
            constants=c.constants,
        )
        return Decision(o, np.asarray(shares, float), float(np.max(delays)), float(bound))

    def summary(self) -> dict[str, Any]:
        return {"rank": self.rank, "sparsification": self.ctx.settings.sparsification}
