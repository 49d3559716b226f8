"""5G NR uplink resource grid: PRBs of a carrier, slots of a numerology, the PUSCH resource
elements of a PRB, and bandwidth shares turned into whole PRBs. Pure arithmetic, no Sionna.

- Numerology μ: subcarrier spacing 15·2^μ kHz, slot 1 ms / 2^μ of 14 OFDM symbols (normal
  cyclic prefix; TS 38.211 §4.2-4.3).
- PRBs: N_RB of the maximum transmission bandwidth configuration, TS 38.101-1 Table 5.3.2-1
  (FR1: μ = 0, 1, 2 and channel bandwidths 5-100 MHz; "N/A" entries are refused).
- Resource elements for the transport block: N'_RE = 12 N_symb - N_DMRS - N_oh per PRB, capped
  at 156 (TS 38.214 §5.1.3.2, step 1): the same N_RE the transport block size and a PHY
  abstraction must use (12·14 = 168 per PRB is not what PUSCH carries).
- Shares to PRBs (:func:`prbs_from_shares`): the controller's shares b_k of the band become
  whole PRBs by largest remainder (Hamilton) rounding of b_k N_RB, which keeps Σ_k n_k <= N_RB
  (with equality when Σ b_k = 1); a scheduled client whose share rounds to 0 gets a PRB left
  free by the rounding, or else one taken from the largest allocation, so that every scheduled
  client transmits while K <= N_RB.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "NR_FR1_PRBS",
    "prbs_from_shares",
    "pusch_re_per_prb",
    "pusch_resource_elements",
    "resource_blocks",
    "slot_s",
    "subcarrier_spacing_hz",
]

#: TS 38.101-1 Table 5.3.2-1, N_RB per (subcarrier spacing [kHz], channel bandwidth [MHz]) (FR1)
NR_FR1_PRBS: dict[int, dict[int, int]] = {
    15: {5: 25, 10: 52, 15: 79, 20: 106, 25: 133, 30: 160, 35: 188, 40: 216, 45: 242, 50: 270},
    30: {
        5: 11, 10: 24, 15: 38, 20: 51, 25: 65, 30: 78, 35: 92, 40: 106, 45: 119, 50: 133,
        60: 162, 70: 189, 80: 217, 90: 245, 100: 273,
    },
    60: {
        10: 11, 15: 18, 20: 24, 25: 31, 30: 38, 35: 44, 40: 51, 45: 58, 50: 65, 60: 79,
        70: 93, 80: 107, 90: 121, 100: 135,
    },
}  # fmt: skip

#: OFDM symbols of a slot with the normal cyclic prefix (TS 38.211 §4.3.2)
SYMBOLS_PER_SLOT = 14
#: subcarriers of a PRB
SUBCARRIERS_PER_PRB = 12
#: the cap on PUSCH resource elements per PRB of TS 38.214 §5.1.3.2, step 1
MAX_RE_PER_PRB = 156


def subcarrier_spacing_hz(numerology: int) -> float:
    """Δf = 15·2^μ kHz [Hz] of numerology μ in 0..2 (FR1)."""
    _check_numerology(numerology)
    return 15.0e3 * 2**numerology


def slot_s(numerology: int) -> float:
    """A slot's duration, 1 ms / 2^μ [s]."""
    _check_numerology(numerology)
    return 1.0e-3 / 2**numerology


def resource_blocks(bandwidth_hz: float, numerology: int) -> int:
    """N_RB of an FR1 carrier of ``bandwidth_hz`` (one of TS 38.101-1's channel bandwidths) at
    numerology μ (Table 5.3.2-1). ValueError names the bandwidths the spacing has."""
    scs_khz = round(subcarrier_spacing_hz(numerology) / 1e3)
    table = NR_FR1_PRBS[scs_khz]
    mhz = bandwidth_hz / 1e6
    if not float(mhz).is_integer() or int(mhz) not in table:
        listed = ", ".join(str(b) for b in table)
        raise ValueError(
            f"{mhz:g} MHz is no FR1 channel bandwidth at {scs_khz} kHz spacing (TS 38.101-1 "
            f"Table 5.3.2-1: {listed} MHz)"
        )
    return table[int(mhz)]


def pusch_re_per_prb(
    n_symbols: int = SYMBOLS_PER_SLOT, dmrs_re_per_prb: int = 12, overhead_re_per_prb: int = 0
) -> int:
    """N'_RE capped: min(156, 12 N_symb - N_DMRS - N_oh), the PUSCH resource elements one PRB
    carries in a slot of ``n_symbols`` PUSCH symbols (TS 38.214 §5.1.3.2 step 1; <= 0: none)."""
    per_prb = SUBCARRIERS_PER_PRB * n_symbols - dmrs_re_per_prb - overhead_re_per_prb
    return min(MAX_RE_PER_PRB, per_prb)


def pusch_resource_elements(
    n_prb: int | np.ndarray, dmrs_re_per_prb: int = 12, overhead_re_per_prb: int = 0
) -> int | np.ndarray:
    """N_RE = min(156, 12·14 - N_DMRS - N_oh) n_PRB, the resource elements of a slot's PUSCH on
    ``n_prb`` PRBs (:func:`pusch_re_per_prb`; default: one DMRS symbol, 12 REs per PRB, no
    overhead), what a PHY abstraction must be given with the transport block."""
    per_prb = pusch_re_per_prb(SYMBOLS_PER_SLOT, dmrs_re_per_prb, overhead_re_per_prb)
    if per_prb <= 0:
        raise ValueError(f"DMRS and overhead leave no data REs in a PRB ({per_prb})")
    return per_prb * n_prb


def prbs_from_shares(shares: np.ndarray, n_rb: int) -> np.ndarray:
    """(K,) whole PRBs n_k from the (K,) shares b_k >= 0 (Σ b_k <= 1) of a carrier of ``n_rb``
    PRBs: largest remainder rounding of b_k N_RB (ties to the lower index), Σ_k n_k <= N_RB;
    every client with b_k > 0 gets at least one PRB while they number at most N_RB (a free PRB,
    else one from the first largest allocation). ValueError for more clients with a
    share than PRBs, or shares outside [0, 1] or summing above 1."""
    b = np.asarray(shares, dtype=float)
    if b.ndim != 1 or np.any(~np.isfinite(b)) or np.any(b < 0) or b.sum() > 1.0 + 1e-9:
        raise ValueError("shares: a vector of values >= 0 summing to at most 1")
    wanted = np.flatnonzero(b > 0)
    if wanted.size > n_rb:
        raise ValueError(
            f"{wanted.size} clients with a share and {n_rb} PRBs: one PRB each is not enough"
        )
    exact = b * n_rb
    prbs = np.floor(exact + 1e-9).astype(int)
    total = min(n_rb, int(math.floor(exact.sum() + 1e-9)))
    left = total - int(prbs.sum())
    if left > 0:
        remainder = exact - prbs
        order = np.lexsort((np.arange(b.size), -remainder))  # largest remainder, lower index
        prbs[order[:left]] += 1
    for k in wanted:
        if prbs[k] == 0:
            if prbs.sum() >= n_rb:  # all PRBs taken: another client holds two or more
                prbs[int(np.argmax(prbs))] -= 1  # the first largest allocation
            prbs[k] = 1
    return prbs


def _check_numerology(numerology: int) -> None:
    if isinstance(numerology, bool) or numerology not in (0, 1, 2):
        raise ValueError(f"numerology: 0, 1 or 2 (FR1: 15, 30 or 60 kHz), got {numerology!r}")
