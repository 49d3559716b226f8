"""``channel.uplink: fdma``: orthogonal digital uploads on bandwidth shares (the papers' uplink,
Kim & Choi eq. 8).

Client k sends its message's bits on the share b_k of the band B at the Shannon rate
b_k B log2(1 + SNR_k), the noise over the whole band (``channel.noise_bandwidth: band``, the
paper), or b_k B log2(1 + SNR_k / b_k) with the noise in its share (``share``); a client with
no share never arrives. In the event-driven modes the uploads on the air share the band
equally (:mod:`wirelessfl.sim.shared_band`), each at its full-band rate B log2(1 + SNR_k).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from channels import rate_bps
from channels.fdma import spectral_efficiency
from wirelessfl.controllers.uplink_planning import FdmaPlanning
from wirelessfl.uplinks.base import Uplink

__all__ = ["FdmaUplink"]


class FdmaUplink(FdmaPlanning, Uplink):
    """FDMA on a band of ``bandwidth_hz`` [Hz] with noise over ``noise_bandwidth``
    (``band`` | ``share``); the planners' view is
    :class:`~wirelessfl.controllers.uplink_planning.FdmaPlanning` (shares under which every
    client finishes together, Lemma 2 offline)."""

    EVENT_DRIVEN = True
    CELL_RESOURCES = "band"

    @classmethod
    def from_scenario(cls, scenario: Any) -> FdmaUplink:
        ch = scenario.channel
        return cls(ch.bandwidth_hz, ch.noise_bandwidth)

    def upload_s(
        self, shares: np.ndarray, snr: np.ndarray, bits: np.ndarray, n_values: np.ndarray
    ) -> np.ndarray:
        """(m,) bits / (b_k B log2(1 + SNR_k)) [s] (``share``: SNR_k / b_k); inf at b_k = 0."""
        rate = rate_bps(shares, self.bandwidth_hz, snr, noise_bandwidth=self.noise_bandwidth)
        rate = np.asarray(rate, dtype=float)
        return np.divide(bits, rate, out=np.full(rate.shape, math.inf), where=rate > 0)

    def full_band_rate_bps(self, snr: float) -> float:
        """c_k = B log2(1 + SNR_k) [bit/s]."""
        return float(self.bandwidth_hz * spectral_efficiency(snr))
