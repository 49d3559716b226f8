"""How the controllers plan NR uploads (docs/solvers.md, "Planning any uplink"): the
expected goodput of each client on the carrier, from the same BLER tables the uplink decodes
with. No Sionna here: the rate comes from :meth:`NrPlanning.carrier_rate_bps`.

A client alone on the whole carrier of N_RB PRBs at SINR s delivers R(s) = G(s) / T_slot
[bit/s] on average, G(s) the expected goodput per slot at the MCS inner-loop link adaptation
picks with HARQ (:mod:`channels.nr_link`). The planners take a client's rate on a share b of
the carrier as b R(s) (the goodput per PRB times its PRBs), so NR plans as FDMA does with
the Shannon rate B log2(1 + s) replaced by R(s):

- :meth:`NrPlanning.plan_round`: shares under which every upload ends together,
  b_k = (bits_k / R_k) / sum_j (bits_j / R_j), and the round's planned upload
  sum_k bits_k / R_k plus the scheduling delay;
- :meth:`NrPlanning.delay_pieces`: that delay affine in the ratio O (one piece);
- :meth:`NrPlanning.offline_delay`: Lemma 2 with w_k = B / R(SNR_bar_k) in place of
  1 / log2(1 + SNR_bar_k) (:meth:`NrPlanning.offline_inverse_efficiency`).

What the plan leaves out, so that the measured delay differs from it: PRBs are whole (shares
become PRB counts by largest remainder), a transport block's size is not linear in its PRBs,
an upload lasts whole slots, and HARQ outcomes are random (the plan is their mean).
"""

from __future__ import annotations

from abc import abstractmethod

import numpy as np

from wirelessfl.controllers.uplink_planning import AffineUploads, UplinkPlanning

__all__ = ["NrPlanning"]


class NrPlanning(UplinkPlanning):
    """The planners' view of the NR uplink (module docstring) on a carrier of
    ``bandwidth_hz`` [Hz] with a scheduling delay of ``scheduling_delay_s`` [s]."""

    NAME = "nr"
    SHARES_BAND = True
    OFFERS = frozenset({"round", "offline"})
    LACKS = {
        "shares": "sends on whole PRBs at its link's goodput, not at Shannon's rate on a "
        "bandwidth share"
    }

    bandwidth_hz: float
    scheduling_delay_s: float

    @abstractmethod
    def carrier_rate_bps(self, snr: np.ndarray) -> np.ndarray:
        """(k,) R(s_k) [bit/s]: each client's expected goodput alone on the carrier at its
        (k,) linear SINR."""

    def _seconds_per_bit(self, snr: np.ndarray) -> np.ndarray:
        """(k,) 1 / R_k [s/bit], 0 for a client no MCS reaches (R_k = 0: it is planned no
        PRB and no delay, and does not arrive)."""
        rate = np.asarray(self.carrier_rate_bps(np.asarray(snr, dtype=float)), dtype=float)
        return np.divide(1.0, rate, out=np.zeros(rate.shape), where=rate > 0)

    def plan_round(
        self, bits: np.ndarray, n_values: np.ndarray | None, snr: np.ndarray, compute_s: np.ndarray
    ) -> tuple[np.ndarray, float]:
        """Shares under which every upload ends together, and sum_k bits_k / R_k plus the
        scheduling delay [s] (no share for a client of R_k = 0)."""
        alone_s = np.asarray(bits, dtype=float) * self._seconds_per_bit(snr)
        total_s = float(alone_s.sum())
        if total_s <= 0:
            return np.zeros(len(alone_s)), 0.0
        return alone_s / total_s, total_s + self.scheduling_delay_s

    def delay_pieces(
        self,
        uploads: AffineUploads,
        n_values: np.ndarray | None,
        snr: np.ndarray,
        compute_s: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray]:
        """One piece: D(O) = sum_k bits_k(O) / R_k + the scheduling delay."""
        per_bit = self._seconds_per_bit(snr)
        slope = float(np.dot(uploads.bits_per_ratio, per_bit))
        fixed = float(np.dot(uploads.fixed_bits, per_bit)) + self.scheduling_delay_s
        return np.array([slope]), np.array([fixed])

    def offline_inverse_efficiency(self, mean_snr: np.ndarray) -> np.ndarray:
        """(N,) w_k = B / R(SNR_bar_k) [s Hz / bit], Lemma 2's 1 / log2(1 + SNR_bar_k) for NR
        (0 for a device no MCS reaches at its mean SNR)."""
        return self.bandwidth_hz * self._seconds_per_bit(mean_snr)

    def offline_delay(
        self, uploads: AffineUploads, n_values: np.ndarray | None, weight: np.ndarray, scale: float
    ) -> tuple[float, float]:
        """Lemma 2 per group with the weights of :meth:`offline_inverse_efficiency`:
        (K / N B) sum_g w_g bits_g(O) + the scheduling delay = c0 + c O."""
        n, h, side = uploads.ratio_values, uploads.fixed_values, uploads.side_bits
        v = float(uploads.bits_per_value)
        slope = scale * v * float(np.dot(n, weight))
        fixed = scale * float(np.dot(v * h + side, weight)) + self.scheduling_delay_s
        return slope, fixed
