"""Fixed: a given rank r and ratio O every round; finish-together or min-max shares.

The algorithm's cost model plans the round at (``controller.rank``,
``controller.sparsification``): O applies where the algorithm's compression stage follows the
controller, and an algorithm without that knob sends what its own settings say. The shares
make every client finish together (eq. 31 for equal payloads; ``bandwidth: equal_delay``) or
minimise the slowest client's compute plus upload (``bandwidth: minmax``); the planned delay
is the longest upload with the exact bits of the algorithm's messages. In the event-driven
modes every dispatched client trains at (``controller.rank``, ``controller.sparsification``).

With ``controller.tx_power_fraction`` = a every client transmits at p_k = a P_max,k, so its
SNR is a SNR_k (the shares are computed with it); with ``controller.cpu_freq_hz`` = f every
client computes at f, its compute time f_max,k / f times the profile's (the min-max shares see
it). Left null, the power is P_max,k and the clock f_max, and the decision carries neither.

It plans under either noise rule (``channel.noise_bandwidth``): with ``share`` both the
finish-together and the min-max shares come from ``optim.noise_share`` (no closed form), and
the planned delay uses the rate b_k B log2(1 + SNR_k / b_k).

On an uplink without bandwidth shares (``channel.uplink: aircomp`` or ``noma``) the uplink
plans the round itself (:meth:`~wirelessfl.controllers.uplink_planning.UplinkPlanning.plan_round`:
each share recorded as 1, the planned delay the round the simulator charges: over the air the
slowest compute plus the analog time, :mod:`wirelessfl.controllers.air_planning`); ``bandwidth:
minmax`` is a share rule and applies to FDMA only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from channels import snr_at_power
from optim import minmax_bandwidth
from wirelessfl.config.controller import FixedRatioSettings
from wirelessfl.config.schema import option
from wirelessfl.controllers.base import Controller, Decision
from wirelessfl.controllers.costing import planned_upload_s


@dataclass
class FixedSettings(FixedRatioSettings):
    """The fixed controller's settings: its ratio O, its share rule, and one transmit power
    and one clock for every client."""

    bandwidth: str = option(
        "equal_delay",
        choices=("equal_delay", "minmax"),
        doc="share rule (fixed controller)",
    )
    tx_power_fraction: float | None = option(
        None,
        gt=0.0,
        le=1.0,
        doc="fixed controller: every scheduled client transmits at this fraction of its "
        "power-control power P_max,k (channel.power_control), its SNR scaled alike; null: "
        "P_max,k (docs/simulator.md)",
    )
    cpu_freq_hz: float | None = option(
        None,
        gt=0.0,
        doc="fixed controller: every scheduled client computes at this clock, in "
        "[devices.energy.cpu_freq_min_hz, devices.energy.cpu_freq_hz] (model: cmos): compute "
        "time x f_max / f, energy kappa f^2 cycles; null: f_max",
    )


class Fixed(Controller):
    """No online optimisation; the queue is still tracked against D_th for reporting."""

    def choose_rank(self) -> int:
        return int(self.ctx.settings.rank)

    FIXED_RADIO_DECISIONS = True
    #: the uplink's round plan (FDMA's finish-together shares, the analog sum, NOMA's band)
    UPLINK_NEEDS = frozenset({"round"})
    Settings = FixedSettings
    NOISE_BANDWIDTHS = frozenset({"band", "share"})

    @classmethod
    def decides_tx_power_under(cls, settings: Any) -> bool:
        return settings.tx_power_fraction is not None

    @property
    def decides_cpu_frequency(self) -> bool:
        return self.ctx.settings.cpu_freq_hz is not None

    def _tx_power_w(self, n: int) -> np.ndarray | None:
        """(n,) p_k = a P_max,k [W] (``controller.tx_power_fraction`` = a), or None."""
        fraction = self.ctx.settings.tx_power_fraction
        if fraction is None:
            return None
        p_max = self.round_tx_power_max_w
        if p_max is None or p_max.shape != (n,):
            raise ValueError(
                "controller.tx_power_fraction needs each client's P_max,k: pass tx_power_max_w "
                "to begin_round"
            )
        return float(fraction) * p_max

    def _cpu_hz(self, n: int) -> np.ndarray | None:
        """(n,) f_k = ``controller.cpu_freq_hz`` [Hz], or None."""
        f = self.ctx.settings.cpu_freq_hz
        return None if f is None else np.full(n, float(f))

    def decide(self, snr: np.ndarray, compute_s: np.ndarray) -> Decision:
        s, c = self.ctx.settings, self.ctx
        o = float(s.sparsification)
        n = len(snr)
        tx_power_w, cpu_hz = self._tx_power_w(n), self._cpu_hz(n)
        if tx_power_w is not None:  # SNR_k p_k / P_max,k, as the simulator uploads
            snr = np.asarray(snr_at_power(snr, tx_power_w, self.round_tx_power_max_w), float)
        if cpu_hz is not None and c.cpu_hz_max is not None:  # compute time x f_max / f
            compute_s = np.asarray(compute_s, float) * (c.cpu_hz_max[self._clients(n)] / cpu_hz)
        plans = self.round_plans(snr, self.rank, o)
        bits, uplink, rule = self.upload_bits(plans), c.planning, c.noise_bandwidth
        if uplink.SHARES_BAND and s.bandwidth == "minmax" and bits.any():
            shares = minmax_bandwidth(
                compute_s=compute_s,
                bits=bits,
                snr=snr,
                bandwidth_hz=c.bandwidth_hz,
                noise_bandwidth=rule,
            )
            planned_s = planned_upload_s(bits, shares, c.bandwidth_hz, snr, noise_bandwidth=rule)
        else:  # FDMA: every client finishes together; the others: the uplink's own plan
            dense = self.dense_values_for_uplink(plans)
            shares, planned_s = uplink.plan_round(bits, dense, snr, compute_s)
        return Decision(
            c.cost.compression.ratio_for(o),
            np.asarray(shares, float),
            float(planned_s),
            self.penalty(plans),
            tx_power_w=tx_power_w,
            cpu_hz=cpu_hz,
        )

    def dispatch_ratio(self) -> float:
        return float(self.ctx.settings.sparsification)

    def summary(self) -> dict[str, Any]:
        return {"rank": self.rank, "sparsification": self.ctx.settings.sparsification}
