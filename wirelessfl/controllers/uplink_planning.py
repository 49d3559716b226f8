"""What the planners know of the uplink: one interface every ``channel.uplink`` implements
(docs/solvers.md, "Planning any uplink"). No torch.

A controller plans a round in the algorithm's knob (the ratio O or the rank r) and asks the
uplink, through :class:`UplinkPlanning`, what that plan costs in time, without knowing which
uplink it is:

- :meth:`UplinkPlanning.plan_round`: for k clients with their exact upload bits, dense values,
  SNRs and compute times, the resources (bandwidth shares b_k; 1, the whole band, on an uplink
  without shares) and the planned upload time;
- :meth:`UplinkPlanning.delay_pieces`: the round's delay as a function of the ratio O when each
  upload is affine in O (:class:`AffineUploads`): D(O) = max_j (c0_j + c_j O), pieces of an
  upper envelope (one piece on FDMA and over the air; one per client on NOMA); the online step
  (P3) minimises over it exactly (:mod:`optim.max_affine_slot`);
- :meth:`UplinkPlanning.offline_delay`: the average delay TSFA's offline stage budgets (Lemma 2
  on FDMA), or None where the uplink has none (TSFA is then refused at load).

What a controller needs of the uplink (``Controller.uplink_needs``) is checked at load against
what the uplink offers (:attr:`UplinkPlanning.OFFERS`), in one line naming both.
:class:`FdmaPlanning` is FDMA's planning (and the default of a controller built without an
uplink, as library users do).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from channels.fdma import spectral_efficiency
from wirelessfl.controllers.costing import finish_together_shares, planned_upload_s

__all__ = [
    "NEEDS",
    "AffineUploads",
    "FdmaPlanning",
    "UplinkPlanning",
]

#: what a controller may need of an uplink -> (what an uplink without it lacks, what the
#: controller does with it), the two halves of the one line that refuses the combination
NEEDS: dict[str, tuple[str, str]] = {
    "round": ("has no round plan (resources and planned delay)", "plans each round with one"),
    "shares": (
        "sends every client on the whole band, with no bandwidth shares",
        "plans bandwidth shares",
    ),
    "offline": (
        "has no average delay over the planning channel (a round lasts its slowest upload)",
        "plans its rank offline with one (Lemma 2)",
    ),
}


@dataclass(frozen=True)
class AffineUploads:
    """k clients' uploads affine in the ratio O: bits_k(O) = v (n_k O + h_k) + s_k [bit].

    ``bits_per_value`` v; ``ratio_values`` (k,) float n_k, the values the ratio scales;
    ``fixed_values`` (k,) h_k, the values always sent; ``side_bits`` (k,) s_k [bit]; ``equal``:
    every client's (n_k, h_k, s_k) is the same (the paper's case, eq. 31).
    """

    bits_per_value: float
    ratio_values: np.ndarray
    fixed_values: np.ndarray
    side_bits: np.ndarray
    equal: bool

    @property
    def bits_per_ratio(self) -> np.ndarray:
        """(k,) v n_k [bit]: the bits the ratio scales."""
        return self.bits_per_value * self.ratio_values

    @property
    def fixed_bits(self) -> np.ndarray:
        """(k,) v h_k + s_k [bit]: the bits always sent."""
        return self.bits_per_value * self.fixed_values + self.side_bits


class UplinkPlanning(ABC):
    """The planners' view of an uplink (module docstring). Subclasses implement
    :meth:`plan_round` and :meth:`delay_pieces` and, for an offline stage, :meth:`offline_delay`
    (listing ``"offline"`` in :attr:`OFFERS`)."""

    #: the ``channel.uplink`` name
    NAME: ClassVar[str] = ""
    #: the clients send on bandwidth shares b_k that the controller plans (FDMA); False: on
    #: resources of their own that the uplink sets (each share recorded as 1)
    SHARES_BAND: ClassVar[bool] = False
    #: the round's uploads start together once the last training client has computed, with the
    #: reason (the delay queue of eq. 21 then takes compute + upload); None: each on its own
    STARTS_TOGETHER: ClassVar[str | None] = None
    #: the upload time is set by the dense values n_k (an analog sum: sparsification does not
    #: shorten it), which the planners then pass as ``n_values``
    READS_DENSE_VALUES: ClassVar[bool] = False
    #: what the uplink offers the planners (keys of :data:`NEEDS`)
    OFFERS: ClassVar[frozenset[str]] = frozenset({"round"})
    #: what this uplink lacks, for a key of :data:`NEEDS` it does not offer, where NEEDS's
    #: general half would not be true of it
    LACKS: ClassVar[dict[str, str]] = {}
    #: its offline average delay is Lemma 2's (FDMA shares finishing together), so TSFA's
    #: closed form (the paper's ``optim.offline_rank_search``) applies
    LEMMA_2: ClassVar[bool] = False

    @abstractmethod
    def plan_round(
        self, bits: np.ndarray, n_values: np.ndarray | None, snr: np.ndarray, compute_s: np.ndarray
    ) -> tuple[np.ndarray, float]:
        """(k,) resources (shares b_k; 1: the whole band) and the planned upload time [s] of k
        clients with (k,) exact upload bits, dense values (None unless
        :attr:`READS_DENSE_VALUES`), linear SNRs and compute times [s]."""

    @abstractmethod
    def delay_pieces(
        self,
        uploads: AffineUploads,
        n_values: np.ndarray | None,
        snr: np.ndarray,
        compute_s: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray]:
        """(c (J,) [s], c0 (J,) [s]): the round's delay D(O) = max_j (c0_j + c_j O) [s] of k
        clients whose uploads are ``uploads``, at their (k,) SNRs and compute times."""

    def offline_delay(
        self, uploads: AffineUploads, n_values: np.ndarray | None, weight: np.ndarray, scale: float
    ) -> tuple[float, float]:
        """(c, c0) [s]: the offline stage's average round delay c0 + c O of G client groups
        with ``uploads`` (G,) and dense values, ``weight`` (G,) each group's sum of
        1 / log2(1 + SNR_bar_k) (or of w_k) and ``scale`` = K / (N B) [1/Hz]."""
        raise NotImplementedError(f"channel.uplink: {self.NAME} has no offline delay")

    def offline_inverse_efficiency(self, mean_snr: np.ndarray) -> np.ndarray | None:
        """(N,) the offline stage's w_k [s Hz / bit] at the (N,) mean SNRs where the uplink's
        rate is not Shannon's (NR: B / R(SNR_bar_k)); None: 1 / log2(1 + SNR_bar_k) (or the
        controller's ``offline_channel``)."""
        return None

    def dispatch_rate_bps(self, snr: np.ndarray, concurrency: int) -> np.ndarray:
        """(n,) the rate [bit/s] each of n candidates of a dispatch plans its upload with in
        the event-driven modes (docs/solvers.md, "Per-dispatch step"): the least the band
        shared among at most ``concurrency`` C uploads gives it, at its (n,) linear SNRs.
        Only an uplink whose band the event-driven modes share (``Uplink.EVENT_DRIVEN``)
        has one; the others are refused at load before a dispatch is planned."""
        raise NotImplementedError(f"channel.uplink: {self.NAME} shares no band among uploads")


