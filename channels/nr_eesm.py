"""Frequency-selective NR links: the carrier's PRBs in subbands of one fading gain each, and
the exponential effective SINR mapping (EESM) that turns a transport block's per-PRB SINRs
into the one SINR its BLER is read at. Numpy only; the beta parameters come with the BLER
tables (:class:`~channels.nr_bler.BlerTables`, from Sionna's ``EESM``).

- Subbands (:class:`SubbandLayout`): the carrier's N_RB PRBs are cut into S = ceil(N_RB / c)
  subbands of c contiguous PRBs (the last one may be shorter), c = max(1, round(B_c /
  (12 Δf))) for a coherence bandwidth B_c [Hz] (one PRB is 12 subcarriers of Δf). The channel
  is flat within a subband and independent across subbands: the block-fading approximation in
  frequency of a channel whose coherence bandwidth is B_c (about 1 / (5 σ_τ) for an rms delay
  spread σ_τ at correlation 0.5).
- EESM (Sionna SYS's ``EESM``, per user over its resource elements): with a block's PRBs
  spread over subbands with weights w_s (the fraction of its PRBs in subband s, Σ w_s = 1)
  and SINR x_s on each,

      SINR_eff(m) = -β_m ln( Σ_s w_s exp(-x_s / β_m) ),

  β_m the MCS's calibration parameter. Computed as min_s x_s - β_m ln Σ_s w_s
  exp(-(x_s - min_s x_s) / β_m) (the same value, no underflow). It is at most the mean
  Σ_s w_s x_s (Jensen) and equals x where every x_s = x.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from channels.nr_grid import SUBCARRIERS_PER_PRB

__all__ = ["SubbandLayout", "eesm_beta", "eesm_sinr", "eesm_sinr_at"]


@dataclass(frozen=True)
class SubbandLayout:
    """``n_rb`` PRBs in subbands of ``prbs_per_subband`` c (module docstring)."""

    n_rb: int
    prbs_per_subband: int

    @classmethod
    def from_coherence(
        cls, n_rb: int, coherence_bandwidth_hz: float | None, subcarrier_spacing_hz: float
    ) -> SubbandLayout:
        """The layout of a coherence bandwidth B_c [Hz] (None: flat, one subband)."""
        if coherence_bandwidth_hz is None:
            return cls(n_rb, n_rb)
        prb_hz = SUBCARRIERS_PER_PRB * subcarrier_spacing_hz
        return cls(n_rb, max(1, min(n_rb, round(coherence_bandwidth_hz / prb_hz))))

    @property
    def n_subbands(self) -> int:
        """S = ceil(N_RB / c)."""
        return math.ceil(self.n_rb / self.prbs_per_subband)

    @property
    def subband_of_prb(self) -> np.ndarray:
        """(N_RB,) the subband of each PRB."""
        return np.arange(self.n_rb) // self.prbs_per_subband

    def weights(self, prb_mask: np.ndarray) -> np.ndarray:
        """(m, S) the fraction of each row's PRBs in each subband from a (m, N_RB) bool mask
        (a row without PRBs: zeros)."""
        mask = np.asarray(prb_mask, dtype=float)
        counts = np.zeros((mask.shape[0], self.n_subbands))
        np.add.at(counts.T, self.subband_of_prb, mask.T)
        total = counts.sum(axis=1, keepdims=True)
        return np.divide(counts, total, out=np.zeros_like(counts), where=total > 0)

    def contiguous_masks(self, prbs: np.ndarray) -> np.ndarray:
        """(m, N_RB) bool: m allocations of (m,) PRB counts side by side from PRB 0, in
        order (how the ``shares`` policy places them; Σ prbs <= N_RB)."""
        prbs = np.asarray(prbs, dtype=int)
        if prbs.sum() > self.n_rb or np.any(prbs < 0):
            raise ValueError(f"PRB counts {prbs.tolist()}: >= 0 each, at most {self.n_rb} in all")
        end = np.cumsum(prbs)
        start = end - prbs
        index = np.arange(self.n_rb)
        return (index >= start[:, None]) & (index < end[:, None])


def eesm_beta(beta: np.ndarray | None, n_mcs: int) -> np.ndarray:
    """(n_mcs,) the EESM betas, 1 where the table has none (an MCS without a BLER table,
    never used)."""
    if beta is None:
        raise ValueError("the BLER tables carry no EESM betas (read them by pusch_bler_tables)")
    b = np.ones(n_mcs)
    given = np.asarray(beta, dtype=float)[:n_mcs]
    b[: given.size] = np.where(given > 0, given, 1.0)
    return b


def _eesm(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(...) the effective SINR of (..., S) SINRs and weights at betas ``b`` (..., 1)
    (broadcast), shifted by the smallest used SINR (module docstring); no weight: 0."""
    used = w > 0
    low = np.min(np.where(used, x, np.inf), axis=-1, keepdims=True)
    low = np.where(np.isfinite(low), low, 0.0)
    spread = np.where(used, x - low, 0.0) / b
    with np.errstate(divide="ignore"):
        eff = low[..., 0] - b[..., 0] * np.log(np.sum(w * np.exp(-spread), axis=-1))
    return np.where(used.any(axis=-1), eff, 0.0)


def eesm_sinr(sinr: np.ndarray, weights: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """(..., M) effective linear SINR per MCS of (..., S) linear per-subband SINRs with
    (..., S) weights (Σ = 1; module docstring) at (M,) betas. A row of zero weights: 0."""
    x = np.asarray(sinr, dtype=float)
    w = np.broadcast_to(np.asarray(weights, dtype=float), x.shape)
    return _eesm(x[..., None, :], w[..., None, :], np.asarray(beta, dtype=float)[:, None])


def eesm_sinr_at(sinr: np.ndarray, weights: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """(m,) effective linear SINR of (m, S) per-subband SINRs with (m, S) weights, each row at
    its own beta (m,) (the MCS it is sent at)."""
    x, w = np.asarray(sinr, dtype=float), np.asarray(weights, dtype=float)
    return _eesm(x, w, np.asarray(beta, dtype=float)[:, None])
