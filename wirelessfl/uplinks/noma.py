"""``channel.uplink: noma``: uplink power-domain NOMA with successive interference cancellation
("Non-Orthogonal Multiple Access for 5G and Beyond", Y. Liu, Z. Qin, M. Elkashlan, Z. Ding,
A. Nallanathan, L. Hanzo, arXiv:1808.00277, section on uplink NOMA).

Every training client sends on the whole band B at once. The base station decodes them in
descending received power p_k g_k (equivalently descending SNR_k = p_k g_k / (N0 B); ties: the
lower client id first), cancelling each decoded signal before the next, so client k sees the
clients decoded after it as interference:

    R_k = B log2(1 + SNR_k / (1 + sum_{j after k} SNR_j + eps sum_{j before k} SNR_j))  [bit/s]

with eps = ``channel.uplink_params.sic_residual`` the fraction of a cancelled signal's power
left by imperfect SIC (0: perfect). With eps = 0 the rates sum to the multiple-access capacity
B log2(1 + sum_k SNR_k), whatever the order. A client's rate holds for its whole upload: the
interference of every training client is counted even after it has finished (the rate the
decoding order guarantees; a receiver that re-decodes as clients finish would be faster), so
its upload lasts bits_k / R_k. The whole band is every client's (share 1), so no share idles
and none is planned: under ``controller.name: fixed`` the uplink plans the round itself
(``Uplink.plan_round``, from :meth:`NomaUplink.upload_s`: the longest bits_k / R_k). The
online Lyapunov step (``controller.name: osfa``) plans it too: with each upload affine in the
ratio O, bits_k(O) = v (n_k O + h_k) + s_k, the round's delay D(O) = max_k bits_k(O) / R_k is a
maximum of affine functions of O (``Uplink.delay_pieces``, one piece per client from its
seconds per bit 1 / R_k), which P3 minimises exactly (:mod:`optim.max_affine_slot`). TSFA's
offline stage needs an average delay over the planning channel that a slowest-upload round
does not have in closed form, and the other controllers plan FDMA shares: they are refused at
load in one line, as are the event-driven modes (no band shared in time).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from wirelessfl.errors import ConfigError
from wirelessfl.uplinks.base import Uplink

__all__ = ["NomaUplink", "sic_rates_bps"]


def sic_rates_bps(snr: np.ndarray, bandwidth_hz: float, residual: float = 0.0) -> np.ndarray:
    """(k,) SIC rates R_k [bit/s] of k clients with (k,) linear SNRs on the whole band
    ``bandwidth_hz`` [Hz], decoded in descending SNR (module docstring), with the fraction
    ``residual`` of each cancelled signal left."""
    snr = np.asarray(snr, dtype=float)
    order = np.argsort(-snr, kind="stable")  # decoded first: the strongest
    ranked = snr[order]
    after = np.cumsum(ranked[::-1])[::-1] - ranked  # sum of the SNRs decoded after each
    before = np.cumsum(ranked) - ranked  # sum of the SNRs decoded (and cancelled) before
    sinr = ranked / (1.0 + after + residual * before)
    rates = np.empty_like(snr)
    rates[order] = bandwidth_hz * np.log2(1.0 + sinr)
    return rates


class NomaUplink(Uplink):
    """Power-domain NOMA with SIC on a band of ``bandwidth_hz`` [Hz], ``sic_residual`` eps."""

    NAME = "noma"
    PARAMS = {"sic_residual": "fraction in [0, 1] of a cancelled signal's power left (0: perfect)"}

    def __init__(self, bandwidth_hz: float, sic_residual: float = 0.0) -> None:
        self.bandwidth_hz = float(bandwidth_hz)
        self.sic_residual = float(sic_residual)

    @classmethod
    def from_scenario(cls, scenario: Any) -> NomaUplink:
        ch = scenario.channel
        return cls(ch.bandwidth_hz, float(ch.uplink_params.get("sic_residual", 0.0)))

    @classmethod
    def check_scenario(cls, scenario: Any) -> None:
        """The base's checks (a controller needing shares or an offline average is refused
        there); ``sic_residual`` a number in [0, 1]; noise over the share and redistributed
        shares are refused in one line."""
        super().check_scenario(scenario)
        eps = scenario.channel.uplink_params.get("sic_residual", 0.0)
        if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not 0.0 <= eps <= 1.0:
            raise ConfigError(
                f"channel.uplink_params.sic_residual: a fraction in [0, 1], got {eps!r}"
            )
        if scenario.channel.noise_bandwidth != "band":
            raise ConfigError(
                "channel.noise_bandwidth: share: with channel.uplink: noma every client sends on "
                "the whole band, so the noise is the band's; remove it"
            )
        if scenario.faults.redistribute_unused:
            raise ConfigError(
                "faults.redistribute_unused: with channel.uplink: noma every client sends on "
                "the whole band, so no share idles to give away; remove it"
            )

    def upload_s(
        self, shares: np.ndarray, snr: np.ndarray, bits: np.ndarray, n_values: np.ndarray
    ) -> np.ndarray:
        """(m,) bits_k / R_k [s] of the m training clients, all on the air together (inf: a
        rate of 0)."""
        rate = sic_rates_bps(snr, self.bandwidth_hz, self.sic_residual)
        bits = np.asarray(bits, dtype=float)
        return np.divide(bits, rate, out=np.full(rate.shape, math.inf), where=rate > 0)
