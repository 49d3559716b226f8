"""A controller defined outside the package, for the ``--plugin`` tests (a plug-in file).

``greedy_plugin``: CONTRIBUTING.md's greedy controller; each round the ratio O^t whose planned
upload delay, every client finishing together, is D_th (clipped to [o_min, 1]); no virtual
queue.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from wirelessfl.config.controller import ControllerSettings
from wirelessfl.config.schema import option
from wirelessfl.controllers.base import Controller, Decision
from wirelessfl.controllers.costing import finish_together_shares, planned_upload_s
from wirelessfl.registries import CONTROLLERS


@dataclass
class GreedySettings(ControllerSettings):
    """controller.name, d_th_s, rank and r_max, and the greedy controller's own floor."""

    o_min: float = option(0.05, gt=0.0, le=1.0, doc="greedy: the smallest ratio O^t")


class Greedy(Controller):
    """Rank from controller.rank; O^t = the ratio whose delay is D_th, clipped."""

    NEEDS_KNOBS = frozenset({"ratio"})
    Settings = GreedySettings

    def choose_rank(self):
        return int(self.ctx.settings.rank)

    def decide(self, snr, compute_s):
        c, s = self.ctx, self.ctx.settings
        full = self.upload_bits(self.round_plans(snr, self.rank, 1.0))  # every client at O = 1
        least = self.upload_bits(self.round_plans(snr, self.rank, s.o_min))
        per_bit_s = 1.0 / (c.bandwidth_hz * np.log2(1.0 + snr))  # finishing together
        d_full, d_least = float(full @ per_bit_s), float(least @ per_bit_s)
        o = s.o_min + (1.0 - s.o_min) * (s.d_th_s - d_least) / (d_full - d_least)
        plans = self.round_plans(snr, self.rank, float(np.clip(o, s.o_min, 1.0)))
        bits = self.upload_bits(plans)
        shares = finish_together_shares(bits, snr)
        delay = planned_upload_s(bits, shares, c.bandwidth_hz, snr)
        return Decision(plans[0].ratio, shares, delay, self.penalty(plans))


CONTROLLERS.register("greedy_plugin", Greedy)
