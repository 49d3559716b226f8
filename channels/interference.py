"""Inter-cell interference on FDMA uplinks: frequency reuse, the band each upload occupies and
its SINR with the other cells' simultaneous uploads. Numpy only.

**Bands.** The band is [0, 1) in units of B. With reuse factor 1 every cell uses all of it;
with reuse 3 cell c uses the third (colour(c) / 3, (colour(c) + 1) / 3), colour(c) = (i - j)
mod 3 of its site's lattice coordinates (:func:`channels.hexgrid.hex_lattice`), so that no two
neighbouring cells of the grid share a colour (across a wrap-around boundary they may: 7 and 19
are not multiples of 3). Inside its cell's sub-band, client k's share b_k (of the cell's
sub-band) is the interval after the shares of the clients listed before it
(:func:`band_intervals`).

**SINR.** Client k transmits P_k; under ``channel.noise_bandwidth: band`` its power spectral
density is P_k / B_cell (B_cell the cell's sub-band: the SNR does not depend on the share, as
the single-cell model), under ``share`` it is P_k / (b_k B_cell). At its serving site the
signal density is G_kk times that; every other cell's client j adds G_jk times its density on
the part of k's interval that j's interval covers. The SINR is the signal density over the
noise density N0 plus the interference density averaged over k's interval:

    SINR_k = S_k / (N0 + Σ_j D_j G_jk |I_j ∩ I_k| / |I_k|),

and with no interferer it is the single-cell SNR. Clients of the same cell never overlap.
"""

from __future__ import annotations

import numpy as np

__all__ = ["REUSE_FACTORS", "band_intervals", "cell_subbands", "reuse_colours", "uplink_sinr"]

#: the frequency reuse factors accepted
REUSE_FACTORS = (1, 3)


def reuse_colours(lattice_ij: np.ndarray, reuse: int) -> np.ndarray:
    """(C,) each site's colour: 0 for reuse 1, (i - j) mod 3 for reuse 3 (``lattice_ij``
    (C, 2) lattice coordinates)."""
    if reuse not in REUSE_FACTORS:
        raise ValueError(f"reuse: one of {REUSE_FACTORS}, got {reuse!r}")
    ij = np.rint(np.asarray(lattice_ij, dtype=float)).astype(np.int64)
    return np.zeros(len(ij), np.int64) if reuse == 1 else np.mod(ij[:, 0] - ij[:, 1], 3)


def cell_subbands(colours: np.ndarray, reuse: int) -> np.ndarray:
    """(C, 2) each cell's sub-band [start, end) in units of B."""
    colours = np.asarray(colours, dtype=float)
    return np.stack([colours / reuse, (colours + 1.0) / reuse], axis=-1)


def band_intervals(
    cell_of_client: np.ndarray, shares: np.ndarray, subbands: np.ndarray
) -> np.ndarray:
    """(N, 2) each client's interval [start, end) in units of B: client k's share b_k of its
    cell's sub-band, after the shares of that cell's clients listed before it (the shares of a
    cell sum to at most 1)."""
    cells = np.asarray(cell_of_client, dtype=np.intp)
    shares = np.asarray(shares, dtype=float)
    out = np.empty((len(cells), 2))
    for c in np.unique(cells):
        members = np.flatnonzero(cells == c)
        low, high = subbands[c]
        edges = np.concatenate([[0.0], np.cumsum(shares[members])])
        if edges[-1] > 1.0 + 1e-9:
            raise ValueError(f"the shares of cell {c} sum to {edges[-1]:g} > 1")
        out[members, 0] = low + (high - low) * edges[:-1]
        out[members, 1] = low + (high - low) * edges[1:]
    return out


def uplink_sinr(
    tx_power_w: np.ndarray,
    gain: np.ndarray,
    cell_of_client: np.ndarray,
    intervals: np.ndarray,
    *,
    bandwidth_hz: float,
    reuse: int,
    noise_psd_w_per_hz: float,
    noise_bandwidth: str = "band",
) -> tuple[np.ndarray, np.ndarray]:
    """(SINR (N,), interference power (N,) [W] over each client's interval) of N simultaneous
    uploads (module docstring): ``tx_power_w`` (N,), ``gain`` (N, C) the power gain of each
    client at each site (path loss, shadowing and fading), ``cell_of_client`` (N,) serving
    sites, ``intervals`` (N, 2) from :func:`band_intervals`, the band B [Hz], its reuse
    factor and the noise density N0 [W/Hz]."""
    power = np.asarray(tx_power_w, dtype=float)
    gain = np.asarray(gain, dtype=float)
    cells = np.asarray(cell_of_client, dtype=np.intp)
    start, end = np.asarray(intervals, dtype=float).T
    width = end - start
    cell_band_hz = bandwidth_hz / reuse
    if noise_bandwidth == "band":
        density = power / cell_band_hz
    elif noise_bandwidth == "share":
        density = power / (np.where(width > 0, width * reuse, np.inf) * cell_band_hz)
    else:
        raise ValueError(f"noise_bandwidth: band or share, got {noise_bandwidth!r}")
    n = len(power)
    signal = density * gain[np.arange(n), cells]
    overlap = np.clip(
        np.minimum(end[:, None], end[None, :]) - np.maximum(start[:, None], start[None, :]),
        0.0,
        None,
    )
    other_cell = cells[:, None] != cells[None, :]  # [k, j]
    covered = np.where(
        other_cell & (width[:, None] > 0), overlap / np.where(width > 0, width, 1.0)[:, None], 0.0
    )
    at_serving = gain[:, cells].T  # [k, j] = G_j at k's site
    interference_density = (covered * at_serving * density[None, :]).sum(axis=1)
    sinr = signal / (noise_psd_w_per_hz + interference_density)
    return sinr, interference_density * width * bandwidth_hz
