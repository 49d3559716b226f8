"""Fixed: a given rank r and ratio O every round; finish-together or min-max shares.

The algorithm's cost model plans the round at (``controller.rank``,
``controller.sparsification``): O applies where the algorithm's compression stage follows the
controller, and an algorithm without that knob sends what its own settings say. The shares
make every client finish together (eq. 31 for equal payloads; ``bandwidth: equal_delay``) or
minimise the slowest client's compute plus upload (``bandwidth: minmax``); the planned delay
is the longest upload with the exact bits of the algorithm's messages. In the event-driven
modes every dispatched client trains at (``controller.rank``, ``controller.sparsification``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from optim import minmax_bandwidth
from wirelessfl.controllers.base import Controller, Decision
from wirelessfl.controllers.costing import finish_together_shares, planned_upload_s


class Fixed(Controller):
    """No online optimisation; the queue is still tracked against D_th for reporting."""

    def choose_rank(self) -> int:
        return int(self.ctx.settings.rank)

    def decide(self, snr: np.ndarray, compute_s: np.ndarray) -> Decision:
        s, c = self.ctx.settings, self.ctx
        o = float(s.sparsification)
        plans = self.round_plans(snr, self.rank, o)
        bits = self.upload_bits(plans)
        if s.bandwidth == "minmax" and bits.any():
            shares = minmax_bandwidth(
                compute_s=compute_s, bits=bits, snr=snr, bandwidth_hz=c.bandwidth_hz
            )
        else:
            shares = finish_together_shares(bits, snr)
        return Decision(
            c.cost.compression.ratio_for(o),
            np.asarray(shares, float),
            planned_upload_s(bits, shares, c.bandwidth_hz, snr),
            self.penalty(plans),
        )

    def dispatch_ratio(self) -> float:
        return float(self.ctx.settings.sparsification)

    def summary(self) -> dict[str, Any]:
        return {"rank": self.rank, "sparsification": self.ctx.settings.sparsification}