class FdmaPlanning(UplinkPlanning):
    """FDMA's planning: shares under which every client finishes together, on a band of
    ``bandwidth_hz`` [Hz] with the noise over ``noise_bandwidth`` (``band`` | ``share``)."""

    NAME = "fdma"
    SHARES_BAND = True
    OFFERS = frozenset({"round", "shares", "offline"})
    LEMMA_2 = True

    def __init__(self, bandwidth_hz: float, noise_bandwidth: str = "band") -> None:
        self.bandwidth_hz = float(bandwidth_hz)
        self.noise_bandwidth = noise_bandwidth

    def plan_round(
        self, bits: np.ndarray, n_values: np.ndarray | None, snr: np.ndarray, compute_s: np.ndarray
    ) -> tuple[np.ndarray, float]:
        """Shares under which every upload ends together and the longest upload [s]."""
        rule, bw = self.noise_bandwidth, self.bandwidth_hz
        shares = finish_together_shares(bits, snr, bandwidth_hz=bw, noise_bandwidth=rule)
        shares = np.asarray(shares, float)
        return shares, planned_upload_s(bits, shares, bw, snr, noise_bandwidth=rule)

    def delay_pieces(
        self,
        uploads: AffineUploads,
        n_values: np.ndarray | None,
        snr: np.ndarray,
        compute_s: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray]:
        """One piece: with every client finishing together (noise over the band),
        D(O) = sum_k bits_k(O) / (B log2(1 + SNR_k)) = c0 + c O (eq. 31 for equal payloads)."""
        v, bw = float(uploads.bits_per_value), self.bandwidth_hz
        n, h, side = uploads.ratio_values, uploads.fixed_values, uploads.side_bits
        inv = 1.0 / spectral_efficiency(snr)
        if uploads.equal:  # eq. (31) and the paper's D^t = c O
            n, h, side, sum_inv = float(n[0]), float(h[0]), float(side[0]), float(inv.sum())
            return np.array([v * n * sum_inv / bw]), np.array([(v * h + side) * sum_inv / bw])
        slope = float(v * np.dot(n, inv) / bw)
        return np.array([slope]), np.array([float(np.dot(v * h + side, inv) / bw)])

    def dispatch_rate_bps(self, snr: np.ndarray, concurrency: int) -> np.ndarray:
        """b B log2(1 + SNR) at the least share b = 1/C (noise over the band, the rate the
        processor-sharing band gives an upload among C)."""
        share = 1.0 / concurrency
        return share * self.bandwidth_hz * spectral_efficiency(np.asarray(snr, dtype=float))

    def offline_delay(
        self, uploads: AffineUploads, n_values: np.ndarray | None, weight: np.ndarray, scale: float
    ) -> tuple[float, float]:
        """Lemma 2 per group: (K / N B) sum_g w_g bits_g(O) = c0 + c O."""
        n, h, side = uploads.ratio_values, uploads.fixed_values, uploads.side_bits
        v = float(uploads.bits_per_value)
        return scale * v * float(np.dot(n, weight)), scale * float(np.dot(v * h + side, weight))
